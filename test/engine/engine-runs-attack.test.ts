/**
 * @module Attacks on the engine's compact key runs through the engine (not
 * the state alone): a memtable lowered to a few keys, so small fills freeze
 * and merge runs all the time; keys at the edges of UTF-8 and of the runs'
 * blocks, values at the size boundaries of the runs' encodings, store
 * faults, checkpoints, compactions, reopens and a reader refreshing while
 * the writer merges; every step compared with a model.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, StoreCorruptedError, WriteBatch, withFaults, type EngineOptions, type ScanOptions } from "taquba";
import { stateTuning } from "../../runtime/engine/recovery.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { testRandom, type TestRandom } from "../support/seed.js";

beforeAll(() => {
  stateTuning.memtableKeys = 8;
});
afterAll(() => {
  stateTuning.memtableKeys = undefined;
});

/** Keys sharing a prefix longer than a run's key buffer starts with (256 bytes) and than several blocks of entries. */
const LONG = "L".repeat(300);
const ASTRAL = "\u{1F600}";

/** Keys at the edges: empty, the largest BMP unit, astral characters, NUL, very long, and long shared prefixes. */
function edgeKeys(): string[] {
  const keys = [
    "",
    "\uFFFF",
    "\uFFFF\uFFFF",
    "\uFFFE",
    ASTRAL,
    `${ASTRAL}${ASTRAL}`,
    "\u{10FFFF}",
    "\0",
    "a\0b",
    "a",
    "a\uFFFF",
    `a${ASTRAL}`,
    "é",
    "\u07FF",
    "\u0800",
  ];
  keys.push("k".repeat(5000), `${"k".repeat(4999)}\uFFFF`, `${"é".repeat(2000)}`);
  // Across block boundaries (32 entries a block): 100 keys sharing 300 bytes, some differing only in their last character.
  for (let i = 0; i < 100; i++) keys.push(`${LONG}${String(i).padStart(3, "0")}`);
  for (let i = 0; i < 40; i++) keys.push(`${LONG}${ASTRAL}${"x".repeat(i)}`);
  for (let i = 0; i < 40; i++) keys.push(`q/${"é".repeat(i)}`);
  for (let i = 0; i < 200; i++) keys.push(`n/${String(i).padStart(5, "0")}`);
  return keys;
}

/** Value sizes at the edges of the runs' encodings (inline up to 1024 bytes, shared arrays above; paging from 64). */
const SIZES = [0, 1, 2, 63, 64, 65, 1023, 1024, 1025, 4000];

function edgeValue(r: TestRandom, key: string, gen: number): Uint8Array {
  const n = SIZES[r.int(SIZES.length)]!;
  const v = new Uint8Array(n);
  // A value that repeats the end of its key (the runs pack those as a count) now and then.
  const tail = new TextEncoder().encode(key.slice(-Math.min(key.length, 12)));
  if (r.int(6) === 0 && [...key].every((c) => c.charCodeAt(0) < 0x80)) return tail;
  for (let i = 0; i < n; i++) v[i] = (gen * 31 + i * 7 + key.length) & 0xff;
  return v;
}

const hex = (v: Uint8Array | undefined) => (v === undefined ? undefined : Buffer.from(v).toString("hex"));

/** The model's entries within `opts`, as a scan of the engine returns them. */
function modelScan(model: Map<string, Uint8Array>, opts: ScanOptions, sorted = [...model.keys()].sort(compareKeys)): [string, string | undefined][] {
  const prefix = opts.prefix ?? "";
  let keys = sorted
    .filter((k) => k.startsWith(prefix))
    .filter((k) => opts.start === undefined || (opts.startExclusive ? compareKeys(k, opts.start) > 0 : compareKeys(k, opts.start) >= 0))
    .filter((k) => opts.end === undefined || compareKeys(k, opts.end) < 0);
  if (opts.reverse) keys.reverse();
  if (opts.limit !== undefined) keys = keys.slice(0, opts.limit);
  return keys.map((k) => [k, hex(model.get(k))]);
}

interface Readable {
  get(key: string): Uint8Array | undefined;
  has(key: string): boolean;
  scan(opts?: ScanOptions): IterableIterator<[string, Uint8Array]>;
  warm?(keys: Iterable<string>): Promise<void> | undefined;
}

async function warmAll(db: Readable, keys: string[]): Promise<void> {
  if (db.warm === undefined) return;
  for (let p = db.warm(keys); p !== undefined; p = db.warm(keys)) await p;
}

/** Warms every model key (a no-op unless values are paged). */
async function warmModel(db: Readable, model: Map<string, Uint8Array>): Promise<void> {
  await warmAll(db, [...model.keys()]);
}

