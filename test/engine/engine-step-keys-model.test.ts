/**
 * @module The engine against a plain map under the key pattern of workflow
 * steps: job records and claim markers put under ascending ids and deleted
 * a few commits later, history entries added, step pointers and counters
 * written over, and now and then a key deleted that was never there, a key
 * put and deleted in one commit, or one written from a random spot. Between
 * commits: point reads (`get`, `has`, twice in a row, so a read that
 * remembers what it found is held to the writes since), scans with
 * prefixes, bounds, limits and either direction, checkpoints and reopens.
 * The memtable is small, so freezes, runs and merges come often. Seeded
 * with `testRandom`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine, type EngineOptions, MemoryStore, type ScanOptions, WriteBatch } from "taquba";
import { stateTuning } from "../../runtime/engine/recovery.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { type TestRandom, testRandom } from "../support/seed.js";

const QUEUE = "workflow-steps";
/** Ids as a queue draws them: ascending, one shared head, 26 characters. */
const idOf = (n: number) => `01M8TVYK6X${n.toString(36).toUpperCase().padStart(16, "0")}`;

// A memtable of 48 keys: freezes, runs and their merges (part way, at times, when a read or scan comes) every few commits.
beforeAll(() => {
  stateTuning.memtableKeys = 48;
});
afterAll(() => {
  stateTuning.memtableKeys = undefined;
});

/** Checkpoints when the test asks and every few WAL objects. */
const OPTS: EngineOptions = { checkpointWalObjects: 64 };

interface Workload {
  r: TestRandom;
  /** Ids of jobs in flight (their record and claim marker live), oldest first. */
  inFlight: number[];
  nextId: number;
  runs: number;
  model: Map<string, number>;
}

/** Every key the workload may touch: what a scan's bounds and prefixes are drawn from. */
function someKey(w: Workload): string {
  const r = w.r;
  switch (r.int(8)) {
    case 0:
      return `j/${idOf(r.int(w.nextId + 2))}`;
    case 1:
      return `c/${QUEUE}/${idOf(r.int(w.nextId + 2))}`;
    case 2:
      return `u/workflow/history/${QUEUE}/${idOf(r.int(w.runs + 1))}/${r.int(12)}`;
    case 3:
      return `u/workflow/steps/${QUEUE}/${idOf(r.int(w.runs + 1))}`;
    case 4:
      return `n/${QUEUE}`;
    case 5:
      return `k/${QUEUE}/run:${idOf(r.int(w.runs + 1))}:${r.int(10)}`;
    case 6: {
      // A key ending inside a family's prefix, or just past one.
      const k = `u/workflow/history/${QUEUE}/${idOf(r.int(w.runs + 1))}/`;
      return k.slice(0, r.int(k.length + 1));
    }
    default:
      return `u/${"z".repeat(r.int(3))}`;
  }
}

/** One commit of a continuing step, or of an odd write, applied to the batch and the model. */
function stepBatch(w: Workload): WriteBatch {
  const r = w.r;
  const b = new WriteBatch();
  const put = (k: string) => {
    const v = r.int(1_000_000);
    b.put(k, bytesOf(v));
    w.model.set(k, v);
  };
  const del = (k: string) => {
    b.delete(k);
    w.model.delete(k);
  };
  const shape = r.int(10);
  if (shape <= 5) {
    // Ack one job in flight (its record read and deleted, its marker deleted) and put the next.
    if (w.inFlight.length > 0 && r.int(4) !== 0) {
      const at = r.int(Math.min(4, w.inFlight.length));
      const [acked] = w.inFlight.splice(at, 1);
      del(`c/${QUEUE}/${idOf(acked!)}`);
      del(`j/${idOf(acked!)}`);
    }
    const run = r.int(w.runs + 1);
    if (run === w.runs) w.runs++;
    put(`u/workflow/history/${QUEUE}/${idOf(run)}/${r.int(12)}`);
    put(`u/workflow/steps/${QUEUE}/${idOf(run)}`);
    const id = w.nextId++;
    put(`j/${idOf(id)}`);
    put(`c/${QUEUE}/${idOf(id)}`);
    w.inFlight.push(id);
    if (r.int(5) === 0) put(`n/${QUEUE}`);
  } else if (shape === 6) {
    // Put and deleted in one commit, or deleted without ever being there.
    const k = someKey(w);
    if (r.int(2) === 0) put(k);
    del(k);
  } else if (shape === 7) {
    // A run ends: its step pointer and history go.
    const run = r.int(w.runs + 1);
    del(`u/workflow/steps/${QUEUE}/${idOf(run)}`);
    for (let i = 0; i < 12; i++) if (r.int(2) === 0) del(`u/workflow/history/${QUEUE}/${idOf(run)}/${i}`);
  } else {
    for (let i = r.int(6); i >= 0; i--) (r.int(3) === 0 ? del : put)(someKey(w));
  }
  return b;
}

