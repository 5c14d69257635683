/**
 * @module Incremental checkpoints: runs of changed keys (with tombstones) on
 * top of a full snapshot, compaction back to one run, recovery and readers
 * across several runs, a failed checkpoint forcing a full one, and a crash
 * (the store cut off) at every store write of a checkpoint sequence.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, StoreUnavailableError, WriteBatch, type ObjectStore } from "taquba";
import { orderChanges } from "../../runtime/engine/change-order.js";
import { ChangedKeys, ChangedKeysSpares } from "../../runtime/engine/changed-keys.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { failWhen } from "../support/failing-store.js";
import { HEAVY_TEST_MS } from "../support/load.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const retry = { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 };
const manual = { checkpointWalObjects: 0, checkpointWalBytes: 0, retry, onBackgroundError: () => {} };

type Model = Map<string, string>;

function contents(view: { scan(): Iterable<[string, Uint8Array]> }): Model {
  const out: Model = new Map();
  for (const [k, v] of view.scan()) out.set(k, dec(v));
  return out;
}

function sorted(m: Model): [string, string][] {
  return [...m.entries()].sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

/** A batch of puts and deletes over keys `k/000`..`k/<space>`, applied to `model` too. */
function changes(model: Model, seed: number, n: number, space: number): WriteBatch {
  const b = new WriteBatch();
  let x = seed * 7919 + 13;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    // The high bits: an LCG's low bits repeat with short periods.
    const r = Math.floor(x / 65536);
    const key = `k/${String(r % space).padStart(5, "0")}`;
    if (r % 3 === 0) {
      b.delete(key);
      model.delete(key);
    } else {
      const value = `${seed}.${i}`;
      b.put(key, enc(value));
      model.set(key, value);
    }
  }
  return b;
}

async function segmentKeys(store: ObjectStore): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list("seg/")) out.push(o.key);
  return out;
}