/** Random bounds drawn from the keys (present or not), lone surrogates included. */
function randomScan(r: TestRandom, pool: string[]): ScanOptions {
  const pick = () => {
    const k = pool[r.int(pool.length)]!;
    const c = r.int(6);
    if (c === 0) return `${k}\uD800`; // a lone surrogate: between every BMP character and the astral ones
    if (c === 1) return k.slice(0, r.int(k.length + 1));
    if (c === 2) return `${k}\0`;
    return k;
  };
  const opts: ScanOptions = {};
  if (r.int(3) === 0) opts.prefix = pick().slice(0, 1 + r.int(4));
  if (r.int(2) === 0) opts.start = pick();
  if (r.int(2) === 0) opts.startExclusive = true;
  if (r.int(2) === 0) opts.end = pick();
  if (r.int(2) === 0) opts.limit = r.int(60);
  if (r.int(2) === 0) opts.reverse = true;
  return opts;
}

/** Compares `db` with the model: every key, some absent ones, the full scan both ways and random bounded scans. */
async function expectModel(db: Readable, model: Map<string, Uint8Array>, pool: string[], r: TestRandom, what: string): Promise<void> {
  await warmModel(db, model);
  const keys = [...model.keys()];
  expect(
    keys.map((k) => hex(db.get(k))),
    `${what}: values`,
  ).toEqual(keys.map((k) => hex(model.get(k))));
  for (const k of pool) {
    if (model.has(k)) continue;
    expect(db.get(k), `${what}: absent key ${JSON.stringify(k.slice(0, 40))}`).toBeUndefined();
    expect(db.has(k)).toBe(false);
  }
  // Lookups a stored key can never match.
  for (const k of ["\uD800", `${LONG}\uDFFF`, "\uDBFF\uDBFF", "a\uD83D"]) {
    expect(db.get(k)).toBeUndefined();
    expect(db.has(k)).toBe(false);
  }
  const sorted = keys.sort(compareKeys);
  const all = [...db.scan()].map(([k, v]) => [k, hex(v)]);
  expect(all, `${what}: full scan`).toEqual(modelScan(model, {}, sorted));
  expect(
    [...db.scan({ reverse: true })].map(([k, v]) => [k, hex(v)]),
    `${what}: reverse scan`,
  ).toEqual(modelScan(model, { reverse: true }, sorted));
  for (let i = 0; i < 40; i++) {
    const opts = randomScan(r, pool);
    expect(
      [...db.scan(opts)].map(([k, v]) => [k, hex(v)]),
      `${what}: scan ${JSON.stringify(opts)}`,
    ).toEqual(modelScan(model, opts, sorted));
  }
}

/** A random batch over the key pool; applies it to the model. */
function randomBatch(r: TestRandom, pool: string[], model: Map<string, Uint8Array>, gen: number): WriteBatch {
  const batch = new WriteBatch();
  const n = 1 + r.int(r.int(4) === 0 ? 120 : 12);
  for (let i = 0; i < n; i++) {
    // Runs of neighbouring keys now and then, so whole blocks die and revive.
    const at = r.int(pool.length);
    const span = r.int(5) === 0 ? 1 + r.int(40) : 1;
    const del = r.int(3) === 0;
    for (let j = at; j < Math.min(pool.length, at + span); j++) {
      const k = pool[j]!;
      if (del) {
        batch.delete(k);
        model.delete(k);
      } else {
        const v = edgeValue(r, k, gen);
        batch.put(k, v);
        model.set(k, v);
      }
    }
  }
  return batch;
}

const modes: [string, EngineOptions][] = [
  ["values in memory", {}],
  ["values paged out with a cache that keeps nothing", { pageValues: { keyPrefixes: [""], minBytes: 0, cacheBytes: 0 } }],
  [
    "values of some keys paged by block",
    { pageValues: { keyPrefixes: ["n/", LONG], minBytes: 64, cacheBytes: 8192, readaheadBytes: 2048 }, segmentBlockBytes: 512 },
  ],
];

