import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue, runWorker, SystemClock, ValidationError, type Clock } from "taquba";
import { cancellableCall, cancellableWait, timedClock } from "../../runtime/clock.js";

describe("MockClock", () => {
  it("wakes waiters in deadline order only when advanced past their deadline", async () => {
    const clock = new MockClock(1_000);
    const woken: string[] = [];
    const a = clock.waitUntil(1_500).then(() => woken.push("a"));
    const b = clock.waitUntil(1_200).then(() => woken.push("b"));
    clock.advance(100);
    await Promise.resolve();
    expect(woken).toEqual([]);
    expect(clock.pendingTimers).toBe(2);
    expect(clock.nextDeadline).toBe(1_200);
    clock.advance(400);
    await Promise.all([a, b]);
    expect(woken).toEqual(["b", "a"]);
    expect(clock.pendingTimers).toBe(0);
  });

  it("resolves at once for a deadline already passed", async () => {
    const clock = new MockClock(5_000);
    await expect(clock.waitUntil(5_000)).resolves.toBeUndefined();
    expect(clock.pendingTimers).toBe(0);
  });

  it("rejects and forgets a wait whose signal aborts", async () => {
    const clock = new MockClock(0);
    const ac = new AbortController();
    const wait = clock.waitUntil(10, ac.signal);
    ac.abort(new Error("stop"));
    await expect(wait).rejects.toThrow("stop");
    expect(clock.pendingTimers).toBe(0);
    await expect(clock.waitUntil(10, ac.signal)).rejects.toThrow("stop");
  });

  it("refuses to move backwards through advance", () => {
    const clock = new MockClock(0);
    expect(() => clock.advance(-1)).toThrow(ValidationError);
    clock.set(-5);
    expect(clock.now()).toBe(-5);
  });
});

describe("SystemClock", () => {
  it("waits for a real deadline and can be aborted", async () => {
    const start = Date.now();
    await SystemClock.waitUntil(start + 20);
    expect(Date.now()).toBeGreaterThanOrEqual(start + 20);
    const ac = new AbortController();
    const wait = SystemClock.waitUntil(Date.now() + 60_000, ac.signal);
    ac.abort(new Error("bye"));
    await expect(wait).rejects.toThrow("bye");
  });
});

describe("cancellableWait", () => {
  const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;

  it("on the system clock: resolves at the deadline, and cancel resolves at once and drops the timer", async () => {
    const start = Date.now();
    await cancellableWait(SystemClock, start + 20).promise;
    expect(Date.now()).toBeGreaterThanOrEqual(start + 20);
    const before = timeouts();
    const w = cancellableWait(SystemClock, Date.now() + 60_000);
    expect(timeouts()).toBe(before + 1);
    w.cancel();
    await expect(w.promise).resolves.toBeUndefined();
    expect(timeouts()).toBe(before);
    w.cancel(); // a second cancel is harmless
  });

  it("on a clock with only now(): follows its readings; cancel drops the timer", async () => {
    let offset = 0;
    const plain: Clock = { now: () => 5_000_000 + Date.now() + offset };
    const timed = timedClock(plain);
    const before = timeouts();
    const first = cancellableWait(timed, plain.now() + 60_000);
    first.cancel();
    await first.promise;
    expect(timeouts()).toBe(before);
    // A deadline the clock already passed resolves without a timer.
    offset = 10_000;
    await cancellableWait(timed, plain.now() - 1).promise;
    const start = Date.now();
    await cancellableWait(timed, plain.now() + 30).promise;
    expect(Date.now() - start).toBeGreaterThanOrEqual(25);
  });

  it("on a MockClock: resolves when advanced, and cancel forgets the mock timer", async () => {
    const clock = new MockClock(1_000);
    let done = false;
    const w = cancellableWait(clock, 1_500);
    void w.promise.then(() => (done = true));
    clock.advance(400);
    await Promise.resolve();
    expect(done).toBe(false);
    clock.advance(100);
    await w.promise;
    expect(clock.pendingTimers).toBe(0);
    const c = cancellableWait(clock, 9_000);
    expect(clock.pendingTimers).toBe(1);
    c.cancel();
    await expect(c.promise).resolves.toBeUndefined();
    expect(clock.pendingTimers).toBe(0);
  });
});

