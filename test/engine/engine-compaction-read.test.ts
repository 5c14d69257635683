/**
 * @module A compaction reading paged values back: it reads each segment by
 * windows of blocks with ranged reads (never whole), verifies every block it
 * reads, writes the same segments as a compaction of the values held in
 * memory, and a damaged block or a segment gone part way through ends it
 * with `StoreCorruptedError` naming the segment, publishing nothing.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, StoreCorruptedError, WriteBatch, type EngineOptions } from "taquba";
import { segmentDigests } from "../support/segment-digests.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (v: Uint8Array | undefined) => (v === undefined ? undefined : new TextDecoder().decode(v));
/** About 1 KiB per value: 2,500 of them make a segment of several read windows. */
const value = (key: string) => `${key}:${"v".repeat(1000)}`;
const keysOf = (n: number) => Array.from({ length: n }, (_, i) => `j/${String(i).padStart(5, "0")}`);

/** A memory store that records its reads of segments, and can delete a segment after one ranged read of it. */
class ReadLog extends MemoryStore {
  readonly ranged: { key: string; length: number }[] = [];
  readonly whole: string[] = [];
  /** When set, the segment a ranged read touches is deleted once that many ranged reads were made. */
  vanishAfter: number | undefined;

  override async get(key: string) {
    if (key.includes("seg/")) this.whole.push(key);
    return super.get(key);
  }

  override async getBorrowed(key: string) {
    if (key.includes("seg/")) this.whole.push(key);
    return super.getBorrowed(key);
  }

  override async getRange(key: string, offset: number, length: number) {
    const got = await super.getRange(key, offset, length);
    if (key.includes("seg/")) {
      this.ranged.push({ key, length });
      if (this.ranged.length === this.vanishAfter) await this.delete(key);
    }
    return got;
  }

  // The compaction reads into windows it reuses: recorded like a ranged read.
  override async getRangeInto(key: string, offset: number, into: Uint8Array) {
    const got = await super.getRangeInto(key, offset, into);
    if (key.includes("seg/")) {
      this.ranged.push({ key, length: into.byteLength });
      if (this.ranged.length === this.vanishAfter) await this.delete(key);
    }
    return got;
  }

  async segments(): Promise<string[]> {
    const out: string[] = [];
    for await (const o of this.list("seg/")) out.push(o.key);
    return out;
  }
}

/** Every checkpoint a compaction (one run at most), small blocks, values under j/ paged. */
const options = (paged: boolean): EngineOptions => ({
  ...(paged ? { pageValues: { keyPrefixes: ["j/"], minBytes: 64, cacheBytes: 0 } } : {}),
  checkpointWalObjects: 0,
  maxSegmentRuns: 1,
  segmentBlockBytes: 4096,
});

/** An engine holding `keys` paged out to one run, and one more change for the next checkpoint (a compaction). */
async function pagedOut(store: MemoryStore, keys: string[], paged = true): Promise<Engine> {
  const engine = await Engine.open(store, options(paged));
  const b = new WriteBatch();
  for (const k of keys) b.put(k, enc(value(k)));
  await engine.commit(b);
  await engine.checkpoint();
  await engine.commit(new WriteBatch().put("x/late", enc("late")));
  return engine;
}

describe("a compaction reading paged values back", () => {
  it("reads each segment by ranged reads of at most about 1 MiB, never whole, and writes the same segments as a compaction of values held in memory", async () => {
    const keys = keysOf(2500);
    const store = new ReadLog();
    const engine = await pagedOut(store, keys);
    const [old] = await store.segments();
    await engine.checkpoint();
    expect(engine.stats.compactions).toBe(2);
    expect(store.whole).toEqual([]);
    const reads = store.ranged.filter((r) => r.key === old);
    expect(reads.length).toBeGreaterThanOrEqual(3);
    for (const r of reads) expect(r.length).toBeLessThanOrEqual(1024 * 1024);
    // The same commits and checkpoints with every value in memory write the same bytes.
    const plain = new MemoryStore();
    const inMemory = await pagedOut(plain, keys, false);
    await inMemory.checkpoint();
    expect(await segmentDigests(store)).toEqual(await segmentDigests(plain));
    await inMemory.close();
    await engine.warm(["j/01234"]);
    expect(dec(engine.get("j/01234"))).toBe(value("j/01234"));
    await engine.close();
  });

  it("a block that fails its checksum ends the compaction with StoreCorruptedError naming the segment; nothing is published", async () => {
    const store = new ReadLog();
    const engine = await pagedOut(store, keysOf(300));
    const [seg] = await store.segments();
    const body = (await store.get(seg!))!.body.slice();
    // One byte of a value in the middle of the segment: its block's checksum no longer matches.
    const at = body.indexOf("v".charCodeAt(0), Math.floor(body.length / 2));
    body[at] = "w".charCodeAt(0);
    await store.put(seg!, body);
    const checkpoints = engine.stats.checkpoints;
    const err = await engine.checkpoint().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreCorruptedError);
    expect((err as Error).message).toContain(seg!);
    expect((err as Error).message).toContain("checksum mismatch");
    expect(engine.stats.checkpoints).toBe(checkpoints);
    expect(await store.segments()).toContain(seg!);
    await engine.close();
  });

  it("a segment gone part way through ends the compaction with StoreCorruptedError naming it; nothing is published", async () => {
    const store = new ReadLog();
    const engine = await pagedOut(store, keysOf(2500));
    const [seg] = await store.segments();
    store.vanishAfter = store.ranged.length + 1;
    const checkpoints = engine.stats.checkpoints;
    const err = await engine.checkpoint().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreCorruptedError);
    expect((err as Error).message).toContain(seg!);
    expect((err as Error).message).toContain("missing");
    // The first window was read and used; the second found the segment gone.
    expect(store.ranged.filter((r) => r.key === seg).length).toBe(2);
    expect(engine.stats.checkpoints).toBe(checkpoints);
    await engine.close();
  });
});