describe("engine over compact key runs, attacked", () => {
  it.each(modes)(
    "keeps edge keys and edge-size values through freezes, merges, checkpoints, compactions, faults and reopens (%s)",
    async (_name, extra) => {
      const r = testRandom("engine runs attack");
      const base = new MemoryStore();
      const faulty = withFaults(base, { failureRate: 0, seed: r.int(2 ** 31) });
      const opts: EngineOptions = {
        ...extra,
        checkpointWalObjects: 0,
        maxSegmentRuns: 3,
        maxSegmentBytes: 4096,
        retry: { attempts: 30, baseDelayMs: 0, maxDelayMs: 0 },
      };
      const pool = edgeKeys().sort(compareKeys);
      const model = new Map<string, Uint8Array>();
      let engine = await Engine.open(faulty, opts);
      // The reader's reads fail now and then too, without retries: refreshes cut short part way.
      const readerStore = withFaults(base, { failureRate: 0, seed: r.int(2 ** 31), ops: ["get", "list"] });
      const readerOpts = { retry: { attempts: 1 } };
      let reader = await EngineReader.open(readerStore, readerOpts);
      let reopens = 0;
      for (let step = 0; step < 45; step++) {
        faulty.failureRate = r.int(3) === 0 ? 0.08 : 0;
        const commits: Promise<void>[] = [];
        for (let b = 0; b < 1 + r.int(6); b++) commits.push(engine.commit(randomBatch(r, pool, model, step)));
        // The reader refreshes while the writer commits and checkpoints.
        readerStore.failureRate = r.int(3) === 0 ? 0.2 : 0;
        // Handled at once: a refresh cut short by a fault rejects before the writer's work is awaited.
        const refreshing = r.int(2) === 0 ? reader.refresh().catch(() => false) : undefined;
        if (r.int(4) === 0) await engine.checkpoint();
        await Promise.all(commits);
        await refreshing;
        faulty.failureRate = 0;
        readerStore.failureRate = 0;
        if (r.int(8) === 0) await expectModel(engine, model, pool, r, `step ${step}, writer`);
        if (r.int(6) === 0) {
          await engine.flush();
          await reader.refresh();
          await expectModel(reader, model, pool, r, `step ${step}, reader`);
        }
        if (r.int(10) === 0) {
          reopens++;
          await engine.close();
          engine = await Engine.open(faulty, opts);
          await expectModel(engine, model, pool, r, `step ${step}, reopened`);
          await reader.close();
          reader = await EngineReader.open(readerStore, readerOpts);
          await expectModel(reader, model, pool, r, `step ${step}, reader reopened`);
        }
      }
      await engine.checkpoint();
      await expectModel(engine, model, pool, r, "end, writer");
      await engine.close();
      const last = await Engine.open(base, opts);
      await expectModel(last, model, pool, r, "end, reopened");
      await last.close();
      await reader.refresh();
      await expectModel(reader, model, pool, r, "end, reader");
      await reader.close();
      expect(reopens + engine.stats.checkpoints).toBeGreaterThan(0);
    },
    120_000,
  );
});

/** A copy of every object of `store`. */
async function copyStore(store: MemoryStore): Promise<MemoryStore> {
  const copy = new MemoryStore();
  for await (const o of store.list("")) {
    const found = await store.get(o.key);
    if (found) await copy.put(o.key, found.body);
  }
  return copy;
}

/** Every engine key and value of `db`, read after warming each (paged values included). */
async function dump(db: Readable, keys: string[]): Promise<[string, string | undefined][]> {
  await warmAll(db, keys);
  return [...db.scan()].map(([k, v]) => [k, hex(v)]);
}

