/**
 * @module Schedules whose input a handler computes per tick, on a mock
 * clock: each tick's run gets its tick's input, also after a restart; a
 * handler that throws, returns something that is not a run input, or is not
 * registered in the deciding process starts no run, records the tick as
 * failed (never skipped in silence) and the schedule goes on; a backfill
 * runs the failed tick once fixed; a tick whose run exists keeps that run
 * and its input.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  MemoryStore,
  MockClock,
  NoopTerminalHook,
  Queue,
  ScheduleInputError,
  StepOutcome,
  ValidationError,
  WorkflowRuntime,
  type ObjectStore,
  type RunnerHandle,
  type ScheduleInputHandler,
  type ScheduleSpec,
} from "../../runtime/index.js";
import { MAX_RUN_PAYLOAD_BYTES } from "../../runtime/workflow/limits.js";
import { dec, enc, until } from "../workflow/helpers.js";

const MIN = 60_000;
const T0 = Date.parse("2026-01-05T00:00:30Z");
const tick = (i: number) => T0 + 30_000 + i * MIN;

/** Step 0 of each run: its input, and how many step-0 jobs ran it. */
class Recorder {
  readonly inputs = new Map<string, string>();
  readonly jobs = new Map<string, Set<string>>();
  runner() {
    return {
      runStep: async (s: { runId: string; jobId: string; stepNumber: number; payload: Uint8Array }) => {
        if (s.stepNumber === 0) {
          if (!this.inputs.has(s.runId)) this.inputs.set(s.runId, dec(s.payload));
          this.jobs.set(s.runId, (this.jobs.get(s.runId) ?? new Set()).add(s.jobId));
        }
        return StepOutcome.succeed(s.payload);
      },
    };
  }
}

interface App {
  queue: Queue;
  runtime: WorkflowRuntime;
  worker: RunnerHandle;
}
const open = new Set<App>();
const logged: string[] = [];
afterEach(async () => {
  for (const a of [...open]) await stop(a);
  logged.length = 0;
});

async function openApp(store: ObjectStore, clock: MockClock, rec: Recorder, specs: ScheduleSpec[]): Promise<App> {
  const queue = await Queue.open(store, "app", { clock, flushIntervalMs: 1 });
  const runtime = WorkflowRuntime.builder(queue, store, rec.runner(), NoopTerminalHook)
    .logger({ error: (_o, m) => logged.push(m ?? "") })
    .build();
  for (const s of specs) await runtime.schedules.upsert(s);
  const app = { queue, runtime, worker: runtime.spawn() };
  open.add(app);
  return app;
}

async function stop(app: App): Promise<void> {
  open.delete(app);
  await app.worker.shutdown();
  await app.queue.close();
}

const byTick: ScheduleInputHandler = ({ scheduleId, tickMs }) => enc(JSON.stringify({ scheduleId, day: new Date(tickMs).toISOString() }));
const spec = (input: ScheduleSpec["run"]["input"]): ScheduleSpec => ({ id: "report", cron: "* * * * *", run: { input } });
const runOf = (t: number) => `sched-report-${t}`;

