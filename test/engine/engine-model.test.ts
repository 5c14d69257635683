/**
 * @module The engine against a plain map: random commits, checkpoints, reopens and
 * readers (property-based), with and without injected store faults.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, WriteBatch, withFaults, type EngineOptions, type FaultyStore, type ObjectStore } from "taquba";

type Op = { t: "commit"; ops: Array<{ del: boolean; key: string; value: number }>; durable: boolean } | { t: "checkpoint" } | { t: "reopen" } | { t: "reader" };

const keyArb = fc.constantFrom("a", "b", "b/1", "b/2", "c\u00e9", "\u{1F600}", "\uFFFD", "");
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant("commit" as const),
      ops: fc.array(fc.record({ del: fc.boolean(), key: keyArb, value: fc.nat(1000) }), { maxLength: 5 }),
      durable: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ t: "checkpoint" as const }) },
  { weight: 1, arbitrary: fc.constant({ t: "reopen" as const }) },
  { weight: 1, arbitrary: fc.constant({ t: "reader" as const }) },
);

function snapshot(e: { scan(): IterableIterator<[string, Uint8Array]> }): Array<[string, number]> {
  return [...e.scan()].map(([k, v]) => [k, new DataView(v.buffer, v.byteOffset, v.byteLength).getUint32(0)]);
}

function modelSnapshot(model: Map<string, number>, engineOrder: string[]): Array<[string, number]> {
  return engineOrder.map((k) => [k, model.get(k)!]);
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

/** Warms the values of `keys` (see `Engine.warm`); returns once a synchronous read of each will succeed. */
async function warmAll(engine: Engine, keys: Iterable<string>): Promise<void> {
  const list = [...keys];
  for (let p = engine.warm(list); p !== undefined; p = engine.warm(list)) await p;
}

/**
 * Runs random scripts against the engine and a plain map; `faultSeed` turns
 * on injected store faults, `engineOpts` adds engine options (paging).
 */
async function checkAgainstModel(faultSeed: number | undefined, numRuns: number, checkSeed?: number, engineOpts: EngineOptions = {}): Promise<void> {
  let seed = faultSeed;
  const faulty: FaultyStore[] = [];
  let pagedReads = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { maxLength: 40 }), fc.integer({ min: 0, max: 3 }), async (script, flushMs) => {
      let store: ObjectStore = new MemoryStore();
      if (seed !== undefined) {
        const f = withFaults(store, { failureRate: 0.2, seed: seed++, failAfterWriteRate: 0.5 });
        faulty.push(f);
        store = f;
      }
      const retry = { attempts: 30, baseDelayMs: 0, maxDelayMs: 0 };
      const opts = { ...engineOpts, flushIntervalMs: flushMs, checkpointWalObjects: 3, retry };
      let engine = await Engine.open(store, opts);
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
              const v = new Uint8Array(4);
              new DataView(v.buffer).setUint32(0, o.value);
              b.put(o.key, v);
              model.set(o.key, o.value);
            }
          }
          pending.push(engine.commit(b, { durable: step.durable }));
        } else if (step.t === "checkpoint") {
          await engine.checkpoint();
        } else if (step.t === "reopen") {
          await Promise.all(pending.splice(0));
          pagedReads += engine.stats.segmentFetches;
          await engine.close();
          engine = await Engine.open(store, opts);
        } else {
          await engine.flush();
          const reader = await EngineReader.open(store, { retry });
          const keys = [...reader.scan()].map(([k]) => k);
          expect(snapshot(reader)).toEqual(modelSnapshot(model, keys));
          expect(new Set(keys)).toEqual(new Set(model.keys()));
        }
        await warmAll(engine, model.keys());
        for (const [k, v] of model) expect(new DataView(engine.get(k)!.buffer, engine.get(k)!.byteOffset, 4).getUint32(0)).toBe(v);
        const keys = [...engine.scan()].map(([k]) => k);
        expect(new Set(keys)).toEqual(new Set(model.keys()));
        expect(keys).toEqual(byteOrder(model));
        expect(snapshot(engine)).toEqual(modelSnapshot(model, keys));
      }
      await Promise.all(pending);
      await engine.close();
      const final = await Engine.open(store, { ...engineOpts, retry });
      await warmAll(final, model.keys());
      const keys = [...final.scan()].map(([k]) => k);
      expect(new Set(keys)).toEqual(new Set(model.keys()));
      expect(snapshot(final)).toEqual(modelSnapshot(model, keys));
      pagedReads += engine.stats.segmentFetches + final.stats.segmentFetches;
      await final.close();
    }),
    checkSeed === undefined ? { numRuns } : { numRuns, seed: checkSeed },
  );
  // The paged runs must really have read values back from segments.
  if (engineOpts.pageValues !== undefined) expect(pagedReads).toBeGreaterThan(0);
  // The fault runs must really have met faults.
  if (faultSeed !== undefined) expect(faulty.reduce((n, f) => n + f.injected, 0)).toBeGreaterThan(0);
}

describe("engine against a model map", () => {
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

  it("replays the run where a reader opened while a checkpoint deleted the WAL it had listed (fast-check seed 507665202)", async () => {
    await checkAgainstModel(1, 40, 507665202);
  });
});