describe("cancellableCall", () => {
  const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;

  it("on the system clock: calls once at the deadline; cancel drops the timer and the call", async () => {
    const start = Date.now();
    let calls = 0;
    await new Promise<void>((resolve) =>
      cancellableCall(SystemClock, start + 20, () => {
        calls++;
        resolve();
      }),
    );
    expect(Date.now()).toBeGreaterThanOrEqual(start + 20);
    const before = timeouts();
    let cancelled = 0;
    const c = cancellableCall(SystemClock, Date.now() + 30, () => cancelled++);
    expect(timeouts()).toBe(before + 1);
    c.cancel();
    expect(timeouts()).toBe(before);
    await new Promise((r) => setTimeout(r, 60));
    expect(cancelled).toBe(0);
    expect(calls).toBe(1);
    c.cancel(); // a second cancel is harmless
  });

  it("on a clock with only now(): follows its readings, and calls at once for a deadline already passed", async () => {
    let offset = 0;
    const plain: Clock = { now: () => 5_000_000 + Date.now() + offset };
    const timed = timedClock(plain);
    let calls = 0;
    cancellableCall(timed, plain.now() - 1, () => calls++);
    expect(calls).toBe(1);
    const before = timeouts();
    const later = cancellableCall(timed, plain.now() + 60_000, () => calls++);
    // The clock jumps past the deadline: the timer, when it fires, re-reads the clock rather than trusting its delay.
    offset = 120_000;
    later.cancel();
    expect(timeouts()).toBe(before);
    const start = Date.now();
    await new Promise<void>((resolve) => cancellableCall(timed, plain.now() + 30, resolve));
    expect(Date.now() - start).toBeGreaterThanOrEqual(25);
    expect(calls).toBe(1);
  });

  it("on a MockClock: calls when advanced; a cancel, even after the clock passed the deadline in the same turn, drops the call", async () => {
    const clock = new MockClock(1_000);
    let calls = 0;
    cancellableCall(clock, 1_500, () => calls++);
    clock.advance(400);
    await new Promise((r) => setImmediate(r));
    expect(calls).toBe(0);
    clock.advance(100);
    await new Promise((r) => setImmediate(r));
    expect(calls).toBe(1);
    expect(clock.pendingTimers).toBe(0);
    const c = cancellableCall(clock, 9_000, () => calls++);
    expect(clock.pendingTimers).toBe(1);
    c.cancel();
    expect(clock.pendingTimers).toBe(0);
    const late = cancellableCall(clock, clock.now() + 1_000, () => calls++);
    clock.advance(1_000);
    late.cancel();
    await new Promise((r) => setImmediate(r));
    expect(calls).toBe(1);
  });
});

describe("a clock with only now()", () => {
  it("timedClock waits with real timers against its now()", async () => {
    let offset = 0;
    const plain: Clock = { now: () => 5_000_000 + Date.now() + offset };
    const timed = timedClock(plain);
    expect(timedClock(SystemClock)).toBe(SystemClock);
    const start = Date.now();
    await timed.waitUntil(plain.now() + 30);
    expect(Date.now() - start).toBeGreaterThanOrEqual(25);
    // The clock jumping ahead is noticed when the next timer fires.
    offset = 10_000;
    await timed.waitUntil(plain.now() - 1);
    const ac = new AbortController();
    const wait = timed.waitUntil(plain.now() + 60_000, ac.signal);
    ac.abort(new Error("stop"));
    await expect(wait).rejects.toThrow("stop");
  });

  it("drives a queue's schedule: a delayed job is claimable once the clock reaches it", async () => {
    const plain: Clock = { now: () => 9_000_000_000_000 + Date.now() };
    const queue = await Queue.open(new MemoryStore(), "plain-clock", { clock: plain, flushIntervalMs: 0 });
    const runAt = plain.now() + 500;
    await queue.enqueue("q", new Uint8Array([1]), { runAt });
    const early = await queue.claim("q");
    if (early !== null) {
      // Only a machine so loaded that runAt passed during the claim may hand it out now.
      expect(plain.now()).toBeGreaterThanOrEqual(runAt);
      await queue.close();
      return;
    }
    // The worker sleeps on the queue's scheduler timer, which for this clock is a real timer.
    let processedAt = 0;
    let processed!: () => void;
    const done = new Promise<void>((r) => (processed = r));
    const ac = new AbortController();
    const worker = runWorker(queue, "q", { process: async () => ((processedAt = plain.now()), processed()) }, { signal: ac.signal });
    await done;
    expect(processedAt).toBeGreaterThanOrEqual(runAt);
    ac.abort();
    await worker;
    await queue.close();
  });
});
