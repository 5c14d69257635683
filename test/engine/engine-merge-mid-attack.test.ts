/**
 * @module The engine with key-run merges always part way (a tiny memtable,
 * no idle turns: only writes copy a merge's entries): checkpoints, a
 * reader's refreshes, closes and reopens land between a merge's slices,
 * with and without paged values. Everything reads as a model: the engine
 * before and after each step, the reader after each refresh, each reopen.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, WriteBatch, type EngineOptions } from "taquba";
import { stateTuning } from "../../runtime/engine/recovery.js";
import { testRandom } from "../support/seed.js";

beforeAll(() => {
  stateTuning.memtableKeys = 32;
  stateTuning.idleSlice = 0;
});
afterAll(() => {
  stateTuning.memtableKeys = undefined;
  stateTuning.idleSlice = undefined;
});

const text = new TextDecoder();
const key = (i: number) => `k/${String(i).padStart(5, "0")}`;

function contents(entries: Iterable<[string, Uint8Array]>): string[] {
  return Array.from(entries, ([k, v]) => `${k}=${text.decode(v)}`);
}

function modelContents(model: Map<string, string>): string[] {
  return [...model.keys()].sort().map((k) => `${k}=${model.get(k)!}`);
}

async function readAll(engine: Engine, model: Map<string, string>): Promise<string[]> {
  const keys = [...model.keys()];
  await engine.warm(keys);
  return contents(engine.scan({ prefix: "k/" }));
}

describe("checkpoints, refreshes, closes and reopens between a merge's slices", () => {
  for (const paged of [false, true]) {
    it(`read as a model${paged ? " (values paged)" : ""}`, { timeout: 120_000 }, async () => {
      const r = testRandom(`engine merge mid attack ${paged}`);
      const store = new MemoryStore();
      const opts: EngineOptions = {
        checkpointWalObjects: 0,
        checkpointWalBytes: 0,
        ...(paged ? { pageValues: { keyPrefixes: ["k/"], minBytes: 100 } } : {}),
      };
      const model = new Map<string, string>();
      let engine = await Engine.open(store, opts);
      let reader: EngineReader | undefined;
      let version = 0;
      // Counted across the engine's reopens: each open starts its own count.
      let merges = 0;
      let mergesBefore = 0;
      // Some seeds start no merge in 30 rounds: write on, up to four times as many, until one ran.
      for (let round = 0; round < 30 || (merges === 0 && round < 120); round++) {
        // Commits of puts, rewrites and deletes: each write copies a slice of the merge in progress.
        for (let c = 0; c < 4 + r.int(8); c++) {
          const batch = new WriteBatch();
          for (let o = 0; o < 1 + r.int(40); o++) {
            const k = key(r.int(1_500));
            if (r.int(4) === 0) {
              batch.delete(k);
              model.delete(k);
            } else {
              const v = `${version++}${"v".repeat(r.int(3) === 0 ? 200 : 0)}`;
              batch.put(k, new TextEncoder().encode(v));
              model.set(k, v);
            }
          }
          await engine.commit(batch);
        }
        merges = mergesBefore + engine.stats.runMerges;
        expect(await readAll(engine, model), `round ${round}`).toEqual(modelContents(model));
        const step = r.int(4);
        if (step === 0) await engine.checkpoint();
        else if (step === 1) {
          await engine.checkpoint();
          reader ??= await EngineReader.open(store);
          await reader.refresh();
          expect(contents(reader.scan({ prefix: "k/" })), `reader, round ${round}`).toEqual(modelContents(model));
        } else if (step === 2) {
          // Closed with a merge part way (its writes durable in the WAL or a checkpoint), reopened.
          if (r.int(2) === 0) await engine.checkpoint();
          mergesBefore += engine.stats.runMerges;
          await engine.close();
          engine = await Engine.open(store, opts);
          expect(await readAll(engine, model), `reopened, round ${round}`).toEqual(modelContents(model));
        }
      }
      expect(merges, "merges ran").toBeGreaterThan(0);
      await engine.close();
      await reader?.close();
      const last = await Engine.open(store, opts);
      expect(await readAll(last, model)).toEqual(modelContents(model));
      await last.close();
    });
  }
});
