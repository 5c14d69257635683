/**
 * @module The engine against a plain map: random commits, checkpoints, reopens and
 * readers (property-based), with and without injected store faults.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, WriteBatch, withFaults, type EngineOptions, type FaultyStore, type ObjectStore } from "taquba";
import { firstDifference } from "../support/first-difference.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { SlowSegments } from "../support/slow-segments.js";

type Op = { t: "commit"; ops: Array<{ del: boolean; key: string; value: number }>; durable: boolean } | { t: "checkpoint" } | { t: "reopen" } | { t: "reader" };

const keyArb = fc.constantFrom("a", "b", "b/1", "b/2", "c\u00e9", "\u{1F600}", "\uFFFD", "");
/**
 * Many more keys: with one entry per segment a compaction writes one slow
 * segment put per live key, so it runs long enough for runs to pile up
 * beside it.
 */
const manyKeysArb = fc.oneof(
  keyArb,
  fc.nat(47).map((n) => `k/${n}`),
);
const opsOf = (keys: fc.Arbitrary<string>, commitWeight = 6): fc.Arbitrary<Op> =>
  fc.oneof(
    {
      weight: commitWeight,
      arbitrary: fc.record({
        t: fc.constant("commit" as const),
        ops: fc.array(fc.record({ del: fc.boolean(), key: keys, value: fc.nat(1000) }), { maxLength: 5 }),
        durable: fc.boolean(),
      }),
    },
    { weight: 1, arbitrary: fc.constant({ t: "checkpoint" as const }) },
    { weight: 1, arbitrary: fc.constant({ t: "reopen" as const }) },
    { weight: 1, arbitrary: fc.constant({ t: "reader" as const }) },
  );
const opArb = opsOf(keyArb);

/**
 * The bytes the model stores for number `n`: its 4 bytes, or with `wide`
 * also a tail of 0 to 1,496 bytes (every byte value) chosen by `n`, so values
 * of every size class the engine keeps in memory differently show up.
 */
function encodeValue(n: number, wide: boolean): Uint8Array {
  const v = new Uint8Array(wide ? [4, 30, 64, 65, 300, 1024, 1025, 1500][n % 8]! : 4);
  new DataView(v.buffer).setUint32(0, n);
  for (let i = 4; i < v.length; i++) v[i] = (i * 31 + n) & 0xff;
  return v;
}

/** The number `v` encodes, or -1 when its bytes are not exactly what `encodeValue` gives for it. */
function decodeValue(v: Uint8Array, wide: boolean): number {
  const n = new DataView(v.buffer, v.byteOffset, v.byteLength).getUint32(0);
  return Buffer.from(v).equals(encodeValue(n, wide)) ? n : -1;
}

function snapshot(e: { scan(): IterableIterator<[string, Uint8Array]> }, wide = false): Array<[string, number]> {
  return [...e.scan()].map(([k, v]) => [k, decodeValue(v, wide)]);
}

function modelSnapshot(model: Map<string, number>, engineOrder: string[]): Array<[string, number]> {
  return engineOrder.map((k) => [k, model.get(k)!]);
}

/**
 * Fails naming the first difference of `got` from `want`. Checked after every step of every script: vitest's
 * `toEqual` and an `expect` per key there were much of the file's time (see first-difference.ts).
 */
function expectSame(what: string, got: Iterable<unknown>, want: Iterable<unknown>): void {
  const diff = firstDifference(got, want);
  if (diff !== undefined) expect.fail(`${what}: ${diff}`);
}

/** Fails unless `keys` holds each key of `model` once and no other, in any order. */
function expectSameKeys(what: string, keys: readonly string[], model: Map<string, number>): void {
  const seen = new Set(keys);
  if (seen.size !== keys.length || seen.size !== model.size || keys.some((k) => !model.has(k))) {
    expect(seen, `${what}, as a set`).toEqual(new Set(model.keys()));
    expect.fail(`${what}: a key listed twice (${keys.length} keys listed, ${seen.size} distinct)`);
  }
}

