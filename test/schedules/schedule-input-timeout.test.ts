/**
 * @module A schedule input handler that never settles: after the runtime's
 * `scheduleInputTimeout` (on its clock) the tick starts no run and is
 * recorded in the schedule's `lastFailure`, like a handler that threw, and
 * the other schedules of the runtime tick on (before, the scheduler waited
 * for the handler forever). A handler that answers in time is unaffected.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore, MockClock, NoopTerminalHook, Queue, StepOutcome, ValidationError, WorkflowRuntime, type RunnerHandle } from "../../runtime/index.js";
import { enc, until } from "../workflow/helpers.js";

const MIN = 60_000;
const T0 = Date.parse("2026-01-05T00:00:30Z");
const TICK = T0 + 30_000;
const TIMEOUT = 5_000;

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

describe("a schedule input handler that never settles", () => {
  it("times out on the runtime's clock, records the tick as failed, and the other schedules tick on", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(T0);
    const queue = await Queue.open(store, "app", { clock, flushIntervalMs: 1 });
    const started = new Set<string>();
    const runner = {
      runStep: async (s: { runId: string; stepNumber: number; payload: Uint8Array }) => {
        if (s.stepNumber === 0) started.add(s.runId);
        return StepOutcome.succeed(s.payload);
      },
    };
    const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook)
      .logger({ error: () => undefined })
      .scheduleInputTimeout(TIMEOUT)
      .build();
    let calls = 0;
    const signals: AbortSignal[] = [];
    // Decided first (ids in order): before the fix it held every schedule after it.
    await runtime.schedules.upsert({
      id: "a-stuck",
      cron: "* * * * *",
      run: {
        input: ({ signal }) => {
          calls++;
          signals.push(signal);
          return new Promise<Uint8Array>(() => undefined);
        },
      },
    });
    await runtime.schedules.upsert({ id: "b-steady", cron: "* * * * *", run: { input: async () => enc("steady") } });
    const worker: RunnerHandle = runtime.spawn();
    stops.push(async () => {
      await worker.shutdown();
      await queue.close();
    });
    clock.set(TICK);
    await until(() => calls === 1, "the stuck handler called", 10_000);
    // Not yet timed out: nothing recorded, the other schedule still waits.
    await new Promise((r) => setTimeout(r, 100));
    expect((await runtime.schedules.get("a-stuck"))!.lastFailure).toBeNull();
    expect(started.has(`sched-b-steady-${TICK}`)).toBe(false);
    expect(signals[0]!.aborted).toBe(false);
    clock.advance(TIMEOUT);
    await until(() => started.has(`sched-b-steady-${TICK}`), "the other schedule's run", 10_000);
    // The handler's signal aborted at the timeout, saying so: its work is abandoned.
    expect(signals[0]!.aborted).toBe(true);
    expect((signals[0]!.reason as DOMException).name).toBe("TimeoutError");
    const stuck = (await runtime.schedules.get("a-stuck"))!;
    expect(stuck.lastFailure).toMatchObject({ tickMs: TICK });
    expect(stuck.lastFailure!.error).toMatch(/did not answer within 5000 ms/);
    expect(stuck.lastRunId).toBeNull();
    expect(started.has(`sched-a-stuck-${TICK}`)).toBe(false);
    // The next tick asks the handler again; the scheduler is not stuck on the first call.
    clock.set(TICK + MIN);
    await until(() => calls === 2, "the handler asked again at the next tick", 10_000);
    clock.advance(TIMEOUT);
    await until(() => started.has(`sched-b-steady-${TICK + MIN}`), "the other schedule's next run", 10_000);
    // Stopping the worker while the handler is being waited for does not wait out the timeout.
    clock.set(TICK + 2 * MIN);
    await until(() => calls === 3, "the handler asked at the third tick", 10_000);
    expect(signals[2]!.aborted).toBe(false);
    await worker.shutdown();
    // Shutdown aborts the signal of the handler it stopped waiting for.
    expect(signals[2]!.aborted).toBe(true);
    expect((signals[2]!.reason as DOMException).name).toBe("AbortError");
    expect((await runtime.schedules.get("a-stuck"))!.lastFailure!.tickMs).toBe(TICK + MIN);
  }, 60_000);

  it("refuses an absurd timeout when the runtime is built", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "app");
    stops.push(() => queue.close());
    const builder = WorkflowRuntime.builder(queue, store, { runStep: async (s) => StepOutcome.succeed(s.payload) }, NoopTerminalHook);
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 1e30]) {
      expect(() => builder.scheduleInputTimeout(bad), String(bad)).toThrow(ValidationError);
    }
  });
});
