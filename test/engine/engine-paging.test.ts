/**
 * @module Paged values: once checkpointed, values under the policy's prefixes
 * leave the writer's memory and come back only through `warm` and the
 * bounded segment cache; commits, compactions and reopens keep every value.
 */
import { describe, expect, it } from "vitest";
import {
  Engine,
  InjectedFaultError,
  MemoryStore,
  StoreCorruptedError,
  StoreUnavailableError,
  UnsupportedFormatError,
  ValueNotWarmedError,
  WriteBatch,
  withCounting,
  withFaults,
  type EngineOptions,
  type ObjectStore,
} from "taquba";
import { segmentWriting } from "../../runtime/engine/segment-format.js";
import { futureManifest } from "../support/future-format.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (v: Uint8Array | undefined) => (v === undefined ? undefined : new TextDecoder().decode(v));
const big = (key: string) => `${key}:${"v".repeat(100)}`;

async function warmAll(engine: Engine, keys: string[]): Promise<void> {
  for (let p = engine.warm(keys); p !== undefined; p = engine.warm(keys)) await p;
}

const turn = () => new Promise<void>((r) => setImmediate(r));

async function fill(engine: Engine, keys: string[]): Promise<void> {
  const b = new WriteBatch();
  for (const k of keys) b.put(k, enc(big(k)));
  await engine.commit(b);
}