describe("incremental checkpoints", () => {
  it("add one run per checkpoint, compact at maxSegmentRuns, and reopen and read the same state at every step", async () => {
    const store = new MemoryStore();
    const model: Model = new Map();
    let engine = await Engine.open(store, { ...manual, maxSegmentRuns: 4 });
    await engine.commit(changes(model, 1, 3000, 2000));
    await engine.checkpoint();
    expect(engine.stats).toMatchObject({ checkpoints: 1, compactions: 1, segmentRuns: 1 });
    const reader = await EngineReader.open(store);
    const runs: number[] = [];
    for (let round = 2; round < 9; round++) {
      await engine.commit(changes(model, round, 40, 2000));
      await engine.checkpoint();
      runs.push(engine.stats.segmentRuns);
      expect(contents(engine)).toEqual(model);
      await reader.refresh();
      expect(sorted(contents(reader))).toEqual(sorted(model));
      const fresh = await EngineReader.open(store);
      expect(sorted(contents(fresh))).toEqual(sorted(model));
      if (round % 3 === 0) {
        await engine.close();
        engine = await Engine.open(store, { ...manual, maxSegmentRuns: 4 });
        expect(sorted(contents(engine))).toEqual(sorted(model));
      }
    }
    // Runs grow by one per checkpoint until the fourth, then a compaction rewrites one run.
    expect(runs).toEqual([2, 3, 4, 1, 2, 3, 4]);
    // Garbage collection leaves exactly the segments the current manifest lists.
    expect((await segmentKeys(store)).length).toBe(engine.stats.segmentRuns);
    await engine.close();
  });

  it("make each checkpoint's changed-keys map from the arrays of the one before it, and read the same state after reopen", async () => {
    const store = new MemoryStore();
    const model: Model = new Map();
    let engine = await Engine.open(store, { ...manual, maxSegmentRuns: 3 });
    const taken = ChangedKeysSpares.taken;
    for (let round = 1; round <= 8; round++) {
      await engine.commit(changes(model, round, 500, 3000));
      await engine.checkpoint();
      expect(contents(engine)).toEqual(model);
    }
    // The first cut's map comes from nothing; every later cut's from the map the checkpoint before it was done with
    // (compactions, which take a snapshot instead, give none back: two of the eight checkpoints here).
    expect(engine.stats.compactions).toBeGreaterThan(0);
    expect(ChangedKeysSpares.taken - taken).toBeGreaterThanOrEqual(8 - 1 - engine.stats.compactions);
    await engine.close();
    engine = await Engine.open(store, { ...manual, maxSegmentRuns: 3 });
    expect(sorted(contents(engine))).toEqual(sorted(model));
    await engine.close();
  });

  it("write bytes proportional to the change, not to the state", async () => {
    const store = new MemoryStore();
    const model: Model = new Map();
    const engine = await Engine.open(store, manual);
    const big = new WriteBatch();
    for (let i = 0; i < 20_000; i++) big.put(`big/${String(i).padStart(6, "0")}`, new Uint8Array(64));
    await engine.commit(big);
    await engine.checkpoint();
    const full = engine.stats.checkpointBytes;
    await engine.commit(changes(model, 5, 20, 100));
    await engine.checkpoint();
    const incremental = engine.stats.checkpointBytes - full;
    expect(engine.stats.compactions).toBe(1);
    expect(incremental).toBeGreaterThan(0);
    expect(incremental * 100).toBeLessThan(full);
    await engine.close();
    const reopened = await Engine.open(store, manual);
    expect([...reopened.scan({ prefix: "big/" })]).toHaveLength(20_000);
    expect(contents({ scan: () => reopened.scan({ prefix: "k/" }) })).toEqual(model);
    await reopened.close();
  });

  it("an incremental run of thousands of changed keys reopens exactly; more than half the state changed makes a full one", async () => {
    const store = new MemoryStore();
    const model: Model = new Map();
    const engine = await Engine.open(store, manual);
    await engine.commit(changes(model, 1, 40_000, 20_000));
    await engine.checkpoint();
    await engine.commit(changes(model, 2, 3000, 20_000));
    await engine.checkpoint();
    expect(model.size).toBeGreaterThan(7000);
    expect(engine.stats).toMatchObject({ compactions: 1, segmentRuns: 2 });
    const size = model.size;
    const churn = new WriteBatch();
    for (let i = 0; i < size; i++) churn.put(`churn/${i}`, enc("c")).delete(`churn/${i}`);
    await engine.commit(churn);
    await engine.checkpoint();
    expect(engine.stats).toMatchObject({ compactions: 2, segmentRuns: 1 });
    await engine.close();
    const reopened = await Engine.open(store, manual);
    expect(sorted(contents(reopened))).toEqual(sorted(model));
    await reopened.close();
  });

  it("a change to more than half the state, short of all of it, makes the next checkpoint a full one", async () => {
    const engine = await Engine.open(new MemoryStore(), manual);
    const fill = new WriteBatch();
    for (let i = 0; i < 6000; i++) fill.put(`k/${i}`, enc("a"));
    await engine.commit(fill);
    await engine.checkpoint();
    expect(engine.stats).toMatchObject({ compactions: 1, segmentRuns: 1 });
    // 4500 of 6000 keys: past the delta's bound (over 4096 and over half the state), under the state's size.
    const change = new WriteBatch();
    for (let i = 0; i < 4500; i++) change.put(`k/${i}`, enc("b"));
    await engine.commit(change);
    await engine.checkpoint();
    expect(engine.stats).toMatchObject({ compactions: 2, segmentRuns: 1 });
    await engine.close();
  });

  it("a deleted key stays deleted across runs and a compaction", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, { ...manual, maxSegmentRuns: 3 });
    const filler = new WriteBatch();
    for (let i = 0; i < 100; i++) filler.put(`f/${i}`, enc("x"));
    await engine.commit(filler.put("gone", enc("1")).put("back", enc("1")));
    await engine.checkpoint();
    await engine.commit(new WriteBatch().delete("gone").delete("back"));
    await engine.checkpoint();
    await engine.commit(new WriteBatch().put("back", enc("2")));
    await engine.checkpoint();
    expect(engine.stats.segmentRuns).toBe(3);
    await engine.close();
    let reopened = await Engine.open(store, { ...manual, maxSegmentRuns: 3 });
    expect(reopened.has("gone")).toBe(false);
    expect(dec(reopened.get("back")!)).toBe("2");
    await reopened.commit(new WriteBatch().put("x", enc("1")));
    await reopened.checkpoint();
    expect(reopened.stats).toMatchObject({ compactions: 1, segmentRuns: 1 });
    await reopened.close();
    reopened = await Engine.open(store, manual);
    expect(reopened.has("gone")).toBe(false);
    expect(dec(reopened.get("back")!)).toBe("2");
    await reopened.close();
  });

  it("after a failed checkpoint, the next one rewrites the whole state, so the lost run's keys are kept", async () => {
    const inner = new MemoryStore();
    let failSegments = false;
    const store = failWhen(inner, (call, key) => (failSegments && call === "put" && key.includes("seg/") ? new Error("segment put refused") : undefined));
    const model: Model = new Map();
    const engine = await Engine.open(store, manual);
    await engine.commit(changes(model, 1, 2000, 1000));
    await engine.checkpoint();
    await engine.commit(changes(model, 2, 30, 1000));
    failSegments = true;
    await expect(engine.checkpoint()).rejects.toSatisfy(
      (e: unknown) => e instanceof StoreUnavailableError && /segment put refused/.test(String((e.cause as Error).message)),
    );
    failSegments = false;
    await engine.commit(changes(model, 3, 30, 1000));
    await engine.checkpoint();
    expect(engine.stats).toMatchObject({ checkpoints: 2, compactions: 2 });
    await engine.close();
    const reopened = await Engine.open(inner, manual);
    expect(sorted(contents(reopened))).toEqual(sorted(model));
    await reopened.close();
  });

  it("replays the WAL after reopen into the next incremental checkpoint", async () => {
    const store = new MemoryStore();
    const model: Model = new Map();
    const first = await Engine.open(store, manual);
    await first.commit(changes(model, 1, 2000, 1000));
    await first.checkpoint();
    await first.commit(changes(model, 2, 50, 1000));
    await first.close(); // these 50 changes live only in the WAL
    const second = await Engine.open(store, manual);
    await second.commit(changes(model, 3, 50, 1000));
    await second.checkpoint();
    expect(second.stats).toMatchObject({ compactions: 0, segmentRuns: 2 });
    await second.close();
    const third = await Engine.open(store, manual);
    expect(sorted(contents(third))).toEqual(sorted(model));
    await third.close();
  });
});

