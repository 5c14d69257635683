/**
 * @module A schedule's debounce (`run.options.debounce`, or its typed
 * target's `debounce`): the run of a scheduled tick waits out the window
 * and shares it with every other submission of the key, so a later
 * submission replaces it (it ends `superseded`), and a tick replaces a run
 * waiting in the window. Backfill and trigger start their runs at once,
 * never debounced. A debounce with a jitter is refused, writing nothing.
 * Time is a MockClock.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  MemoryStore,
  MockClock,
  NoopTerminalHook,
  Queue,
  StepOutcome,
  ValidationError,
  WorkflowRuntime,
  bindScheduleInput,
  defineSchedule,
  scheduleSpecOf,
  type ComputedTickRun,
  type RunnerHandle,
  type ScheduleSpec,
} from "../../runtime/index.js";
import { digestSendJob } from "../codegen/fixtures/debounce/expected/digest/definitions.js";
import { dec, enc, until } from "../workflow/helpers.js";

const MIN = 60_000;
const PERIOD = 10_000;
const T0 = Date.parse("2026-01-05T00:00:30Z");
const TICK = T0 + 30_000;
const debounce = { key: "nightly:acme", periodMs: PERIOD };

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

async function openApp(clock: MockClock) {
  const store = new MemoryStore();
  const queue = await Queue.open(store, "app", { clock, flushIntervalMs: 1 });
  const ran: string[] = [];
  const runner = {
    runStep: async (s: { runId: string; stepNumber: number; payload: Uint8Array }) => {
      if (s.stepNumber === 0) ran.push(`${s.runId}:${dec(s.payload)}`);
      return StepOutcome.succeed(s.payload);
    },
  };
  const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook)
    .logger({ error: () => undefined })
    .build();
  const worker: RunnerHandle = runtime.spawn();
  stops.push(async () => {
    await worker.shutdown();
    await queue.close();
  });
  return { queue, runtime, ran };
}

const spec = (extra: Partial<ScheduleSpec> = {}): ScheduleSpec => ({
  id: "nightly",
  cron: "* * * * *",
  run: { input: enc("tick"), options: { debounce } },
  ...extra,
});

describe("a debounced schedule", () => {
  it("a tick's run waits out the window and a later submission of the key replaces it", async () => {
    const clock = new MockClock(T0);
    const { runtime, ran } = await openApp(clock);
    await runtime.schedules.upsert(spec());
    clock.set(TICK);
    const tickRun = `sched-nightly-${TICK}`;
    await until(async () => (await runtime.schedules.get("nightly"))?.lastRunId === tickRun, "the tick decided", 10_000);
    // Debounced: its first step waits for the window's end.
    expect((await runtime.status(tickRun))?.state).not.toBe("terminated");
    await new Promise((r) => setTimeout(r, 100));
    expect(ran).toEqual([]);
    clock.advance(1_000);
    await runtime.submit({ runId: "manual", input: enc("manual"), options: { debounce } });
    const end = await runtime.wait(tickRun);
    expect(end.termination).toMatchObject({ status: "cancelled", errorKind: "superseded", supersededBy: "manual" });
    clock.advance(PERIOD);
    await until(() => ran.includes("manual:manual"), "the replacing run", 10_000);
    expect(ran).toEqual(["manual:manual"]);
  }, 60_000);

  it("a tick replaces a run waiting in the window", async () => {
    const clock = new MockClock(TICK - 2_000);
    const { runtime, ran } = await openApp(clock);
    await runtime.schedules.upsert(spec());
    await runtime.submit({ runId: "early", input: enc("early"), options: { debounce } });
    clock.set(TICK);
    const tickRun = `sched-nightly-${TICK}`;
    const end = await runtime.wait("early");
    expect(end.termination).toMatchObject({ status: "cancelled", errorKind: "superseded", supersededBy: tickRun });
    clock.advance(PERIOD);
    await until(() => ran.includes(`${tickRun}:tick`), "the tick's run", 10_000);
    expect(ran).toEqual([`${tickRun}:tick`]);
  }, 60_000);

  it("backfill and trigger start every run at once, not debounced", async () => {
    const clock = new MockClock(T0);
    const { runtime, ran } = await openApp(clock);
    await runtime.schedules.upsert({ ...spec(), cron: "0 * * * *" });
    const fires = await runtime.schedules.backfill("nightly", T0 - 3 * 60 * MIN, T0);
    expect(fires.length).toBe(3);
    const fire = await runtime.schedules.trigger("nightly");
    const runs = [...fires.map((f) => f.runId), fire.runId];
    await until(() => runs.every((r) => ran.includes(`${r}:tick`)), "every run", 10_000);
    for (const r of runs) expect((await runtime.wait(r)).termination.status, r).toBe("succeeded");
  }, 60_000);

  it("refuses a debounce with a jitter, writing nothing", async () => {
    const clock = new MockClock(T0);
    const { runtime } = await openApp(clock);
    await expect(runtime.schedules.upsert(spec({ jitterMs: 1_000 }))).rejects.toThrow(ValidationError);
    await expect(runtime.schedules.upsert(spec({ run: { input: enc("x"), options: { debounce: { key: "", periodMs: 0 } } } }))).rejects.toThrow(
      ValidationError,
    );
    expect(await runtime.schedules.list()).toEqual([]);
  });

  it("a typed schedule of a debounced job carries the job's debounce, fixed or computed per tick", async () => {
    const base = {
      id: "digest",
      package: "digest",
      cron: "0 * * * *",
      timezone: "UTC",
      target: digestSendJob,
      headers: { tenant_id: "acme" },
      overlap: "skip" as const,
      catchUp: "none" as const,
      jitterMs: 0,
    };
    const fixed = scheduleSpecOf(defineSchedule({ ...base, input: { user_id: "u1" } }));
    expect(fixed.run.options?.debounce).toEqual({ key: "digest.digest.send:acme/u1", periodMs: 30_000 });
    const computed = scheduleSpecOf(bindScheduleInput(defineSchedule({ ...base, inputFrom: "handler" }), () => ({ user_id: "u2" })));
    const run = (await (computed.run.input as (t: { scheduleId: string; tickMs: number }) => Promise<ComputedTickRun>)({
      scheduleId: "digest",
      tickMs: T0,
    })) as ComputedTickRun;
    expect(run.debounce).toEqual({ key: "digest.digest.send:acme/u2", periodMs: 30_000 });
    expect(() => scheduleSpecOf(defineSchedule({ ...base, jitterMs: 1_000, input: { user_id: "u1" } }))).toThrow(/jitter.*debounced/);
  });
});