/** The model's keys in UTF-8 byte order, computed independently of the engine. */
function byteOrder(model: Map<string, number>): string[] {
  return [...model.keys()].sort((a, b) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8")));
}

/**
 * Paging every value out of memory with a cache too small to keep any
 * segment past a turn: nearly every read first misses and goes to the store.
 */
const PAGED: EngineOptions = { pageValues: { keyPrefixes: [""], minBytes: 0, cacheBytes: 0 } };

/**
 * Paging by block with read-ahead: every entry is a block of its own, a
 * segment holds a few, and the cache keeps about two decoded blocks, so most
 * reads miss while the misses that walk a segment read ahead.
 */
const PAGED_BLOCKS: EngineOptions = {
  pageValues: { keyPrefixes: [""], minBytes: 0, cacheBytes: 400, readaheadBytes: 100 },
  segmentBlockBytes: 1,
  maxSegmentBytes: 48,
};

/**
 * Paging only the keys under "b" and only values of at least 64 bytes, with
 * a cache that keeps nothing past a turn: the other values stay in memory,
 * packed when small (up to 1 KiB) and copied when larger, so reads mix
 * packed, copied and paged values, and most paged reads miss.
 */
const PAGED_SOME: EngineOptions = { pageValues: { keyPrefixes: ["b"], minBytes: 64, cacheBytes: 0 } };

/** Commits "b" with a value of 64 bytes (wide) and checkpoints: every paging policy above pages it out, and the next read fetches it. */
const PAGES_ONE_VALUE: Op[] = [{ t: "commit", ops: [{ del: false, key: "b", value: 2 }], durable: true }, { t: "checkpoint" }, { t: "reopen" }];

const put = (key: string, value: number): Op => ({ t: "commit", ops: [{ del: false, key, value }], durable: true });

/**
 * Runs piling up beside a slow compaction, whatever the random scripts do
 * and however loaded the machine: 48 live keys (a compaction writes one
 * slow segment put per key, 48 times the turns of an incremental checkpoint
 * of one key), a checkpoint that waits for those running (so the next
 * compaction carries few changes into the first checkpoint beside it), then
 * 40 commits of the same key, spaced as the script runner spaces them:
 * checkpoints of one key publish one after another beside the compaction,
 * reach `maxSegmentRuns` and are folded. Alone it made 12 to 19 folds
 * piling up (with and without faults) and 5 to 7 checkpoints beside a
 * compaction with the overlapping runs' closer commits, at a load of 33-35
 * on two cores; without the checkpoint after the fill, 0 or 1 fold with
 * faults.
 */
const PILES_UP: Op[] = [
  ...Array.from(
    { length: 24 },
    (_, i): Op => ({
      t: "commit",
      ops: [0, 1, 2, 3].map((j) => ({ del: false, key: `k/${i * 4 + j}`, value: i * 4 + j })),
      durable: true,
    }),
  ),
  { t: "checkpoint" },
  ...Array.from({ length: 40 }, (_, i) => put("a", 500 + i)),
  { t: "reopen" },
];

/**
 * Folds by tiers and compactions, whatever the random scripts do: eight
 * keys written over and over, a checkpoint after each commit, so the runs
 * reach `maxSegmentRuns` again and again (folded by tiers) and most of what
 * they list is dead (compacted): alone, 11 folds and 9 compactions in
 * every run, with and without faults.
 */
const FOLDS_BY_TIER: Op[] = Array.from({ length: 48 }, (_, i): Op[] => [put(`k/${i % 8}`, i), { t: "checkpoint" }]).flat();

/**
 * Warms the values of `keys` (see `Engine.warm`), then runs `read` in the
 * same synchronous run as the check that found them all warm, as the engine
 * asks: a checkpoint publishing in a microtask in between may page out a
 * value that check found held in memory.
 */
async function warmThen(engine: Engine, keys: Iterable<string>, read: () => void): Promise<void> {
  const list = [...keys];
  for (let p = engine.warm(list); p !== undefined; p = engine.warm(list)) await p;
  read();
}

/**
 * Runs random scripts against the engine and a plain map; `faultSeed` turns
 * on injected store faults, `engineOpts` adds engine options (paging).
 */
async function checkAgainstModel(
  faultSeed: number | undefined,
  numRuns: number,
  checkSeed?: number,
  engineOpts: EngineOptions = {},
  wide = false,
  overlap: boolean | "pile" | "tier" = false,
): Promise<void> {
  let seed = faultSeed;
  const examples = examplesFor(engineOpts, overlap);
  const faulty: FaultyStore[] = [];
  let pagedReads = 0;
  let beside = 0;
  let folds = 0;
  let tierFolds = 0;
  let compactions = 0;
  await fc.assert(
    fc.asyncProperty(
      overlap === "tier"
        ? fc.array(opsOf(manyKeysArb, 12), { minLength: 30, maxLength: 60 })
        : fc.array(overlap === "pile" ? opsOf(manyKeysArb, 30) : opArb, overlap === "pile" ? { minLength: 40, maxLength: 80 } : { maxLength: 40 }),
      fc.integer({ min: 0, max: 3 }),
      async (script, flushMs) => {
        let store: ObjectStore = new MemoryStore();
        if (seed !== undefined) {
          const f = withFaults(store, { failureRate: 0.2, seed: seed++, failAfterWriteRate: 0.5 });
          faulty.push(f);
          store = f;
        }
        // Slow segment puts: a compaction stays in flight while later WAL objects start incremental checkpoints.
        if (overlap === true || overlap === "pile") store = new SlowSegments(store, 40);
        const retry = { attempts: 30, baseDelayMs: 0, maxDelayMs: 0 };
        const opts =
          overlap === "tier"
            ? { ...engineOpts, ...TIER, flushIntervalMs: flushMs, retry }
            : overlap
              ? { ...engineOpts, ...OVERLAP, flushIntervalMs: flushMs, retry }
              : { ...engineOpts, flushIntervalMs: flushMs, checkpointWalObjects: 3, retry };
        let engine = await Engine.open(store, opts);
        let opened = engine.stats.segmentRuns;
        const model = new Map<string, number>();
        const pending: Promise<void>[] = [];
        for (const step of script) {
          if (step.t === "commit") {
            const b = new WriteBatch();
            for (const o of step.ops) {
              if (o.del) {
                b.delete(o.key);
                model.delete(o.key);
              } else {
                b.put(o.key, encodeValue(o.value, wide));
                model.set(o.key, o.value);
              }
            }
            pending.push(engine.commit(b, { durable: step.durable }));
            // A few turns between commits: WAL objects land one by one and start checkpoints while others run.
            // Piling up: commits far enough apart that an incremental checkpoint of a few keys ends before the next
            // few land, while a compaction (one slow put per live key) spans many of them.
            if (overlap) for (let i = 0; i < (overlap === "pile" ? 60 : 6); i++) await new Promise<void>((r) => setImmediate(r));
          } else if (step.t === "checkpoint") {
            await engine.checkpoint();
          } else if (step.t === "reopen") {
            await Promise.all(pending.splice(0));
            pagedReads += engine.stats.segmentFetches;
            beside += engine.stats.checkpointsBesideCompaction;
            folds += engine.stats.runsFoldedBesideCompaction;
            tierFolds += engine.stats.runsFoldedByTier;
            compactions += engine.stats.compactions;
            await engine.close();
            engine = await Engine.open(store, opts);
            opened = engine.stats.segmentRuns;
          } else {
            await engine.flush();
            const reader = await EngineReader.open(store, { retry });
            const keys = [...reader.scan()].map(([k]) => k);
            expectSame("a reader's entries", snapshot(reader, wide), modelSnapshot(model, keys));
            expectSameKeys("a reader's keys", keys, model);
          }
          await warmThen(engine, model.keys(), () => {
            // Runs beside a compaction are folded at maxSegmentRuns (m): a compaction replaces at most m runs, or those
            // the open found (a compaction stopped by a close left its runs and those beside it), or the last one's run
            // and the m kept beside it; m more go beside it. Without faults no compaction fails otherwise.
            const m = OVERLAP.maxSegmentRuns!;
            if ((overlap === true || overlap === "pile") && faultSeed === undefined)
              expect(engine.stats.segmentRuns).toBeLessThanOrEqual(Math.max(opened, m + 1) + m);
            // By tiers the same bound holds (incremental checkpoints still run beside a compaction and fold there); a
            // fold at the cap never leaves more runs than it found.
            const t = TIER.maxSegmentRuns!;
            if (overlap === "tier" && faultSeed === undefined) expect(engine.stats.segmentRuns).toBeLessThanOrEqual(Math.max(opened, t + 1) + t);
            for (const [k, v] of model) {
              const got = decodeValue(engine.get(k)!, wide);
              if (got !== v) expect(got, `get ${JSON.stringify(k)}`).toBe(v);
            }
            const keys = [...engine.scan()].map(([k]) => k);
            expectSameKeys("the engine's keys", keys, model);
            expectSame("the engine's keys in UTF-8 byte order", keys, byteOrder(model));
            expectSame("the engine's entries", snapshot(engine, wide), modelSnapshot(model, keys));
          });
        }
        await Promise.all(pending);
        await engine.close();
        const final = await Engine.open(store, { ...engineOpts, retry });
        await warmThen(final, model.keys(), () => {
          const keys = [...final.scan()].map(([k]) => k);
          expectSameKeys("the reopened engine's keys", keys, model);
          expectSame("the reopened engine's entries", snapshot(final, wide), modelSnapshot(model, keys));
        });
        pagedReads += engine.stats.segmentFetches + final.stats.segmentFetches;
        beside += engine.stats.checkpointsBesideCompaction;
        folds += engine.stats.runsFoldedBesideCompaction;
        tierFolds += engine.stats.runsFoldedByTier;
        compactions += engine.stats.compactions;
        await final.close();
      },
    ),
    {
      // The first scripts below are run besides the random ones, not instead of them.
      numRuns: numRuns + examples.length,
      ...(checkSeed === undefined ? {} : { seed: checkSeed }),
      // First scripts that surely meet the conditions checked below, so that each check fails only
      // when what it counts no longer happens, not when the random scripts (or the machine's load)
      // happen to skip it. Paged: a script that reads a value back from a segment (5 reads alone);
      // the random scripts alone made no paged read in one run of 40 (where 42 runs here made 8 to
      // 27). Piling up: no fold in one run of 8 random scripts with faults.
      examples,
    },
  );
  // The paged runs must really have read values back from segments.
  if (engineOpts.pageValues !== undefined) expect(pagedReads).toBeGreaterThan(0);
  // The overlapping runs must really have published incremental checkpoints while a compaction was writing.
  if (overlap === true || overlap === "pile") expect(beside).toBeGreaterThan(0);
  // By tiers: runs really were folded at the cap with no compaction running, and compactions still came.
  if (overlap === "tier") {
    expect(tierFolds).toBeGreaterThan(0);
    expect(compactions).toBeGreaterThan(0);
  }
  // Runs really piled up beside slow compactions and were folded.
  if (overlap === "pile") expect(folds).toBeGreaterThan(0);
  // The fault runs must really have met faults.
  if (faultSeed !== undefined) expect(faulty.reduce((n, f) => n + f.injected, 0)).toBeGreaterThan(0);
}

/** The scripts run first, each with a flush window of 0 ms (see `checkAgainstModel`). */
function examplesFor(engineOpts: EngineOptions, overlap: boolean | "pile" | "tier"): [Op[], number][] {
  const scripts: Op[][] = [];
  if (engineOpts.pageValues !== undefined) scripts.push(PAGES_ONE_VALUE);
  if (overlap === true || overlap === "pile") scripts.push(PILES_UP);
  if (overlap === "tier") scripts.push(FOLDS_BY_TIER);
  return scripts.map((script) => [script, 0]);
}

/**
 * Compactions and incremental checkpoints overlapping all the time: a
 * checkpoint after every WAL object, a compaction once two runs exist, one
 * entry per segment (a compaction writes one segment per live key) whose
 * puts take several turns (`SlowSegments`).
 */
const OVERLAP: EngineOptions = { checkpointWalObjects: 1, maxSegmentRuns: 2, maxSegmentBytes: 1 };

/**
 * Compaction by tiers: a checkpoint after every WAL object, three runs at
 * most, so checkpoints at the cap fold the newest runs into their own and
 * compactions come only when the newer runs outgrow the oldest or half of
 * what the runs list is dead.
 */
const TIER: EngineOptions = { checkpointWalObjects: 1, maxSegmentRuns: 3, foldRunsByTier: true, segmentBlockBytes: 64, maxSegmentBytes: 256 };

describe("engine against a model map, runs folded by tiers at maxSegmentRuns instead of compacting", { timeout: HEAVY_TEST_MS }, () => {
  it("matches a plain map", async () => {
    await checkAgainstModel(undefined, 25, undefined, {}, false, "tier");
  });

  it("matches with a fifth of all store calls failing, half of failed puts after landing", async () => {
    await checkAgainstModel(31, 15, undefined, {}, false, "tier");
  });

  it("matches with every value paged out and a cache that keeps nothing", async () => {
    await checkAgainstModel(undefined, 25, undefined, PAGED, false, "tier");
  });

  it("matches paged by block with some prefixes paged, values of every size, a fifth of all store calls failing", async () => {
    await checkAgainstModel(32, 15, undefined, { ...PAGED_SOME, segmentBlockBytes: 1 }, true, "tier");
  });
});

describe("engine against a model map, runs piling up beside slow compactions (folded at maxSegmentRuns)", { timeout: HEAVY_TEST_MS }, () => {
  it("matches a plain map", async () => {
    await checkAgainstModel(undefined, 15, undefined, {}, false, "pile");
  });

  it("matches with a fifth of all store calls failing, half of failed puts after landing", async () => {
    await checkAgainstModel(21, 8, undefined, {}, false, "pile");
  });

  it("matches with every value paged out and a cache that keeps nothing", async () => {
    await checkAgainstModel(undefined, 15, undefined, PAGED, false, "pile");
  });

  it("matches paged by block with some prefixes paged, values of every size, a fifth of all store calls failing", async () => {
    await checkAgainstModel(22, 8, undefined, { ...PAGED_SOME, segmentBlockBytes: 1 }, true, "pile");
  });
});

describe("engine against a model map, compactions and incremental checkpoints overlapping", { timeout: HEAVY_TEST_MS }, () => {
  it("matches a plain map", async () => {
    await checkAgainstModel(undefined, 60, undefined, {}, false, true);
  });

  it("matches with a fifth of all store calls failing, half of failed puts after landing", async () => {
    await checkAgainstModel(11, 40, undefined, {}, false, true);
  });

  it("matches with every value paged out and a cache that keeps nothing", async () => {
    await checkAgainstModel(undefined, 60, undefined, PAGED, false, true);
  });

  it("matches paged, with a fifth of all store calls failing", async () => {
    await checkAgainstModel(12, 40, undefined, PAGED, false, true);
  });

  it("matches paged by block with some prefixes paged and values of every size", async () => {
    await checkAgainstModel(undefined, 60, undefined, { ...PAGED_SOME, segmentBlockBytes: 1 }, true, true);
  });

  it("matches paged by block, some prefixes, values of every size, a fifth of all store calls failing", async () => {
    await checkAgainstModel(13, 40, undefined, { ...PAGED_SOME, segmentBlockBytes: 1 }, true, true);
  });
});

// Each test runs up to 100 scripts in this process, with the engine's real timers (a flush window of 0 to
// 3 ms): under a second of CPU, but up to 8 times that in wall time at a load of 15 on two cores.
describe("engine against a model map", { timeout: HEAVY_TEST_MS }, () => {
  it("matches a plain map across commits, checkpoints, reopens and readers", async () => {
    await checkAgainstModel(undefined, 100);
  });

  it("still matches when a fifth of all store calls fail, half of failed puts after landing", async () => {
    await checkAgainstModel(1, 40);
  });

  it("matches with every value paged out and a cache that keeps nothing past a turn (most reads miss)", async () => {
    await checkAgainstModel(undefined, 100, undefined, PAGED);
  });

  it("matches paged, with a fifth of all store calls failing", async () => {
    await checkAgainstModel(2, 40, undefined, PAGED);
  });

  it("matches paged by block, with small segments and a cache of about two blocks that reads ahead", async () => {
    await checkAgainstModel(undefined, 100, undefined, PAGED_BLOCKS);
  });

  it("matches paged by block, with a fifth of all store calls failing", async () => {
    await checkAgainstModel(3, 40, undefined, PAGED_BLOCKS);
  });

  it("matches with some prefixes paged and the other values of every size held packed, with a cache that keeps nothing", async () => {
    await checkAgainstModel(undefined, 100, undefined, PAGED_SOME, true);
  });

  it("matches with some prefixes paged and values of every size, with a fifth of all store calls failing", async () => {
    await checkAgainstModel(4, 40, undefined, PAGED_SOME, true);
  });

  it("replays the run where a reader opened while a checkpoint deleted the WAL it had listed (fast-check seed 507665202)", async () => {
    await checkAgainstModel(1, 40, 507665202);
  });
});