describe("ordering a checkpoint's changes", () => {
  it("yields every changed key once, in compareKeys order, across many sorted chunks", async () => {
    const delta = new ChangedKeys();
    const alphabet = ["a", "b", "z", "é", "\u{ffff}", "\u{10000}", "\u{1f600}", "\ue000", "/"];
    // Every key of up to four characters of the alphabet, inserted in a scrambled order.
    const keys: string[] = [""];
    for (let len = 0; len < 4; len++) for (const k of keys.filter((k) => [...k].length === len)) for (const c of alphabet) keys.push(k + c);
    for (let i = 1; i < keys.length; i++) {
      const key = keys[(i * 7919) % keys.length]!;
      delta.set(key, i % 5 === 0 ? null : enc(key));
    }
    expect(delta.size).toBeGreaterThan(6000);
    const ordered = [
      ...(await orderChanges(
        delta,
        () => false,
        () => new Error("stopped"),
      )),
    ];
    const expected = [...delta.keys()].sort(compareKeys);
    expect(ordered.map(([k]) => k)).toEqual(expected);
    for (const [k, v] of ordered) expect(v).toBe(delta.get(k));
  });

  it("stops when the engine stops", async () => {
    const delta = new ChangedKeys();
    for (let i = 0; i < 200_000; i++) delta.set(`k/${(i * 7919) % 200_003}`, null);
    await expect(
      orderChanges(
        delta,
        () => true,
        () => new Error("stopped"),
      ),
    ).rejects.toThrow("stopped");
  });
});

describe("incremental checkpoints under a crash at every store write", () => {
  /** Builds a store with a full run and one incremental run, closed cleanly. */
  async function setUp(): Promise<{ inner: MemoryStore; model: Model }> {
    const inner = new MemoryStore();
    const model: Model = new Map();
    const e = await Engine.open(inner, { ...manual, maxSegmentRuns: 3 });
    await e.commit(changes(model, 1, 600, 400));
    await e.checkpoint();
    await e.commit(changes(model, 2, 40, 400));
    await e.checkpoint();
    await e.close();
    return { inner, model };
  }

  /**
   * Opens a writer that may perform only `budget` store writes (puts and
   * deletes) before the store stops answering, as if the process died there;
   * runs commits and checkpoints (incremental, then a compaction) until the
   * first failure. Returns the model of acknowledged commits and the writes made.
   */
  async function crashAfter(inner: MemoryStore, model: Model, budget: number): Promise<number> {
    let writes = 0;
    const store = failWhen(inner, (call) => {
      if (call !== "put" && call !== "delete") return writes >= budget ? new Error("process gone") : undefined;
      return writes++ >= budget ? new Error("process gone") : undefined;
    });
    let engine: Engine;
    try {
      engine = await Engine.open(store, { ...manual, maxSegmentRuns: 3 });
    } catch {
      return writes;
    }
    try {
      for (let round = 10; round < 14; round++) {
        const pending = new Map(model);
        const batch = changes(pending, round, 40, 400);
        await engine.commit(batch);
        model.clear();
        for (const [k, v] of pending) model.set(k, v);
        await engine.checkpoint();
      }
    } catch {
      // The process is gone; nothing after this point happened.
    }
    return writes;
  }

  it("recovers exactly the acknowledged commits wherever the writer stops, and carries on", { timeout: HEAVY_TEST_MS }, async () => {
    const probe = await setUp();
    const total = await crashAfter(probe.inner, probe.model, Number.POSITIVE_INFINITY);
    expect(total).toBeGreaterThan(15);
    for (let budget = 0; budget <= total; budget++) {
      const { inner, model } = await setUp();
      await crashAfter(inner, model, budget);
      const reader = await EngineReader.open(inner);
      expect(sorted(contents(reader)), `reader, crash after ${budget} writes`).toEqual(sorted(model));
      const engine = await Engine.open(inner, { ...manual, maxSegmentRuns: 3 });
      expect(sorted(contents(engine)), `writer, crash after ${budget} writes`).toEqual(sorted(model));
      await engine.commit(changes(model, 99, 40, 400));
      await engine.checkpoint();
      await engine.close();
      const again = await Engine.open(inner, manual);
      expect(sorted(contents(again)), `after carrying on from ${budget}`).toEqual(sorted(model));
      await again.close();
    }
  });
});