describe("a schedule's input computed by a handler", () => {
  it("gives each tick's run its own input, also after a restart, and lists the schedule as computed", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(T0);
    const rec = new Recorder();
    let app = await openApp(store, clock, rec, [spec(byTick)]);
    expect(await app.runtime.schedules.get("report")).toMatchObject({ computedInput: true, lastFailure: null });
    for (const i of [0, 1]) {
      clock.set(tick(i));
      await until(() => rec.inputs.has(runOf(tick(i))), `tick ${i}`);
    }
    await stop(app);
    app = await openApp(store, clock, rec, [spec(byTick)]);
    clock.set(tick(2));
    await until(() => rec.inputs.has(runOf(tick(2))), "tick 2");
    for (const i of [0, 1, 2]) {
      expect(JSON.parse(rec.inputs.get(runOf(tick(i)))!)).toEqual({ scheduleId: "report", day: new Date(tick(i)).toISOString() });
    }
    expect([...rec.jobs.values()].every((j) => j.size === 1)).toBe(true);
  });

  it("a handler that throws or returns no run input starts no run, records the tick as failed, and the next tick runs", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(T0);
    const rec = new Recorder();
    const answers: (() => unknown)[] = [
      () => {
        throw new Error("the sales database is down");
      },
      () => "not bytes",
      () => null,
      () => new Uint8Array(MAX_RUN_PAYLOAD_BYTES + 1),
    ];
    let n = 0;
    const flaky: ScheduleInputHandler = async (t) => {
      const answer = answers[n++];
      return answer === undefined ? byTick(t) : (answer() as Uint8Array);
    };
    const app = await openApp(store, clock, rec, [spec(flaky)]);
    const problems = [
      "its input handler threw: the sales database is down",
      "returned string, not a Uint8Array",
      "returned null, not a Uint8Array",
      "bytes; run inputs",
    ];
    for (const [i, problem] of problems.entries()) {
      clock.set(tick(i));
      await until(async () => (await app.runtime.schedules.get("report"))?.lastFailure?.tickMs === tick(i), `the failure of tick ${i}`);
      const info = (await app.runtime.schedules.get("report"))!;
      expect(info.lastFailure!.error).toContain(problem);
      expect(info.lastFailure!.error).toContain(`schedule "report" could not compute the input of its tick at ${new Date(tick(i)).toISOString()}`);
      expect(info.lastTickMs).toBe(tick(i));
      expect(await app.runtime.status(runOf(tick(i)))).toBeNull();
    }
    expect(logged.filter((m) => m.includes('schedule "report" could not compute'))).toHaveLength(4);
    clock.set(tick(4));
    await until(() => rec.inputs.has(runOf(tick(4))), "the next tick's run");
    // The failed ticks run with a backfill, once the handler works.
    const fires = await app.runtime.schedules.backfill("report", tick(0), tick(1));
    expect(fires.map((f) => [f.runId, f.newlySubmitted])).toEqual([
      [runOf(tick(0)), true],
      [runOf(tick(1)), true],
    ]);
    await until(() => rec.inputs.has(runOf(tick(1))), "the backfilled runs");
    expect(JSON.parse(rec.inputs.get(runOf(tick(0)))!).day).toBe(new Date(tick(0)).toISOString());
  });

  it("a handler may answer { input, flow }: the run gets that input; a malformed answer of that shape starts nothing", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(T0);
    const rec = new Recorder();
    const answers: unknown[] = [
      { input: enc("with-flow"), flow: { rule: "reports", concurrencyKey: "eu" } },
      { input: "text" },
      { input: enc("x"), flow: { rule: 5 } },
    ];
    let n = 0;
    const app = await openApp(store, clock, rec, [spec((() => answers[n++]) as ScheduleInputHandler)]);
    clock.set(tick(0));
    await until(() => rec.inputs.has(runOf(tick(0))), "tick 0's run");
    expect(rec.inputs.get(runOf(tick(0)))).toBe("with-flow");
    for (const i of [1, 2]) {
      clock.set(tick(i));
      await until(async () => (await app.runtime.schedules.get("report"))?.lastFailure?.tickMs === tick(i), `the failure of tick ${i}`);
      expect((await app.runtime.schedules.get("report"))!.lastFailure!.error).toContain(
        "returned object, not a Uint8Array or { input: Uint8Array, flow?, debounce? }",
      );
      expect(await app.runtime.status(runOf(tick(i)))).toBeNull();
    }
  });

  it("a process that decides ticks without the handler registered records them as failed, naming the fix", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(T0);
    const rec = new Recorder();
    const first = await openApp(store, clock, rec, [spec(byTick)]);
    await stop(first);
    // A restart that does not register the schedule (and its handler) again.
    const app = await openApp(store, clock, rec, []);
    clock.set(tick(0));
    await until(async () => (await app.runtime.schedules.get("report"))?.lastFailure !== null, "the failure");
    expect((await app.runtime.schedules.get("report"))!.lastFailure!.error).toContain("its input handler is not registered in this process");
    expect(rec.inputs.size).toBe(0);
  });

  it("trigger and backfill report a failing handler to the caller and start nothing for that tick", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(T0);
    const rec = new Recorder();
    const failing: ScheduleInputHandler = () => {
      throw new Error("boom");
    };
    const app = await openApp(store, clock, rec, [spec(failing)]);
    const err = await app.runtime.schedules.trigger("report").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScheduleInputError);
    expect(err).toMatchObject({ code: "SCHEDULE_INPUT_FAILED", scheduleId: "report", tickMs: T0 });
    await expect(app.runtime.schedules.backfill("report", T0 - 2 * MIN, T0)).rejects.toThrow(ScheduleInputError);
    expect((await app.runtime.schedules.get("report"))!.lastRunId).toBeNull();
    expect((await app.runtime.view().listRuns({})).runs).toEqual([]);
  });

  it("a tick whose run exists keeps that run and its input when the handler now computes another", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(T0);
    const rec = new Recorder();
    const v1: ScheduleInputHandler = () => enc("v1");
    const app = await openApp(store, clock, rec, [spec(v1)]);
    // The tick's run is started ahead (a backfill), as a crash after a remote shard accepted it would leave it.
    await app.runtime.schedules.backfill("report", tick(0), tick(0));
    await app.runtime.schedules.upsert(spec(() => enc("v2")));
    clock.set(tick(0));
    await until(async () => (await app.runtime.schedules.get("report"))?.lastRunId === runOf(tick(0)), "the tick decided");
    await until(() => rec.inputs.has(runOf(tick(0))), "the run");
    expect(rec.inputs.get(runOf(tick(0)))).toBe("v1");
    expect(rec.jobs.get(runOf(tick(0)))!.size).toBe(1);
  });

  it("refuses an input that is neither bytes nor a function, writing nothing", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(T0);
    const app = await openApp(store, clock, new Recorder(), []);
    await expect(app.runtime.schedules.upsert(spec("text" as unknown as Uint8Array))).rejects.toThrow(ValidationError);
    expect(await app.runtime.schedules.list()).toEqual([]);
  });
});
