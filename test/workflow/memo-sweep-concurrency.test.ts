/**
 * @module Clearing memo entries and the memo-retention sweep: deletes run
 * with bounded concurrency, large runs are cleared in bounded chunks, one
 * pass runs at a time, and a shutdown does not wait for a sweep backlog.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MemoStore, StepOutcome, type ObjectStore } from "taquba";
import { enc, openEnv, overInline, runnerOf, until } from "./helpers.js";

/** A memory store that counts deletes (and those in flight) and can hold them until released. */
function deleteCountingStore() {
  const inner = new MemoryStore();
  let holding = false;
  let waiters: Array<() => void> = [];
  const s = {
    inFlight: 0,
    maxInFlight: 0,
    deletes: 0,
    held: 0,
    hold() {
      holding = true;
    },
    release() {
      holding = false;
      const w = waiters;
      waiters = [];
      for (const f of w) f();
    },
    get: (k: string) => inner.get(k),
    put: (k: string, b: Uint8Array, o?: { ifNoneMatch?: "*" }) => inner.put(k, b, o),
    list: (p: string, o?: { startAfter?: string }) => inner.list(p, o),
    async delete(k: string) {
      s.deletes++;
      s.inFlight++;
      s.maxInFlight = Math.max(s.maxInFlight, s.inFlight);
      try {
        if (holding) {
          s.held++;
          await new Promise<void>((r) => waiters.push(r));
        }
        // Let every other delete that can start, start.
        await new Promise<void>((r) => setImmediate(r));
        await inner.delete(k);
      } finally {
        s.inFlight--;
      }
    },
  };
  return s satisfies ObjectStore;
}

async function count(store: ObjectStore, prefix: string): Promise<number> {
  let n = 0;
  for await (const _ of store.list(prefix)) n++;
  return n;
}

describe("clearing a run's memo entries", () => {
  it("deletes 16 objects at a time", async () => {
    const store = deleteCountingStore();
    const memos = new MemoStore(store, "p");
    for (let i = 0; i < 40; i++) await memos.newMemo("r", i % 3).put(`k${i}`, enc("v"));
    await memos.runMemo("other").put("k", enc("v"));
    expect(await memos.clearMemosForRun("r")).toBe(40);
    expect(store.maxInFlight).toBe(16);
    expect(await count(store, "p/memos/r/")).toBe(0);
    expect(await count(store, "p/memos/other/")).toBe(1);
  });

  it("clears a run with more entries than one listing chunk", async () => {
    const store = deleteCountingStore();
    const memos = new MemoStore(store, "p");
    const n = 2_345;
    await Promise.all(Array.from({ length: n }, (_, i) => memos.newMemo("big", 0).put(`k${i}`, enc("v"))));
    expect(await memos.clearMemosForRun("big")).toBe(n);
    expect(store.deletes).toBe(n);
    expect(await count(store, "p/memos/big/")).toBe(0);
  });
});

describe("the memo-retention sweep", () => {
  async function terminatedRuns(n: number) {
    const store = deleteCountingStore();
    const env = await openEnv(
      runnerOf(async (s) => {
        await s.memo.put("m", enc("1"));
        return StepOutcome.succeed(overInline("done"));
      }),
      { store, configure: (b) => b.memoRetention(1_000).pollIntervalMs(3_600_000) },
    );
    for (let i = 0; i < n; i++) await env.runtime.submit({ input: enc("x"), runId: `r${i}` });
    for (let i = 0; i < n; i++) await env.runtime.wait(`r${i}`);
    return { env, store };
  }

  it("lets a shutdown stop it between runs instead of waiting for the whole backlog", async () => {
    const { env, store } = await terminatedRuns(30);
    store.hold();
    env.clock.advance(2_000);
    // Wake the sweep loop (it sleeps a poll interval after its start-up pass).
    env.clock.advance(3_600_000);
    await until(() => store.held > 0, "the sweep deleting");
    const stopping = env.worker!.shutdown();
    store.release();
    await stopping;
    let left = 0;
    for (let i = 0; i < 30; i++) if ((await env.runtime.status(`r${i}`)) !== null) left++;
    // Only the runs being cleared when the shutdown came were finished.
    expect(left).toBeGreaterThanOrEqual(30 - 4);
    // What is left is swept by a later pass.
    expect(await env.runtime.sweepMemos()).toBe(left);
    await env.queue.close();
  });

  it("a caller's sweep during a pass on the poll interval waits for it, counts what it swept and deletes nothing twice", async () => {
    const { env, store } = await terminatedRuns(6);
    store.deletes = 0;
    store.hold();
    env.clock.advance(2_000);
    // Wake the sweep loop (it sleeps a poll interval after its start-up pass).
    env.clock.advance(3_600_000);
    await until(() => store.held > 0, "the loop's pass deleting");
    const mine = env.runtime.sweepMemos();
    store.release();
    expect(await mine).toBe(6);
    for (let i = 0; i < 6; i++) expect(await env.runtime.status(`r${i}`)).toBeNull();
    // Each run's memo entry and run result record, deleted once.
    expect(store.deletes).toBe(12);
    await env.stop();
  });

  it("runs one pass at a time: a concurrent caller joins the pass in progress", async () => {
    const { env, store } = await terminatedRuns(6);
    await env.worker!.shutdown();
    // Count the pass's deletes only (opening the queue's engine deletes its store probe).
    store.deletes = 0;
    store.hold();
    env.clock.advance(2_000);
    const a = env.runtime.sweepMemos();
    await until(() => store.held > 0, "the sweep deleting");
    const b = env.runtime.sweepMemos();
    store.release();
    expect(await a).toBe(6);
    expect(await b).toBe(6);
    // Each run's memo entry and run result record, deleted once.
    expect(store.deletes).toBe(12);
    await env.queue.close();
  });
});
