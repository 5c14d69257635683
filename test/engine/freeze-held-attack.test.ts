/**
 * @module Freezes that keep the values not yet paged out in the memtable
 * (a paging writer's `hold`), attacked through the engine with a memtable
 * of two to four keys, so nearly every commit freezes and both ways a
 * freeze rebuilds the memtable (a table of the held entries; the moved
 * ones deleted in place) run over and over: one key deleted and put again
 * in one batch and across freezes, values paged and not, checkpoints left
 * running while commits and reads go on, and reopens. Every key reads back
 * as a plain map says, after every step.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch, type EngineOptions } from "taquba";
import { stateTuning } from "../../runtime/engine/recovery.js";
import { testRandom } from "../support/seed.js";

beforeAll(() => {
  stateTuning.memtableKeys = 2;
  stateTuning.idleSlice = 1;
});
afterAll(() => {
  stateTuning.memtableKeys = undefined;
  stateTuning.idleSlice = undefined;
});

const KEYS = ["a", "a/1", "b", "c", "\u00e9", "k/0", "k/1", "k/2"];
/** Values of 8 bytes or more page out at checkpoints; shorter ones stay in memory. */
const opts: EngineOptions = {
  checkpointWalObjects: 0,
  checkpointWalBytes: 0,
  maxSegmentRuns: 3,
  pageValues: { keyPrefixes: [""], minBytes: 8, cacheBytes: 0 },
};

function valueBytes(n: number, len: number): Uint8Array {
  const v = new Uint8Array(len);
  for (let i = 0; i < len; i++) v[i] = (n + i) & 255;
  return v;
}

/** What `engine` holds for `key`, read through a warm-up (values paged out are cold). */
async function read(engine: Engine, key: string): Promise<Uint8Array | undefined> {
  for (let p = engine.warm([key]); p !== undefined; p = engine.warm([key])) await p;
  const v = engine.get(key);
  return v === undefined ? undefined : v.slice();
}

async function expectModel(engine: Engine, model: Map<string, Uint8Array>, step: string): Promise<void> {
  for (const k of KEYS) expect(await read(engine, k), `${step}: key ${JSON.stringify(k)}`).toEqual(model.get(k));
}

describe("freezes over held values, through the engine", () => {
  it("every key reads as the model across freezes, running checkpoints and reopens", { timeout: 60_000 }, async () => {
    const { int } = testRandom("freeze held attack");
    const store = new MemoryStore();
    let engine = await Engine.open(store, opts);
    const model = new Map<string, Uint8Array>();
    const running: Promise<void>[] = [];
    // Counted across the reopens (the engine's stats are since its open).
    let checkpoints = 0;
    let freezes = 0;
    const tally = () => {
      checkpoints += engine.stats.checkpoints;
      freezes += engine.stats.memtableFreezes;
    };
    try {
      for (let step = 0; step < 400; step++) {
        const roll = int(20);
        if (roll < 14) {
          const b = new WriteBatch();
          const staged = new Map<string, Uint8Array | undefined>();
          for (let i = 0, n = 1 + int(4); i < n; i++) {
            const key = KEYS[int(KEYS.length)]!;
            if (int(3) === 0) {
              b.delete(key);
              staged.set(key, undefined);
              // The same key put again in the same batch, sometimes.
              if (int(2) === 0) {
                const v = valueBytes(step * 7 + i, int(2) === 0 ? 3 : 8 + int(40));
                b.put(key, v);
                staged.set(key, v);
              }
            } else {
              const v = valueBytes(step * 7 + i, int(2) === 0 ? 3 : 8 + int(40));
              b.put(key, v);
              staged.set(key, v);
            }
          }
          await engine.commit(b);
          for (const [k, v] of staged) v === undefined ? model.delete(k) : model.set(k, v);
        } else if (roll < 18) {
          // Left running: commits and reads go on beside it.
          running.push(engine.checkpoint());
        } else if (roll < 19) {
          await engine.checkpoint();
        } else {
          await Promise.all(running.splice(0));
          tally();
          await engine.close();
          engine = await Engine.open(store, opts);
        }
        await expectModel(engine, model, `step ${step}`);
      }
      await Promise.all(running.splice(0));
      tally();
      expect(checkpoints).toBeGreaterThan(20);
      expect(freezes).toBeGreaterThan(100);
      await engine.close();
      engine = await Engine.open(store, opts);
      await expectModel(engine, model, "after the last reopen");
    } finally {
      await Promise.allSettled(running);
      await engine.close();
    }
  });
});
