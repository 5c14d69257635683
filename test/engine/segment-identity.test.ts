/**
 * @module A store that answers another segment's bytes for a segment of the
 * same size: every checksum of those bytes holds, so only the manifest's
 * record of the segment (entries, first and last key, and the segment's
 * checksum) can tell. The load refuses with StoreCorruptedError naming the
 * segment asked for, whether it reads segments whole (a reader) or by their
 * tails (a writer that pages values, one run or several), and nothing is
 * written; a block read later is checked against the checksum its index
 * gives. A store written before the checksum was recorded opens as before.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, StoreCorruptedError, WriteBatch, type ObjectStore } from "taquba";
import { keysUnder } from "../support/store-keys.js";
import { rewriteInEarlierFormats } from "../support/earlier-formats.js";
import { parseNumberedKey } from "../../runtime/engine/layout.js";
import { decodeManifest } from "../../runtime/engine/manifest.js";

const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;
const PAGED = { ...MANUAL, pageValues: { keyPrefixes: ["k/"], minBytes: 16 } } as const;
const value = (i: number) => new TextEncoder().encode(`value ${String(i).padStart(6, "0")} ${"x".repeat(40)}`);

/** Two checkpoints of 200 keys each, the same shape (keys of one length, values of one length): two segments of one size. */
async function twoLikeSegments(store: MemoryStore): Promise<[string, string]> {
  const writer = await Engine.open(store, MANUAL);
  for (const from of [1000, 2000]) {
    const batch = new WriteBatch();
    for (let i = from; i < from + 200; i++) batch.put(`k/${i}`, value(i));
    await writer.commit(batch);
    await writer.checkpoint();
  }
  await writer.close();
  const segs = await keysUnder(store, "seg/");
  expect(segs).toHaveLength(2);
  const sizes = await Promise.all(segs.map(async (k) => (await store.get(k))!.body.byteLength));
  expect(sizes[0]).toBe(sizes[1]);
  return [segs[0]!, segs[1]!];
}

/** Whether `key` is one of an engine's durable objects (a writer's open also puts and deletes a probe of the store). */
const durable = (key: string) => /(^|\/)(manifest|wal|seg)\//.test(key);

/** `inner`, answering every read of `asked` with the bytes of `answered`; counts writes of durable objects. */
function swapping(inner: MemoryStore, asked: string, answered: string) {
  const to = (k: string) => (k === asked ? answered : k);
  const s = {
    writes: 0,
    store: {
      get: (k: string) => inner.get(to(k)),
      getRange: (k: string, o: number, l: number) => inner.getRange(to(k), o, l),
      put: (...args: Parameters<ObjectStore["put"]>) => {
        if (durable(args[0])) s.writes++;
        return inner.put(...args);
      },
      delete: (k: string) => {
        if (durable(k)) s.writes++;
        return inner.delete(k);
      },
      list: (...args: Parameters<ObjectStore["list"]>) => inner.list(...args),
    } satisfies ObjectStore,
  };
  return s;
}

async function refusal(p: Promise<unknown>): Promise<StoreCorruptedError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StoreCorruptedError);
  return err as StoreCorruptedError;
}

