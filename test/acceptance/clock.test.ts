/**
 * Acceptance: the "Clock" section of the public API contract.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import { MemoryStore, MockClock, Queue, SystemClock, type ClaimedJob, type Clock } from "taquba";
import { enc, until } from "./support.js";

describe("Clock", () => {
  it("is an interface with now(): number", () => {
    expectTypeOf<Clock["now"]>().toEqualTypeOf<() => number>();
    const c: Clock = SystemClock;
    expectTypeOf(c.now()).toEqualTypeOf<number>();
  });

  it.todo(
    "a user clock implementing only now() (as the contract's `interface Clock { now(): number }` reads) is accepted by Queue.open and the builder: gap, Clock also requires waitUntil(at, signal?)",
  );

  it("SystemClock reads wall-clock epoch milliseconds", () => {
    const before = Date.now();
    const now = SystemClock.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });
});

describe("MockClock", () => {
  it("new MockClock(startMs) starts there; advance(ms) and set(ms) move it", () => {
    const clock = new MockClock(1_000);
    expect(clock.now()).toBe(1_000);
    clock.advance(250);
    expect(clock.now()).toBe(1_250);
    clock.set(10_000);
    expect(clock.now()).toBe(10_000);
    const asClock: Clock = clock;
    expect(asClock.now()).toBe(10_000);
  });

  it("advancing wakes every timer that depends on it: a scheduled job becomes claimable", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const queue = await Queue.open(new MemoryStore(), "clock", { clock, flushIntervalMs: 0 });
    try {
      await queue.enqueue("jobs", enc("later"), { runAt: clock.now() + 60_000 });
      expect(await queue.claim("jobs", 10_000)).toBeNull();
      clock.advance(59_999);
      expect(await queue.claim("jobs", 10_000)).toBeNull();
      clock.advance(1);
      // Promotion runs in the background once the clock's timer fires.
      let job: ClaimedJob | null = null;
      await until(async () => (job = await queue.claim("jobs", 10_000)) !== null, "the due job to be claimable");
      await queue.ack(job!);
    } finally {
      await queue.close();
    }
  });

  it("set(ms) wakes a waiting consumer once its deadline has passed", async () => {
    const clock = new MockClock(0);
    const queue = await Queue.open(new MemoryStore(), "clock2", { clock, flushIntervalMs: 0 });
    try {
      await queue.enqueue("jobs", enc("x"), { runAt: 5_000 });
      expect(await queue.claim("jobs", 1_000)).toBeNull();
      clock.set(5_000);
      await until(async () => (await queue.claim("jobs", 1_000)) !== null, "the due job to be claimable");
    } finally {
      await queue.close();
    }
  });
});
