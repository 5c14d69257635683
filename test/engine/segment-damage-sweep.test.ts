/**
 * @module Every byte of a segment damaged, one at a time, and the segment
 * cut at every length (with the manifest's size left alone, and with it
 * rewritten to match): opening it as a paged writer (tails), a writer
 * without paging, a reader and over a store without ranged reads ends in
 * `StoreCorruptedError`, `UnsupportedFormatError` (the footer's version
 * bytes) or the model's state, never in another error or other values.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, StoreCorruptedError, UnsupportedFormatError, WriteBatch, type EngineOptions, type ObjectStore } from "taquba";
import { decodeManifest, encodeManifest } from "../../runtime/engine/manifest.js";
import { HEAVY_TEST_MS } from "../support/load.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (v: Uint8Array) => new TextDecoder().decode(v);
const paged: EngineOptions = {
  pageValues: { keyPrefixes: ["j/"], minBytes: 64, cacheBytes: 4096 },
  checkpointWalObjects: 0,
  segmentBlockBytes: 256,
};
/** Values paged (70 bytes), inline in the key section and key tails. */
const model = new Map<string, string>();
for (let i = 0; i < 40; i++) model.set(`j/${String(i).padStart(3, "0")}`, `${i}`.repeat(i % 4 === 0 ? 70 : 1 + (i % 5)));

const noRanges = (s: ObjectStore): ObjectStore => ({
  get: (k) => s.get(k),
  put: (k, b, o) => s.put(k, b, o),
  delete: (k) => s.delete(k),
  list: (p, o) => s.list(p, o),
});

async function warmGet(e: Engine, k: string): Promise<Uint8Array | undefined> {
  for (let p = e.warm([k]); p !== undefined; p = e.warm([k])) await p;
  return e.get(k);
}

/** "ok" when every key reads as the model has it, "corrupt" for a typed refusal, else what went wrong. */
async function outcome(store: ObjectStore, mode: string): Promise<string> {
  try {
    let get: (k: string) => Promise<Uint8Array | undefined>;
    let close: () => Promise<void>;
    if (mode === "reader") {
      const r = await EngineReader.open(store);
      get = async (k) => r.get(k);
      close = () => r.close();
    } else {
      const e = await Engine.open(
        mode === "no ranged reads" ? noRanges(store) : store,
        mode === "without paging" ? { ...paged, pageValues: undefined } : paged,
      );
      get = (k) => warmGet(e, k);
      close = () => e.close();
    }
    try {
      for (const [k, v] of model) {
        const got = await get(k);
        if (got === undefined || dec(got) !== v) return `wrong value of ${k}`;
      }
      return "ok";
    } finally {
      await close().catch(() => undefined);
    }
  } catch (err) {
    if (err instanceof StoreCorruptedError || err instanceof UnsupportedFormatError) return "corrupt";
    return `${(err as Error).constructor.name}: ${(err as Error).message}`;
  }
}

describe("a segment damaged at every byte", () => {
  it("each flip and cut ends in a typed refusal or the model's state", { timeout: HEAVY_TEST_MS }, async () => {
    const base = new MemoryStore();
    const e = await Engine.open(base, paged);
    const b = new WriteBatch();
    for (const [k, v] of model) b.put(k, enc(v));
    await e.commit(b);
    await e.checkpoint();
    await e.close();
    const objects = new Map<string, Uint8Array>();
    for await (const o of base.list("")) objects.set(o.key, (await base.get(o.key))!.body);
    const segKey = [...objects.keys()].find((k) => k.startsWith("seg/"))!;
    const manifestKey = [...objects.keys()]
      .filter((k) => k.startsWith("manifest/"))
      .sort()
      .at(-1)!;
    const segment = objects.get(segKey)!;
    const bad: string[] = [];
    const refused = new Map<string, number>();
    for (let i = 0; i < segment.byteLength; i++) {
      for (const damage of ["flip", "cut", "cut, manifest rewritten"] as const) {
        if (damage !== "flip" && i === 0) continue;
        for (const mode of ["paged", "without paging", "reader", "no ranged reads"]) {
          const store = new MemoryStore();
          for (const [k, v] of objects) await store.put(k, v);
          if (damage === "flip") {
            const c = new Uint8Array(segment);
            c[i]! ^= 0x5a;
            await store.put(segKey, c);
          } else {
            await store.put(segKey, segment.subarray(0, i));
            if (damage === "cut, manifest rewritten") {
              const m = decodeManifest(manifestKey, objects.get(manifestKey)!, Number(manifestKey.split("/")[1]));
              (m.segments[0] as { bytes: number }).bytes = i;
              await store.put(manifestKey, encodeManifest(m));
            }
          }
          const o = await outcome(store, mode);
          if (o === "corrupt") refused.set(damage, (refused.get(damage) ?? 0) + 1);
          else if (o !== "ok") bad.push(`${damage} at ${i}, ${mode}: ${o}`);
        }
      }
    }
    expect(bad).toEqual([]);
    // Every cut is refused by every way of opening; most flips are (a flip in a block only a paged read would read is not).
    expect(refused.get("cut")).toBe((segment.byteLength - 1) * 4);
    expect(refused.get("cut, manifest rewritten")).toBe((segment.byteLength - 1) * 4);
    expect(refused.get("flip")!).toBeGreaterThan(segment.byteLength * 2);
  });
});