const keysOf = (n: number, prefix = "j/") => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(5, "0")}`);

describe("engine paged values", () => {
  const paged = (cacheBytes: number, extra: EngineOptions = {}): EngineOptions => ({
    pageValues: { keyPrefixes: ["j/"], minBytes: 64, cacheBytes },
    checkpointWalObjects: 0,
    ...extra,
  });

  it("reads of values held packed are arrays of their own: changing one changes no other read and not the stored value", async () => {
    const engine = await Engine.open(new MemoryStore(), paged(1 << 20));
    // Not under the paged prefix, of every packed size past the byte loop's, so reads span several shared chunks.
    const sizes = Array.from({ length: 60 }, (_, i) => 65 + ((i * 97) % 960));
    const value = (i: number) => Uint8Array.from({ length: sizes[i]! }, (_, b) => (i * 31 + b) & 0xff);
    const b = new WriteBatch();
    for (let i = 0; i < sizes.length; i++) b.put(`other/${i}`, value(i));
    await engine.commit(b);
    const read = () => sizes.map((_, i) => engine.get(`other/${i}`)!);
    const reads = read();
    expect(reads).toEqual(sizes.map((_, i) => value(i)));
    for (const r of reads) r.fill(0xee);
    expect(read()).toEqual(sizes.map((_, i) => value(i)));
    // Each read covers exactly its own bytes.
    const again = read();
    again[0]!.fill(1);
    expect(again.slice(1)).toEqual(sizes.slice(1).map((_, i) => value(i + 1)));
    await engine.close();
  });

  it("pages checkpointed values out: a read without warming throws, after warming it reads the value", async () => {
    const engine = await Engine.open(new MemoryStore(), paged(1 << 20));
    const keys = keysOf(10);
    await fill(engine, keys);
    await engine.commit(new WriteBatch().put("j/small", enc("tiny")).put("other/1", enc(big("other/1"))));
    expect(engine.warm(keys)).toBeUndefined(); // not checkpointed yet: in memory
    await engine.checkpoint();
    expect(() => engine.get("j/00003")).toThrow(/without warming it first/);
    // A typed error naming the key, as the caller wrote it, and how to warm it.
    let cold: unknown;
    try {
      engine.get("j/00003");
    } catch (err) {
      cold = err;
    }
    expect(cold).toBeInstanceOf(ValueNotWarmedError);
    expect(cold).toMatchObject({ code: "VALUE_NOT_WARMED", key: "j/00003", retryable: false });
    expect(String((cold as Error).message)).toMatch(/"j\/00003".*engine\.warm\(keys\)/);
    expect(() => [...engine.scan({ prefix: "j/" })]).toThrow(ValueNotWarmedError);
    // Small values and other prefixes stay in memory.
    expect(engine.warm(["j/small", "other/1", "absent"])).toBeUndefined();
    expect(dec(engine.get("j/small"))).toBe("tiny");
    await warmAll(engine, ["j/00003"]);
    expect(dec(engine.get("j/00003"))).toBe(big("j/00003"));
    expect(engine.has("j/00004")).toBe(true);
    expect(engine.stats.cacheMisses).toBe(1);
    expect(engine.stats.cacheHits).toBe(1);
    // The whole segment came in: its neighbours read without another fetch.
    expect(engine.warm(keys)).toBeUndefined();
    expect([...engine.scan({ prefix: "j/0" })].map(([k, v]) => [k, dec(v)])).toEqual(keys.map((k) => [k, big(k)]));
    await engine.close();
  });

  it("serves a value committed after paging from memory, also while its old value loads", async () => {
    const engine = await Engine.open(new MemoryStore(), paged(1 << 20));
    await fill(engine, ["j/a", "j/b"]);
    await engine.checkpoint();
    const warming = engine.warm(["j/a", "j/b"]);
    expect(warming).toBeDefined();
    await engine.commit(new WriteBatch().put("j/a", enc("new")).delete("j/b"));
    await warming;
    expect(dec(engine.get("j/a"))).toBe("new");
    expect(engine.get("j/b")).toBeUndefined();
    await engine.close();
  });

  it("keeps the cache within its budget once a turn has passed", async () => {
    const store = withCounting(new MemoryStore());
    // Small segments: each holds a few dozen values, so the keys span many.
    const engine = await Engine.open(store, paged(8 * 1024, { maxSegmentBytes: 4096, segmentBlockBytes: 1024 }));
    const keys = keysOf(400);
    await fill(engine, keys);
    await engine.checkpoint();
    for (let i = 0; i < keys.length; i += 40) {
      await warmAll(engine, [keys[i]!]);
      expect(dec(engine.get(keys[i]!))).toBe(big(keys[i]!));
      await turn();
      await turn();
      expect(engine.stats.cacheBytes).toBeLessThanOrEqual(8 * 1024 + 4096 + 160 * 64);
    }
    expect(engine.stats.cacheMisses).toBe(10);
    await engine.close();
  });

  it("keeps every value across compactions and reopens, reading old runs back from the store", async () => {
    const store = new MemoryStore();
    const opts = paged(0, { maxSegmentRuns: 2, maxSegmentBytes: 4096 });
    let engine = await Engine.open(store, opts);
    const expected = new Map<string, string>();
    for (let round = 0; round < 6; round++) {
      const b = new WriteBatch();
      for (const k of keysOf(60)) {
        if ((Number(k.slice(2)) + round) % 3 === 0) {
          const v = `${big(k)}-${round}`;
          b.put(k, enc(v));
          expected.set(k, v);
        } else if ((Number(k.slice(2)) + round) % 7 === 0) {
          b.delete(k);
          expected.delete(k);
        }
      }
      await engine.commit(b);
      await engine.checkpoint();
      if (round === 3) {
        await engine.close();
        engine = await Engine.open(store, opts);
      }
    }
    expect(engine.stats.compactions).toBeGreaterThan(0);
    const keys = [...expected.keys()].sort();
    await warmAll(engine, keys);
    expect([...engine.scan()].map(([k, v]) => [k, dec(v)])).toEqual(keys.map((k) => [k, expected.get(k)]));
    expect(engine.stats.segmentFetches).toBeGreaterThan(0);
    await engine.close();
  });

  it("values left paged to runs that compactions dropped read from the newest compaction, also in the next compaction, once the old segments are gone", async () => {
    const store = new MemoryStore();
    const opts = paged(0, { maxSegmentRuns: 2, maxSegmentBytes: 2048 });
    const engine = await Engine.open(store, opts);
    const segments = async () => {
      const names: string[] = [];
      for await (const o of store.list("seg/")) names.push(o.key);
      return names;
    };
    // Paged to the first run and never written again: later compactions drop the run they name.
    const cold = keysOf(120, "j/cold/");
    await fill(engine, cold);
    await engine.checkpoint();
    const firstRun = await segments();
    const expected = new Map(cold.map((k) => [k, big(k)]));
    for (let round = 0; round < 4; round++) {
      // One cold key changes per round (the next compaction's walk over the others skips it); the rest keep naming the first run.
      const b = new WriteBatch();
      for (const k of keysOf(30, `j/hot${round}/`)) {
        b.put(k, enc(big(k)));
        expected.set(k, big(k));
      }
      const changed = cold[round * 7 + 3]!;
      b.put(changed, enc(`${big(changed)}-${round}`));
      expected.set(changed, `${big(changed)}-${round}`);
      await engine.commit(b);
      await engine.checkpoint();
    }
    expect(engine.stats.compactions).toBeGreaterThanOrEqual(2);
    const left = await segments();
    expect(left.filter((name) => firstRun.includes(name))).toEqual([]);
    const keys = [...expected.keys()].sort();
    const fetches = engine.stats.segmentFetches;
    await warmAll(engine, keys);
    expect(engine.stats.segmentFetches).toBeGreaterThan(fetches);
    expect([...engine.scan({ prefix: "j/" })].map(([k, v]) => [k, dec(v)])).toEqual(keys.map((k) => [k, expected.get(k)]));
    expect(await segments()).toEqual(left);
    await engine.close();
    const reopened = await Engine.open(store, opts);
    await warmAll(reopened, keys);
    expect([...reopened.scan({ prefix: "j/" })].map(([k, v]) => [k, dec(v)])).toEqual(keys.map((k) => [k, expected.get(k)]));
    await reopened.close();
  });

  it("a failed segment read rejects the warm-up and changes nothing; the next one succeeds", async () => {
    const faulty = withFaults(new MemoryStore(), { failureRate: 0, seed: 1 });
    const engine = await Engine.open(faulty, paged(1 << 20, { retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } }));
    await fill(engine, ["j/a"]);
    await engine.checkpoint();
    faulty.failureRate = 1;
    const err = await engine.warm(["j/a"])!.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as StoreUnavailableError).cause).toBeInstanceOf(InjectedFaultError);
    faulty.failureRate = 0;
    expect(() => engine.get("j/a")).toThrow(/without warming it first/);
    await warmAll(engine, ["j/a"]);
    expect(dec(engine.get("j/a"))).toBe(big("j/a"));
    await engine.close();
  });

  it("opens a store written without paging (the stored format did not change) and pages its values", async () => {
    const store = new MemoryStore();
    const plain = await Engine.open(store, { checkpointWalObjects: 0 });
    await fill(plain, keysOf(20));
    await plain.checkpoint();
    await fill(plain, ["j/late"]); // left in the WAL
    await plain.close();
    const engine = await Engine.open(store, paged(1 << 20));
    expect(engine.warm(["j/late"])).toBeUndefined(); // replayed from the WAL: in memory
    expect(engine.warm(["j/00007"])).toBeDefined();
    await warmAll(engine, [...keysOf(20), "j/late"]);
    for (const k of [...keysOf(20), "j/late"]) expect(dec(engine.get(k))).toBe(big(k));
    await engine.close();
    // And back: a writer without paging reads what the paged one left.
    const again = await Engine.open(store);
    expect(dec(again.get("j/00019"))).toBe(big("j/00019"));
    await again.close();
  });

  it("refuses a store whose manifest a newer format wrote, saying to upgrade, and writes nothing", async () => {
    const inner = new MemoryStore();
    const plain = await Engine.open(inner);
    await fill(plain, ["j/a"]);
    await plain.checkpoint();
    await plain.close();
    const keys: string[] = [];
    for await (const o of inner.list("manifest/")) keys.push(o.key);
    const newest = keys.sort().at(-1)!;
    await inner.put(newest, futureManifest((await inner.get(newest))!.body, 99));
    const engineKeys = async () => {
      const out: string[] = [];
      for (const dir of ["manifest/", "wal/", "seg/"]) for await (const o of inner.list(dir)) out.push(o.key);
      return out;
    };
    const before = await engineKeys();
    const err = await Engine.open(inner, paged(1 << 20)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsupportedFormatError);
    expect((err as Error).message).toMatch(/format version 99.*upgrade taquba/);
    expect(await engineKeys()).toEqual(before);
  });

  it("holds small values packed, including values that repeat the end of their key, and reads every one back exactly", async () => {
    const store = new MemoryStore();
    // Values that equal the key's ASCII tail, and near misses: one byte off, a non-ASCII tail,
    // longer than the key, empty, every byte value, at and past the packing limit.
    const cases: Array<[string, Uint8Array]> = [
      ["p/q/0000000001/01ABCDEF", enc("01ABCDEF")],
      ["p/q/0000000001/01ABCDEG", enc("01ABCDEF")],
      ["p/q/x", enc("p/q/x")],
      ["p/q/y", enc("zp/q/y")],
      ["p/\u00e9", enc("\u00e9")],
      ["p/\u{1F600}", enc("\u{1F600}")],
      ["p/e", new Uint8Array(0)],
      ["p/bytes", Uint8Array.from({ length: 256 }, (_, i) => 255 - i)],
      ["p/1024", new Uint8Array(1024).fill(0xe9)],
      ["p/1025", new Uint8Array(1025).fill(0x80)],
      ["j/small", enc("7")],
    ];
    const check = (engine: Engine) => {
      for (const [k, v] of cases) expect(engine.get(k), k).toEqual(v);
      const scanned = new Map([...engine.scan({ prefix: "p/" })]);
      for (const [k, v] of cases) if (k.startsWith("p/")) expect(scanned.get(k), k).toEqual(v);
    };
    let engine = await Engine.open(store, paged(1 << 20));
    const b = new WriteBatch();
    for (const [k, v] of cases) b.put(k, v.slice());
    await engine.commit(b);
    check(engine);
    await engine.checkpoint();
    check(engine);
    // A compaction writes the packed values into the new run; a reopen loads them packed again.
    await engine.commit(new WriteBatch().put("j/00001", enc(big("j/00001"))));
    await engine.close();
    engine = await Engine.open(store, paged(1 << 20, { maxSegmentRuns: 1 }));
    check(engine);
    await engine.checkpoint();
    await engine.close();
    engine = await Engine.open(store);
    check(engine);
    await engine.close();
  });

  it("refuses bad paging options before any IO", async () => {
    const store = withCounting(new MemoryStore());
    await expect(Engine.open(store, { pageValues: { keyPrefixes: ["j/"], cacheBytes: Number.NaN } })).rejects.toThrow(/pageValues.cacheBytes/);
    await expect(Engine.open(store, { pageValues: { keyPrefixes: "j/" as unknown as string[] } })).rejects.toThrow(/keyPrefixes/);
    expect(store.counts.puts + store.counts.gets + store.counts.lists).toBe(0);
  });
});

describe("engine paged values read by block", () => {
  // Segments of about 8 KiB in blocks of about 1 KiB: 8 values of 110 B per block.
  const blocky = (cacheBytes: number, readaheadBytes: number, extra: EngineOptions = {}): EngineOptions => ({
    pageValues: { keyPrefixes: ["j/"], minBytes: 64, cacheBytes, readaheadBytes },
    checkpointWalObjects: 0,
    maxSegmentBytes: 8 * 1024,
    segmentBlockBytes: 1024,
    ...extra,
  });

  /** A view of `store` without ranged reads: the engine falls back to whole gets. */
  const withoutRanges = (store: ObjectStore): ObjectStore => ({
    get: (key) => store.get(key),
    put: (key, body, opts) => store.put(key, body, opts),
    delete: (key) => store.delete(key),
    list: (prefix, opts) => store.list(prefix, opts),
  });

  it("a cold read fetches the one block that holds the value, with a ranged read, not the segment", async () => {
    const store = withCounting(new MemoryStore());
    const engine = await Engine.open(store, blocky(1 << 20, 0));
    const keys = keysOf(200);
    await fill(engine, keys);
    await engine.checkpoint();
    store.reset();
    await warmAll(engine, ["j/00100"]);
    expect(dec(engine.get("j/00100"))).toBe(big("j/00100"));
    // The writer knows the index of a segment it wrote: one read, of about one block.
    expect(store.counts.gets).toBe(1);
    expect(store.counts.bytesOut).toBeGreaterThan(500);
    expect(store.counts.bytesOut).toBeLessThan(2048);
    // A key of the same block reads without a fetch; one a few blocks away does not.
    expect(engine.warm(["j/00101"])).toBeUndefined();
    expect(engine.stats.cacheMisses).toBe(1);
    // Counted as the warm-up starts its read (the index is at hand, so it starts in this turn).
    expect(engine.warm(["j/00130"])).toBeDefined();
    expect(engine.stats.cacheMisses).toBe(2);
    await engine.close();
  });

  it("after a reopen reads no segment index (the open read them from the tails) and fetches blocks only", async () => {
    const inner = new MemoryStore();
    let engine = await Engine.open(inner, blocky(1 << 20, 0));
    const keys = keysOf(200);
    await fill(engine, keys);
    await engine.checkpoint();
    await engine.close();
    const store = withCounting(inner);
    engine = await Engine.open(store, blocky(1 << 20, 0));
    store.reset();
    await warmAll(engine, ["j/00003"]);
    expect(store.counts.gets).toBe(1); // the block: the open handed the pager the segment's index
    await warmAll(engine, ["j/00050"]);
    expect(store.counts.gets).toBe(2);
    for (const k of ["j/00003", "j/00050"]) expect(dec(engine.get(k))).toBe(big(k));
    expect(engine.stats.segmentFetches).toBe(2);
    await engine.close();
  });

  it("reads no segment index after a reopen from whole segments, nor after checkpoints and a compaction: every index was handed over", async () => {
    const inner = new MemoryStore();
    // Segments without key sections: the open reads each one whole and takes its index from it.
    segmentWriting.keySection = false;
    let engine: Engine;
    try {
      engine = await Engine.open(inner, blocky(1 << 20, 0));
      await fill(engine, keysOf(200));
      await engine.checkpoint();
      await engine.close();
    } finally {
      segmentWriting.keySection = true;
    }
    const store = withCounting(inner);
    engine = await Engine.open(store, blocky(1 << 20, 0, { maxSegmentRuns: 2 }));
    const coldReads = async (key: string) => {
      store.reset();
      await warmAll(engine, [key]);
      expect(dec(engine.get(key))).toBe(big(key));
      // One ranged read of about one block: no tail read for an index.
      expect(store.counts.gets).toBe(1);
      expect(store.counts.bytesOut).toBeLessThan(2048);
    };
    await coldReads("j/00003");
    // Two more runs, then a compaction into one: values paged to the dropped runs read from it.
    for (const round of [0, 1, 2]) {
      await fill(engine, keysOf(40, `j/r${round}-`));
      await engine.checkpoint();
    }
    expect(engine.stats.compactions).toBeGreaterThan(0);
    await coldReads("j/00150");
    await coldReads("j/r1-00010");
    await engine.close();
  });

  it("reads ahead when misses walk a segment in key order: far fewer reads than blocks, every value right", async () => {
    const counted = async (readaheadBytes: number) => {
      const store = withCounting(new MemoryStore());
      const engine = await Engine.open(store, blocky(1 << 20, readaheadBytes));
      const keys = keysOf(600);
      await fill(engine, keys);
      await engine.checkpoint();
      store.reset();
      for (const k of keys) {
        await warmAll(engine, [k]);
        expect(dec(engine.get(k))).toBe(big(k));
      }
      const gets = store.counts.gets;
      await engine.close();
      return gets;
    };
    const single = await counted(0);
    const ahead = await counted(8 * 1024);
    // 600 values of about 120 B in blocks of about 1 KiB: one read per block without read-ahead.
    expect(single).toBeGreaterThanOrEqual(600 / 9);
    expect(ahead).toBeLessThan(single / 3);
  });

  it("reads blocks through a store without ranged reads (whole gets, sliced)", async () => {
    const inner = new MemoryStore();
    const store = withCounting(withoutRanges(inner));
    let engine = await Engine.open(store, blocky(1 << 20, 4096));
    const keys = keysOf(300);
    await fill(engine, keys);
    await engine.checkpoint();
    await engine.close();
    engine = await Engine.open(store, blocky(1 << 20, 4096));
    await warmAll(engine, keys);
    for (const k of keys) expect(dec(engine.get(k))).toBe(big(k));
    await engine.close();
  });

  it("a damaged block fails the warm-up with StoreCorruptedError naming the segment; other blocks still read", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, blocky(1 << 20, 0));
    await fill(engine, keysOf(200));
    await engine.checkpoint();
    const segs: string[] = [];
    for await (const o of store.list("seg/")) segs.push(o.key);
    const first = segs.sort()[0]!;
    const bytes = Uint8Array.from((await store.get(first))!.body);
    bytes[20] = bytes[20]! ^ 1; // inside the first block
    await store.put(first, bytes);
    const err = await engine.warm(["j/00000"])!.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreCorruptedError);
    expect((err as Error).message).toContain(first);
    expect((err as Error).message).toMatch(/block 0 checksum mismatch/);
    expect(() => engine.get("j/00000")).toThrow(/without warming it first/);
    await warmAll(engine, ["j/00040"]);
    expect(dec(engine.get("j/00040"))).toBe(big("j/00040"));
    await engine.close();
  });

  it("a warm-up that fails part way releases what it loaded: the cache goes back within its budget", async () => {
    const faulty = withFaults(new MemoryStore(), { failureRate: 0, seed: 3 });
    const engine = await Engine.open(faulty, blocky(2048, 0, { retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } }));
    const keys = keysOf(400);
    await fill(engine, keys);
    await engine.checkpoint();
    let failures = 0;
    for (let round = 0; round < 20; round++) {
      faulty.failureRate = 0.3;
      const wanted = keys.filter((_, i) => i % 20 === round);
      const p = engine.warm(wanted);
      if (p !== undefined) await p.catch(() => failures++);
      faulty.failureRate = 0;
      await turn();
      await turn();
      expect(engine.stats.cacheBytes).toBeLessThanOrEqual(2048);
    }
    expect(failures).toBeGreaterThan(0);
    await warmAll(engine, ["j/00399"]);
    expect(dec(engine.get("j/00399"))).toBe(big("j/00399"));
    await engine.close();
  });

  it("an ordered walk sets aside the blocks it read through: the cache keeps about an eighth of its budget, not every block walked", async () => {
    const store = withCounting(new MemoryStore());
    // 256 KiB of cache, of which 32 KiB for blocks read through; the walk covers about 90 KiB of blocks.
    const engine = await Engine.open(store, blocky(256 * 1024, 8 * 1024));
    const keys = keysOf(600);
    // Every third value is too small to page: it stays in memory, yet its key is in the blocks too.
    const value = (k: string, i: number) => (i % 3 === 0 ? `${k}:small` : big(k));
    const b = new WriteBatch();
    for (const [i, k] of keys.entries()) b.put(k, enc(value(k, i)));
    await engine.commit(b);
    await engine.checkpoint();
    store.reset();
    for (const [i, k] of keys.entries()) {
      await warmAll(engine, [k]);
      expect(dec(engine.get(k))).toBe(value(k, i));
    }
    await turn();
    await turn();
    // Left: the spent share and at most the last read-ahead window.
    expect(engine.stats.cacheBytes).toBeLessThanOrEqual(32 * 1024 + 8 * 1024 + 2048);
    // The walk's reads and store reads are those of a cache that kept everything: each block fetched once.
    expect(engine.stats.cacheHits).toBe(400);
    expect(store.counts.gets).toBe(engine.stats.segmentFetches);
    expect(store.counts.gets).toBeLessThan(600 / 9 / 3);
    await engine.close();
  });

  it("a block read through and then read again stays cached for good: a later walk of its keys hits", async () => {
    const store = withCounting(new MemoryStore());
    const engine = await Engine.open(store, blocky(256 * 1024, 8 * 1024));
    const keys = keysOf(800);
    await fill(engine, keys);
    await engine.checkpoint();
    const walk = async (some: string[]) => {
      for (const k of some) {
        await warmAll(engine, [k]);
        expect(dec(engine.get(k))).toBe(big(k));
      }
      await turn();
      await turn();
    };
    const hot = keys.slice(0, 100);
    // Read through, then read again while still set aside: these blocks are ones readers come back to.
    await walk(hot);
    await walk(hot);
    // The rest read through once pushes every spent block out of the spent share (the keys
    // right after the hot ones are left out, so the block they share with them is not read through).
    await walk(keys.slice(120));
    const misses = engine.stats.cacheMisses;
    await walk(hot);
    expect(engine.stats.cacheMisses).toBe(misses);
    // A block read through once only is gone: reading its keys again misses.
    await walk(keys.slice(400, 420));
    expect(engine.stats.cacheMisses).toBeGreaterThan(misses);
    await engine.close();
  });

  it("refuses bad read-ahead options before any IO", async () => {
    const store = withCounting(new MemoryStore());
    await expect(Engine.open(store, { pageValues: { keyPrefixes: ["j/"], readaheadBytes: -1 } })).rejects.toThrow(/pageValues.readaheadBytes/);
    expect(store.counts.puts + store.counts.gets + store.counts.lists).toBe(0);
  });
});