describe("engine over compact key runs, most keys deleted", () => {
  it("a large fill deleted mostly in random order (runs rewritten alone) reads as the model in every direction, before and after reopen", async () => {
    const r = testRandom("engine runs mass delete");
    const store = new MemoryStore();
    const opts: EngineOptions = { checkpointWalObjects: 0, maxSegmentRuns: 2, pageValues: { keyPrefixes: ["n/"], minBytes: 64, cacheBytes: 16 * 1024 } };
    const model = new Map<string, Uint8Array>();
    const pool = edgeKeys();
    // Runs of several thousand entries need the memtable large enough that merges build them, then deletes spread thin over them.
    const keys = [...pool, ...Array.from({ length: 6000 }, (_, i) => `n/${String(i).padStart(5, "0")}/${"s".repeat(i % 40)}`)];
    let engine = await Engine.open(store, opts);
    for (let i = 0; i < keys.length; i += 300) {
      const batch = new WriteBatch();
      for (const k of keys.slice(i, i + 300)) {
        const v = edgeValue(r, k, i);
        batch.put(k, v);
        model.set(k, v);
      }
      await engine.commit(batch);
    }
    await engine.checkpoint();
    const order = keys.slice();
    for (let i = order.length - 1; i > 0; i--) {
      const j = r.int(i + 1);
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    const doomed = order.slice(0, Math.floor(order.length * 0.85));
    for (let i = 0; i < doomed.length; i += 250) {
      const batch = new WriteBatch();
      for (const k of doomed.slice(i, i + 250)) {
        batch.delete(k);
        model.delete(k);
      }
      // Revive a few deleted ones now and then.
      if (r.int(4) === 0) {
        const k = doomed[r.int(i + 1)]!;
        const v = edgeValue(r, k, i);
        batch.put(k, v);
        model.set(k, v);
      }
      await engine.commit(batch);
      if (r.int(12) === 0) await expectModel(engine, model, pool, r, `after ${i} deletes`);
      if (r.int(10) === 0) await engine.checkpoint();
    }
    await expectModel(engine, model, pool, r, "deleted");
    await engine.close();
    engine = await Engine.open(store, opts);
    await expectModel(engine, model, pool, r, "deleted, reopened");
    await engine.close();
  }, 120_000);
});

describe("damaged objects of an engine over compact key runs", () => {
  // Segments in two halves, WAL objects and manifests: each part opens the engine a few hundred times, which takes
  // tens of seconds on a loaded machine.
  const parts: [string, number, number][] = [
    ["seg/", 0, 2],
    ["seg/", 1, 2],
    ["wal/", 0, 1],
    ["manifest/", 0, 1],
  ];
  it.each(parts)(
    "a flipped byte or a cut anywhere in an object under %s (part %i of every %i) gives StoreCorruptedError, or the model's data, never other data",
    async (damagedPrefix, part, every) => {
      const r = testRandom(`engine runs damage ${damagedPrefix} ${part}`);
      const store = new MemoryStore();
      // Several segment runs (incremental checkpoints), paged and held values, and a WAL tail after the last checkpoint.
      // Segments of up to 8 KiB, each still its blocks, key section, index and footer: about a third of the objects
      // 2 KiB made (some 24 segments, not 67), each damaged and opened as before.
      const opts: EngineOptions = {
        checkpointWalObjects: 0,
        maxSegmentRuns: 4,
        maxSegmentBytes: 8192,
        segmentBlockBytes: 256,
        pageValues: { keyPrefixes: ["n/", LONG], minBytes: 64, cacheBytes: 0 },
      };
      const pool = edgeKeys().sort(compareKeys);
      const model = new Map<string, Uint8Array>();
      const engine = await Engine.open(store, opts);
      for (let c = 0; c < 3; c++) {
        for (let b = 0; b < 6; b++) await engine.commit(randomBatch(r, pool, model, c));
        await engine.checkpoint();
      }
      for (let b = 0; b < 4; b++) await engine.commit(randomBatch(r, pool, model, 9));
      await engine.close();
      const expected = modelScan(model, {});
      const objects: string[] = [];
      for await (const o of store.list("")) objects.push(o.key);
      expect(objects.some((k) => k.startsWith("seg/"))).toBe(true);
      expect(objects.some((k) => k.startsWith("wal/"))).toBe(true);

      let refused = 0;
      let intact = 0;
      for (const key of objects.filter((k) => k.startsWith(damagedPrefix)).filter((_, i) => i % every === part)) {
        const body = (await store.get(key))!.body;
        const edits: [string, Uint8Array][] = [];
        for (let i = 0; i < 6; i++) {
          const at = r.int(body.length);
          const flipped = body.slice();
          flipped[at] = flipped[at]! ^ (1 << r.int(8));
          edits.push([`bit flipped at ${at}`, flipped]);
        }
        edits.push([`cut to ${body.length - 1}`, body.slice(0, body.length - 1)]);
        edits.push(["emptied", new Uint8Array(0)]);
        const cut = r.int(body.length);
        edits.push([`cut to ${cut}`, body.slice(0, cut)]);
        for (const [what, damaged] of edits) {
          const copy = await copyStore(store);
          await copy.put(key, damaged);
          const label = `${key} ${what}`;
          // The reader first (it writes nothing), then the writer.
          for (const open of [() => EngineReader.open(copy), () => Engine.open(copy, opts)]) {
            const db = await open().catch((e: unknown) => e);
            if (!(db instanceof Engine || db instanceof EngineReader)) {
              expect(db, label).toBeInstanceOf(StoreCorruptedError);
              refused++;
              continue;
            }
            // Opened: damage in a paged value's block may show only when read; then it must be StoreCorruptedError too.
            const got = await dump(db, [...model.keys()]).catch((e: unknown) => e);
            if (got instanceof Error) {
              expect(got, label).toBeInstanceOf(StoreCorruptedError);
              refused++;
            } else {
              expect(got, label).toEqual(expected);
              intact++;
            }
            await db.close();
          }
        }
      }
      console.log(`damage under ${damagedPrefix}, part ${part} of every ${every}: ${objects.length} objects, ${refused} refused, ${intact} read intact`);
      expect(refused).toBeGreaterThan(0);
    },
    120_000,
  );
});
