/**
 * @module runWorker: concurrency, shutdown, no polling, settlement by outcome,
 * retryAfterMs, and retries of an unreachable store on the clock.
 */
import { describe, expect, it, vi } from "vitest";
import { MemoryStore, PermanentError, runWorker, SettlementEffects, StoreUnavailableError, ValidationError, withCounting, type ClaimedJob } from "taquba";
import { failWhen } from "../support/failing-store.js";
import { eventually } from "../support/until.js";
import { dec, enc, openQueue, settle } from "./helpers.js";

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe("runWorker", () => {
  it("never runs more than `concurrency` jobs at once and processes them all", async () => {
    const { queue } = await openQueue();
    for (let i = 0; i < 20; i++) await queue.enqueue("q", enc(String(i)));
    let active = 0;
    let peak = 0;
    const seen: string[] = [];
    const ac = new AbortController();
    const done = runWorker(
      queue,
      "q",
      {
        async process(job) {
          active++;
          peak = Math.max(peak, active);
          await settle(1);
          seen.push(dec(job.payload));
          active--;
          if (seen.length === 20) ac.abort();
        },
      },
      { concurrency: 3, signal: ac.signal },
    );
    await done;
    expect(peak).toBe(3);
    expect(seen.sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
    expect(await queue.view().stats("q")).toMatchObject({ pending: 0, claimed: 0, done: 20 });
    await queue.close();
  });

  it("shutdown stops claiming and waits for in-flight jobs to settle", async () => {
    const { queue } = await openQueue();
    for (let i = 0; i < 4; i++) await queue.enqueue("q", enc(String(i)));
    const gate = deferred();
    const started: string[] = [];
    const ac = new AbortController();
    let finished = false;
    const done = runWorker(
      queue,
      "q",
      {
        async process(job) {
          started.push(job.id);
          await gate.promise;
        },
      },
      { concurrency: 2, signal: ac.signal },
    ).then(() => (finished = true));
    await settle();
    expect(started).toHaveLength(2);
    ac.abort();
    await settle();
    expect(finished).toBe(false);
    gate.resolve();
    await done;
    expect(started).toHaveLength(2);
    expect(await queue.view().stats("q")).toMatchObject({ pending: 2, claimed: 0, done: 2 });
    await queue.close();
  });

  it("does not poll: an idle worker waits without timers and takes a scheduled job exactly when due", async () => {
    const { queue, clock } = await openQueue();
    const processedAt: number[] = [];
    const ac = new AbortController();
    const done = runWorker(queue, "q", { process: async () => void processedAt.push(clock.now()) }, { signal: ac.signal });
    await settle();
    expect(clock.pendingTimers).toBe(0); // nothing due anywhere: no timer at all
    const due = clock.now() + 5000;
    await queue.enqueue("q", enc("later"), { runAt: due });
    await settle();
    expect(clock.pendingTimers).toBe(1); // the scheduler's one timer
    expect(clock.nextDeadline).toBe(due);
    clock.advance(4999);
    await settle();
    expect(processedAt).toEqual([]);
    clock.advance(1);
    await settle();
    expect(processedAt).toEqual([due]);
    // An immediate enqueue wakes the idle worker through the in-process notification.
    await queue.enqueue("q", enc("now"));
    await settle();
    expect(processedAt).toHaveLength(2);
    ac.abort();
    await done;
    await queue.close();
  });

  it("routes results: effects on ack, PermanentError dead-letters, other errors nack", async () => {
    const { queue } = await openQueue({ defaultQueueConfig: { backoff: { baseMs: 0, maxMs: 0 } } });
    const ok = await queue.enqueue("q", enc("ok"));
    const perm = await queue.enqueue("q", enc("perm"));
    const flaky = await queue.enqueue("q", enc("flaky"));
    const attempts: Record<string, number> = {};
    const ac = new AbortController();
    const done = runWorker(
      queue,
      "q",
      {
        async process(job: ClaimedJob) {
          const p = dec(job.payload);
          attempts[p] = (attempts[p] ?? 0) + 1;
          if (p === "perm") throw new PermanentError("no such order", { effects: new SettlementEffects().kvPut("perm", enc("dead")) });
          if (p === "flaky" && job.attempt < 2) throw new Error("try again");
          return new SettlementEffects().kvPut(`done/${p}`, enc("1"));
        },
      },
      { concurrency: 2, signal: ac.signal },
    );
    await eventually(async () => expect((await queue.view().stats("q")).done).toBe(2));
    ac.abort();
    await done;
    expect(attempts).toEqual({ ok: 1, perm: 1, flaky: 2 });
    expect(await queue.kvGet("done/ok")).not.toBeNull();
    expect(await queue.kvGet("done/flaky")).not.toBeNull();
    expect(await queue.kvGet("perm")).not.toBeNull();
    expect(await queue.view().job(perm.jobId)).toMatchObject({ state: "dead", lastError: "no such order", attempt: 1 });
    expect(await queue.view().job(ok.jobId)).toBeNull();
    expect(await queue.view().job(flaky.jobId)).toBeNull();
    await queue.close();
  });

  it("a non-retryable TaqubaError dead-letters like PermanentError; a retryable one is retried", async () => {
    const { queue } = await openQueue({ defaultQueueConfig: { backoff: { baseMs: 0, maxMs: 0 } } });
    const bad = await queue.enqueue("q", enc("bad"));
    await queue.enqueue("q", enc("busy"));
    const attempts: Record<string, number> = {};
    const ac = new AbortController();
    const done = runWorker(
      queue,
      "q",
      {
        async process(job: ClaimedJob) {
          const p = dec(job.payload);
          attempts[p] = (attempts[p] ?? 0) + 1;
          if (p === "bad") throw new ValidationError("the order id is malformed");
          if (job.attempt < 2) throw new StoreUnavailableError("get", "orders/1", new Error("reset"));
        },
      },
      { concurrency: 2, signal: ac.signal },
    );
    await eventually(async () => expect((await queue.view().stats("q")).done).toBe(1));
    ac.abort();
    await done;
    expect(attempts).toEqual({ bad: 1, busy: 2 });
    expect(await queue.view().job(bad.jobId)).toMatchObject({ state: "dead", lastError: "the order id is malformed", attempt: 1 });
    await queue.close();
  });

  it("a thrown error's retryAfterMs delays the retry", async () => {
    const { queue, clock } = await openQueue({ defaultQueueConfig: { backoff: { baseMs: 100, maxMs: 100 } } });
    const { jobId } = await queue.enqueue("q", enc("x"));
    let calls = 0;
    const ac = new AbortController();
    const done = runWorker(
      queue,
      "q",
      {
        async process() {
          calls++;
          if (calls === 1) throw Object.assign(new Error("busy"), { retryAfterMs: 5000 });
        },
      },
      { signal: ac.signal },
    );
    await eventually(async () => expect(await queue.view().job(jobId)).toMatchObject({ state: "scheduled", runAt: clock.now() + 5000 }));
    clock.advance(4999);
    await settle(20);
    expect(calls).toBe(1);
    clock.advance(1);
    await eventually(async () => expect(await queue.view().job(jobId)).toBeNull());
    expect(calls).toBe(2);
    ac.abort();
    await done;
    await queue.close();
  });

  it("retries a claim that failed on an unreachable store after a pause on the clock", async () => {
    let down = false;
    const store = failWhen(new MemoryStore(), (call) => (down && call === "get" ? new Error("connection reset") : undefined));
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const { queue, clock } = await openQueue({ store, payloadOffloadBytes: 8 });
    down = true;
    await queue.enqueue("q", enc("a payload larger than eight bytes"));
    const seen: string[] = [];
    const ac = new AbortController();
    const done = runWorker(queue, "q", { process: async (j) => void seen.push(dec(j.payload)) }, { signal: ac.signal });
    await eventually(() => expect(warn).toHaveBeenCalled());
    expect(seen).toEqual([]);
    down = false;
    clock.advance(999);
    await settle();
    expect(seen).toEqual([]);
    clock.advance(1);
    await eventually(() => expect(seen).toEqual(["a payload larger than eight bytes"]));
    ac.abort();
    await done;
    warn.mockRestore();
    await queue.close();
  });

  it("waits idle without touching the store, and ends when the queue closes", async () => {
    const store = withCounting(new MemoryStore());
    const { queue } = await openQueue({ store });
    let ended = false;
    const done = runWorker(queue, "q", { process: async () => undefined }).then(() => (ended = true));
    await settle();
    store.reset();
    await settle(20);
    // Waiting for work, not polling for it, and not finished.
    expect(ended).toBe(false);
    expect(store.counts).toMatchObject({ gets: 0, puts: 0, lists: 0 });
    await queue.close();
    await expect(done).resolves.toBe(true);
  });
});