function bytesOf(n: number): Uint8Array {
  const v = new Uint8Array(4);
  new DataView(v.buffer).setUint32(0, n);
  return v;
}

function numberOf(v: Uint8Array | undefined): number | undefined {
  return v === undefined ? undefined : new DataView(v.buffer, v.byteOffset, v.byteLength).getUint32(0);
}

/** The model's answer to a scan: these keys are ASCII, so UTF-16 order is the engine's. */
function modelScan(model: Map<string, number>, o: ScanOptions): [string, number][] {
  let keys = [...model.keys()].sort();
  const prefix = o.prefix ?? "";
  keys = keys.filter(
    (k) => k.startsWith(prefix) && (o.start === undefined || (o.startExclusive ? k > o.start : k >= o.start)) && (o.end === undefined || k < o.end),
  );
  if (o.reverse) keys.reverse();
  if (o.limit !== undefined) keys = keys.slice(0, o.limit);
  return keys.map((k) => [k, model.get(k)!]);
}

function scanOptions(w: Workload): ScanOptions {
  const r = w.r;
  const o: ScanOptions = {};
  if (r.int(3) !== 0) {
    const k = someKey(w);
    o.prefix = k.slice(0, r.int(k.length + 1));
  }
  if (r.int(3) === 0) o.start = someKey(w);
  if (o.start !== undefined && r.int(2) === 0) o.startExclusive = true;
  if (r.int(3) === 0) o.end = someKey(w);
  if (r.int(3) === 0) o.limit = r.int(20);
  if (r.int(2) === 0) o.reverse = true;
  return o;
}

function checkReads(engine: Engine, w: Workload): void {
  const r = w.r;
  for (let i = 0; i < 6; i++) {
    // Mostly keys the model holds or just deleted: the ones a step reads.
    const k = r.int(2) === 0 && w.inFlight.length > 0 ? `j/${idOf(w.inFlight[r.int(w.inFlight.length)]!)}` : someKey(w);
    const want = w.model.get(k);
    for (let twice = 0; twice < 2; twice++) {
      expect(numberOf(engine.get(k)), `get ${k}`).toBe(want);
      expect(engine.has(k), `has ${k}`).toBe(want !== undefined);
    }
  }
  const o = scanOptions(w);
  const got = [...engine.scan(o)].map(([k, v]) => [k, numberOf(v)]);
  expect(got, `scan ${JSON.stringify(o)}`).toEqual(modelScan(w.model, o));
}

describe("the engine under workflow steps' keys against a plain map", () => {
  it(
    "answers gets, has and scans as the model does through freezes, merges, checkpoints and reopens",
    async () => {
      const r = testRandom("engine step keys model");
      const store = new MemoryStore();
      const w: Workload = { r, inFlight: [], nextId: 0, runs: 0, model: new Map() };
      let engine = await Engine.open(store, OPTS);
      // What the engines did, so the test shows it went through freezes and run merges.
      let freezes = 0;
      let merges = 0;
      const count = (e: Engine) => {
        freezes += e.stats.memtableFreezes;
        merges += e.stats.runMerges;
      };
      try {
        for (let round = 0; round < 4_000; round++) {
          const pick = r.int(100);
          if (pick < 78) await engine.commit(stepBatch(w), { durable: r.int(4) === 0 });
          else if (pick < 95) checkReads(engine, w);
          else if (pick < 99) await engine.checkpoint();
          else {
            count(engine);
            await engine.close();
            engine = await Engine.open(store, OPTS);
          }
        }
        // Everything once more, in both directions, after a last reopen.
        count(engine);
        await engine.close();
        engine = await Engine.open(store, OPTS);
        const all = [...engine.scan()].map(([k, v]) => [k, numberOf(v)]);
        expect(all).toEqual(modelScan(w.model, {}));
        const back = [...engine.scan({ reverse: true })].map(([k, v]) => [k, numberOf(v)]);
        expect(back).toEqual(modelScan(w.model, { reverse: true }));
        expect(freezes).toBeGreaterThan(20);
        expect(merges).toBeGreaterThan(0);
      } finally {
        await engine.close();
      }
    },
    HEAVY_TEST_MS,
  );
});