describe("a segment read against its manifest record", () => {
  it("a reader reading segments whole refuses another segment's bytes", async () => {
    const inner = new MemoryStore();
    const [older, newer] = await twoLikeSegments(inner);
    for (const [asked, answered] of [
      [older, newer],
      [newer, older],
    ] as const) {
      const s = swapping(inner, asked, answered);
      const err = await refusal(EngineReader.open(s.store));
      expect(err.objectKey).toBe(asked);
      expect(err.message).toMatch(/segment (starts|ends) at key "k\/\d+", the manifest says "k\/\d+": the store answered bytes of another segment/);
      expect(s.writes).toBe(0);
    }
    // The store itself is sound.
    const reader = await EngineReader.open(inner);
    expect(reader.get("k/1000")).toEqual(value(1000));
    expect(reader.get("k/2199")).toEqual(value(2199));
    await reader.close();
  });

  it("a writer reading segment tails refuses it, over one run and over several", async () => {
    const inner = new MemoryStore();
    const [older, newer] = await twoLikeSegments(inner);
    // Two runs: the open merges their key sections.
    const s = swapping(inner, newer, older);
    const err = await refusal(Engine.open(s.store, PAGED));
    expect(err.objectKey).toBe(newer);
    expect(err.message).toMatch(/the store answered bytes of another segment/);
    expect(s.writes).toBe(0);
    // One run each: two engines under two prefixes of one store, one checkpoint each; one's segment answered for the other's.
    const shared = new MemoryStore();
    for (const [prefix, from] of [
      ["a/", 1000],
      ["b/", 2000],
    ] as const) {
      const writer = await Engine.open(shared, { ...MANUAL, prefix });
      const batch = new WriteBatch();
      for (let i = from; i < from + 200; i++) batch.put(`k/${i}`, value(i));
      await writer.commit(batch);
      await writer.checkpoint();
      await writer.close();
    }
    const [segA] = await keysUnder(shared, "a/seg/");
    const [segB] = await keysUnder(shared, "b/seg/");
    const one = swapping(shared, segA!, segB!);
    const oneErr = await refusal(Engine.open(one.store, { ...PAGED, prefix: "a/" }));
    expect(oneErr.objectKey).toBe(segA);
    expect(oneErr.message).toMatch(/segment starts at key "k\/2000", the manifest says "k\/1000"/);
    expect(one.writes).toBe(0);
    const paged = await Engine.open(shared, { ...PAGED, prefix: "a/" });
    for (let p = paged.warm(["k/1199"]); p; p = paged.warm(["k/1199"])) await p;
    expect(paged.get("k/1199")).toEqual(value(1199));
    await paged.close();
  });

  /** Two engines under prefixes a/ and b/ of one store, one checkpoint each of the same keys, values of `bytes` bytes that differ: twin segments. */
  async function twins(bytes: number): Promise<{ shared: MemoryStore; segA: string; segB: string; valueFor: (side: string, i: number) => Uint8Array }> {
    const valueFor = (side: string, i: number) => new TextEncoder().encode(`${side} ${String(i).padStart(6, "0")} `.padEnd(bytes, side));
    const shared = new MemoryStore();
    for (const side of ["a", "b"]) {
      const writer = await Engine.open(shared, { ...MANUAL, prefix: `${side}/` });
      const batch = new WriteBatch();
      for (let i = 1000; i < 1200; i++) batch.put(`k/${i}`, valueFor(side, i));
      await writer.commit(batch);
      await writer.checkpoint();
      await writer.close();
    }
    const [segA] = await keysUnder(shared, "a/seg/");
    const [segB] = await keysUnder(shared, "b/seg/");
    expect((await shared.get(segA!))!.body.byteLength).toBe((await shared.get(segB!))!.body.byteLength);
    return { shared, segA: segA!, segB: segB!, valueFor };
  }

  // Values of 24 B lie in the key section too (its checksum covered them before); values of 200 B lie in their blocks only.
  for (const bytes of [24, 200]) {
    it(`refuses a twin segment (same size, entries and key range, other values of ${bytes} B) read whole or by its tail`, async () => {
      const { shared, segA, segB, valueFor } = await twins(bytes);
      for (const open of [
        (store: ObjectStore) => EngineReader.open(store, { prefix: "a/" }),
        (store: ObjectStore) => Engine.open(store, { ...MANUAL, prefix: "a/" }),
        (store: ObjectStore) => Engine.open(store, { ...PAGED, prefix: "a/" }),
      ]) {
        const s = swapping(shared, segA, segB);
        const err = await refusal(open(s.store));
        expect(err.objectKey).toBe(segA);
        expect(err.message).toMatch(/segment's checksum is [0-9a-f]{8}, the manifest records [0-9a-f]{8}: the store answered bytes of another segment/);
        expect(s.writes).toBe(0);
      }
      // The store itself is sound.
      const reader = await EngineReader.open(shared, { prefix: "a/" });
      expect(reader.get("k/1100")).toEqual(valueFor("a", 1100));
      await reader.close();
    });
  }

  it("a block read after the open is checked against the checksum its index gives", async () => {
    const { shared, segA, segB, valueFor } = await twins(200);
    let swapped = false;
    const inner = swapping(shared, segA, segB).store;
    const store: ObjectStore = {
      get: (k) => (swapped ? inner : shared).get(k),
      getRange: (k, o, l) => (swapped ? inner : shared).getRange(k, o, l),
      put: (...args) => shared.put(...args),
      delete: (k) => shared.delete(k),
      list: (...args) => shared.list(...args),
    };
    const engine = await Engine.open(store, { ...PAGED, prefix: "a/" });
    swapped = true;
    const warmed = async (key: string) => {
      for (let p = engine.warm([key]); p; p = engine.warm([key])) await p;
    };
    const err = await refusal(warmed("k/1100"));
    expect(err.objectKey).toBe(segA);
    expect(err.message).toMatch(/segment block \d+ is not the block its index lists/);
    swapped = false;
    await warmed("k/1100");
    expect(engine.get("k/1100")).toEqual(valueFor("a", 1100));
    await engine.close();
  });

  it("a store written before segment checksums were recorded opens and is served, and its next checkpoint records them for new segments only", async () => {
    const store = new MemoryStore();
    const writer = await Engine.open(store, MANUAL);
    const batch = new WriteBatch();
    for (let i = 1000; i < 1200; i++) batch.put(`k/${i}`, value(i));
    await writer.commit(batch);
    await writer.checkpoint();
    await writer.close();
    await rewriteInEarlierFormats(store);
    const reader = await EngineReader.open(store);
    expect(reader.get("k/1199")).toEqual(value(1199));
    await reader.close();
    const paged = await Engine.open(store, PAGED);
    for (let p = paged.warm(["k/1000"]); p; p = paged.warm(["k/1000"])) await p;
    expect(paged.get("k/1000")).toEqual(value(1000));
    await paged.commit(new WriteBatch().put("k/2000", value(2000)));
    await paged.checkpoint();
    await paged.close();
    const newest = (await keysUnder(store, "manifest/")).at(-1)!;
    const m = decodeManifest(newest, (await store.get(newest))!.body, parseNumberedKey("", "manifest", newest)!);
    expect(m.segments.map((seg) => seg.sum === undefined)).toEqual([true, false]);
    const again = await Engine.open(store, PAGED);
    for (let p = again.warm(["k/1000", "k/2000"]); p; p = again.warm(["k/1000", "k/2000"])) await p;
    expect(again.get("k/1000")).toEqual(value(1000));
    expect(again.get("k/2000")).toEqual(value(2000));
    await again.close();
  });
});
