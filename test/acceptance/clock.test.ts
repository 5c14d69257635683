/**
 * Acceptance: the "Clock" section of the public API contract.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  JobRunner,
  MemoryStore,
  MockClock,
  NoopTerminalHook,
  Queue,
  StepOutcome,
  SystemClock,
  WorkflowRuntime,
  type ClaimedJob,
  type Clock,
  type StepRunner,
} from "taquba";
import { enc, until } from "./support.js";

describe("Clock", () => {
  it("is an interface with now(): number", () => {
    expectTypeOf<Clock["now"]>().toEqualTypeOf<() => number>();
    const c: Clock = SystemClock;
    expectTypeOf(c.now()).toEqualTypeOf<number>();
  });

  it("an application clock with only now() is accepted by Queue.open, the runtime builder and the job runner, and its timers fire", async () => {
    // An application clock a day ahead of wall time: schedules follow its now().
    const clock: Clock = { now: () => Date.now() + 86_400_000 };
    const store = new MemoryStore();
    const queue = await Queue.open(store, "own-clock", { clock, flushIntervalMs: 0 });
    try {
      const runAt = clock.now() + 500;
      await queue.enqueue("jobs", enc("soon"), { runAt });
      let job: ClaimedJob | null = await queue.claim("jobs", 10_000);
      // A claim that returned before runAt was made before it: nothing was due (a loaded machine may get here later).
      if (clock.now() < runAt) expect(job).toBeNull();
      await until(async () => job !== null || (job = await queue.claim("jobs", 10_000)) !== null, "the job due on the application clock");
      expect(clock.now()).toBeGreaterThanOrEqual(runAt);
      expect(job!.lease.expiresAt).toBeGreaterThan(Date.now() + 86_000_000);
      await queue.ack(job!);

      const runner: StepRunner = { runStep: async (s) => (s.stepNumber === 0 ? StepOutcome.continueAfter(s.payload, 20) : StepOutcome.succeed(s.payload)) };
      const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook).clock(clock).build();
      const worker = runtime.spawn();
      await runtime.submit({ input: enc("x"), runId: "r" });
      expect((await runtime.wait("r")).termination).toMatchObject({ status: "succeeded", finalStep: 1 });
      await worker.shutdown();
      expect(JobRunner.builder(queue, store).clock(clock).build()).toBeInstanceOf(JobRunner);
    } finally {
      await queue.close();
    }
  });

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
