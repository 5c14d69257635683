/**
 * @module Attack on checkpoints that write no tombstone for a key put and
 * deleted since the last cut and absent before it: commits that put and
 * delete fresh keys, delete keys never written, and put back keys deleted
 * before, race incremental checkpoints and compactions (segment puts that
 * take several turns, so they overlap) over a small memtable. At every
 * reopen, for a reader, and at the end, the state equals a plain map of
 * the commits: no key a run still holds comes back, and none is lost.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, WriteBatch, type EngineOptions } from "taquba";
import { stateTuning } from "../../runtime/engine/recovery.js";
import { SlowSegments } from "../support/slow-segments.js";
import { testRandom } from "../support/seed.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

afterEach(() => {
  stateTuning.memtableKeys = undefined;
});

/** Every key the commits named, so that a paged value is warmed before the scan reads it. */
const named = new Set<string>();

async function contents(view: Engine | EngineReader): Promise<Map<string, string>> {
  const keys = [...named];
  // A reader reads its segments whole: nothing of it is paged.
  if (view instanceof Engine) for (let p = view.warm(keys); p !== undefined; p = view.warm(keys)) await p;
  return new Map([...view.scan()].map(([k, v]) => [k, dec(v)]));
}

const OPTIONS: EngineOptions = {
  checkpointWalObjects: 2,
  checkpointWalBytes: 0,
  maxSegmentRuns: 3,
  maxSegmentBytes: 512,
  flushIntervalMs: 0,
  pageValues: { keyPrefixes: ["p/"], minBytes: 24 },
};

describe("checkpoints racing keys put and deleted since the cut", () => {
  for (const [n, rounds] of [1, 2, 3, 1, 2, 3].entries()) {
    it(`leave a state equal to the commits' map at every reopen and for a reader (seeded, ${n + 1}: a reopen every ${rounds} phases)`, async () => {
      const rnd = testRandom(`no-change-keys-race-${n + 1}`);
      stateTuning.memtableKeys = 32;
      const inner = new MemoryStore();
      const store = new SlowSegments(inner, 1 + rnd.int(6));
      const model = new Map<string, string>();
      let fresh = 0;
      let compactions = 0;
      let beside = 0;
      const pendingDeletes: string[] = [];
      let engine = await Engine.open(store, OPTIONS);
      for (let phase = 0; phase < 6; phase++) {
        const inFlight: Promise<void>[] = [];
        for (let c = 0; c < 120; c++) {
          const b = new WriteBatch();
          const ops = 1 + rnd.int(4);
          for (let o = 0; o < ops; o++) {
            const pick = rnd.int(10);
            // Stable keys: put, deleted, put back.
            const stable = `${rnd.int(2) === 0 ? "k" : "p"}/${String(rnd.int(40)).padStart(2, "0")}`;
            if (pick < 3) {
              const v = `v${phase}.${c}.${o}${"x".repeat(rnd.int(40))}`;
              b.put(stable, enc(v));
              model.set(stable, v);
            } else if (pick < 5) {
              b.delete(stable);
              model.delete(stable);
            } else if (pick < 8) {
              // A fresh key put now and deleted by a later commit (or this one), absent before.
              const key = `f/${String(++fresh).padStart(6, "0")}`;
              b.put(key, enc(`fresh ${fresh}`));
              model.set(key, `fresh ${fresh}`);
              const later = rnd.int(3) === 0 ? b : undefined;
              if (later !== undefined) {
                later.delete(key);
                model.delete(key);
              } else pendingDeletes.push(key);
            } else if (pick < 9 && pendingDeletes.length > 0) {
              const key = pendingDeletes.splice(rnd.int(pendingDeletes.length), 1)[0]!;
              b.delete(key);
              model.delete(key);
            } else {
              // A key never written.
              b.delete(`never/${rnd.int(1000)}`);
            }
          }
          for (const op of b.ops) named.add(op.key);
          const p = engine.commit(b);
          if (rnd.int(4) === 0) await p;
          else inFlight.push(p);
          if (rnd.int(25) === 0) inFlight.push(engine.checkpoint());
        }
        await Promise.all(inFlight);
        expect(await contents(engine)).toEqual(model);
        if (phase % rounds === 0) {
          compactions += engine.stats.compactions;
          beside += engine.stats.checkpointsBesideCompaction;
          await engine.close();
          const reader = await EngineReader.open(inner);
          expect(await contents(reader)).toEqual(model);
          await reader.close();
          engine = await Engine.open(store, OPTIONS);
          expect(await contents(engine)).toEqual(model);
        }
      }
      await engine.checkpoint();
      compactions += engine.stats.compactions;
      beside += engine.stats.checkpointsBesideCompaction;
      await engine.close();
      const last = await Engine.open(inner, OPTIONS);
      expect(await contents(last)).toEqual(model);
      await last.close();
      // The race took place: compactions, and incremental checkpoints cut while one wrote.
      expect(compactions).toBeGreaterThan(0);
      expect(beside).toBeGreaterThan(0);
    }, 120_000);
  }
});
