/**
 * @module Generated schedules whose input a typed handler computes
 * (`input_from: handler`), on a mock clock: the handler's input reaches the
 * tick's job, an input the job's schema refuses starts nothing and is
 * recorded naming the schedule and the field, a missing handler is refused
 * when the schedules are bound (before anything is written), the flow keys
 * come from the computed input, and a tick decided again after a restart
 * keeps the run it already has.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  JobRunner,
  MemoryStore,
  MockClock,
  Queue,
  ValidationError,
  scheduleSpecOf,
  upsertSchedules,
  type ComputedTickRun,
  type ObjectStore,
  type ScheduleInputHandler,
} from "taquba";
import { archive } from "../codegen/fixtures/schedule-input/expected/index.js";
import { until } from "../workflow/helpers.js";

const DAY = 86_400_000;
const T0 = Date.parse("2026-06-01T12:00:00Z");
const TICK = Date.parse("2026-06-02T03:00:00Z");
const RUN = `sched-daily-eu-${TICK}`;
const dayBefore = (t: Date) => new Date(t.getTime() - DAY).toISOString().slice(0, 10);

interface App {
  queue: Queue;
  runner: JobRunner;
  shutdown(): Promise<void>;
}
const open = new Set<App>();
afterEach(async () => {
  for (const a of [...open]) await a.shutdown();
});

/** A runner of the archive package whose job records each run's input by job id. */
async function openApp(store: ObjectStore, clock: MockClock, seen: Array<[string, archive.ExportDayInput]>): Promise<App> {
  const queue = await Queue.open(store, "a", { clock, flushIntervalMs: 1 });
  const runner = archive
    .register(JobRunner.builder(queue, store), {
      exportDay: {
        async run(input, ctx) {
          seen.push([ctx.jobId, input]);
          return {};
        },
      },
    })
    .build();
  const worker = runner.spawn();
  const app: App = {
    queue,
    runner,
    async shutdown() {
      open.delete(app);
      await worker.shutdown();
      await queue.close();
    },
  };
  open.add(app);
  return app;
}

describe("typed schedules with a computed input", () => {
  it("the typed handler's input reaches the tick's job, and the flow key is read from it", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(T0);
    const seen: Array<[string, archive.ExportDayInput]> = [];
    const app = await openApp(store, clock, seen);
    const ticks: Array<[string, number]> = [];
    const daily: archive.DailyEuScheduleInputHandler = ({ scheduleId, tickTime }) => {
      ticks.push([scheduleId, tickTime.getTime()]);
      return { region: "eu", day: dayBefore(tickTime) };
    };
    const infos = await upsertSchedules(app.runner, archive.schedulesWith({ dailyEu: daily }));
    expect(infos.map((i) => [i.id, i.computedInput])).toEqual([
      ["daily-eu", true],
      ["replay-us", false],
    ]);
    clock.set(TICK);
    await until(() => seen.length === 1, "the tick's job ran");
    expect(seen).toEqual([[RUN, { region: "eu", day: "2026-06-01" }]]);
    expect(ticks).toEqual([["daily-eu", TICK]]);

    // The run's flow control is keyed by the computed region, not by a fixed input.
    const spec = scheduleSpecOf(archive.schedulesWith({ dailyEu: async () => ({ region: "us", day: "2026-06-01" }) }).dailyEu);
    expect(spec.run.options?.flow).toBeUndefined();
    const run = (await (spec.run.input as ScheduleInputHandler)({
      scheduleId: "daily-eu",
      tickMs: TICK,
      signal: new AbortController().signal,
    })) as ComputedTickRun;
    expect(run.flow).toEqual({ rule: "archive.export.day", concurrencyKey: "us" });
    expect(scheduleSpecOf(archive.replayUsSchedule).run.options?.flow).toEqual({ rule: "archive.export.day", concurrencyKey: "us" });
  });

  it("an input the job's schema refuses starts no run and is recorded, naming the schedule and the field", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(T0);
    const seen: Array<[string, archive.ExportDayInput]> = [];
    const app = await openApp(store, clock, seen);
    const bad = (() => ({ region: "mars", day: "2026-06-01" })) as unknown as archive.DailyEuScheduleInputHandler;
    await upsertSchedules(app.runner, archive.schedulesWith({ dailyEu: bad }));
    clock.set(TICK);
    await until(async () => (await app.runner.runtime.schedules.get("daily-eu"))?.lastFailure != null, "the tick recorded as failed");
    const info = await app.runner.runtime.schedules.get("daily-eu");
    expect(info).toMatchObject({ lastRunId: null, lastFailure: { tickMs: TICK } });
    expect(info!.lastFailure!.error).toContain('schedule "daily-eu"');
    expect(info!.lastFailure!.error).toContain("input.region");
    expect(await app.runner.runtime.status(RUN)).toBeNull();
    // A backfill reports the same refusal to the caller.
    await expect(app.runner.runtime.schedules.backfill("daily-eu", TICK, TICK)).rejects.toMatchObject({ code: "SCHEDULE_INPUT_FAILED" });
    expect(seen).toEqual([]);
  });

  it("a missing handler is refused when the schedules are bound or upserted, before anything is written", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(T0);
    const app = await openApp(store, clock, []);
    expect(() => archive.schedulesWith({} as archive.ScheduleInputHandlers)).toThrow(/schedule "daily-eu" computes its input with a handler/);
    await expect(upsertSchedules(app.runner, archive.schedules)).rejects.toThrow(ValidationError);
    await expect(upsertSchedules(app.runner, archive.schedules)).rejects.toThrow(/schedulesWith/);
    expect(await app.runner.runtime.schedules.list()).toEqual([]);
  });

  it("a tick decided again after a restart keeps the run it has, and its input", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(T0);
    const seen: Array<[string, archive.ExportDayInput]> = [];
    let app = await openApp(store, clock, seen);
    await upsertSchedules(app.runner, archive.schedulesWith({ dailyEu: () => ({ region: "eu", day: "2026-06-01" }) }));
    // The tick's run exists before the tick is decided, as a crash after its submission leaves it.
    const [fired] = await app.runner.runtime.schedules.backfill("daily-eu", TICK, TICK);
    expect(fired).toMatchObject({ runId: RUN, newlySubmitted: true });
    await until(() => seen.length === 1, "the run's job");
    await app.shutdown();

    app = await openApp(store, clock, seen);
    let calls = 0;
    await upsertSchedules(
      app.runner,
      archive.schedulesWith({
        dailyEu: () => {
          calls++;
          return { region: "us", day: "2026-06-01" };
        },
      }),
    );
    clock.set(TICK);
    await until(async () => (await app.runner.runtime.schedules.get("daily-eu"))?.lastRunId === RUN, "the tick decided");
    expect(seen).toEqual([[RUN, { region: "eu", day: "2026-06-01" }]]);
    expect(calls).toBe(0);
    expect((await app.runner.runtime.schedules.get("daily-eu"))?.lastFailure).toBeNull();
  });
});
