/**
 * @module Schedules on a running worker, with a mock clock: one run per
 * tick (also across restarts and an owner change), the catch-up and
 * overlap policies, DST days in a timezone, pause/resume, trigger,
 * backfill, jitter, and refused definitions that write nothing.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  MemoryStore,
  MockClock,
  NoopTerminalHook,
  Queue,
  ScheduleNotFoundError,
  StepOutcome,
  ValidationError,
  WorkflowRuntime,
  type ObjectStore,
  type RunnerHandle,
  type ScheduleSpec,
  type StepRunner,
} from "taquba";
import { enc, until } from "../workflow/helpers.js";

const MIN = 60_000;
const T0 = Date.parse("2026-01-05T00:00:30Z");

/**
 * The runs whose step 0 ran, in order of first start. A step may run again
 * after an owner change (delivery is at least once) under the same step job;
 * a second run under one id would show as a second step-0 job.
 */
class Recorder {
  readonly started: string[] = [];
  readonly incarnations = new Map<string, Set<string>>();
  /** Run ids held active until released (for the overlap tests). */
  hold = false;
  runner(): StepRunner {
    return {
      runStep: async (s) => {
        if (s.stepNumber === 0) {
          const jobs = this.incarnations.get(s.runId) ?? new Set();
          if (jobs.size === 0) this.started.push(s.runId);
          jobs.add(s.jobId);
          this.incarnations.set(s.runId, jobs);
          if (this.hold) return StepOutcome.continueOnSignal(s.payload, `release:${s.runId}`, 86_400_000);
        }
        return StepOutcome.succeed(s.payload);
      },
    };
  }
  ticks(id: string): number[] {
    return this.started.filter((r) => /^sched-.+-\d+$/.test(r) && r.startsWith(`sched-${id}-`)).map((r) => Number(r.slice(`sched-${id}-`.length)));
  }
  /** Run ids started under more than one step-0 job: a tick started twice. */
  doubled(): string[] {
    return [...this.incarnations].filter(([, jobs]) => jobs.size > 1).map(([id]) => id);
  }
}

interface App {
  queue: Queue;
  runtime: WorkflowRuntime;
  worker: RunnerHandle | undefined;
}
const open: App[] = [];

async function openApp(store: ObjectStore, clock: MockClock, rec: Recorder, start = true): Promise<App> {
  const queue = await Queue.open(store, "app", { clock, flushIntervalMs: 1 });
  const runtime = WorkflowRuntime.builder(queue, store, rec.runner(), NoopTerminalHook)
    .logger({ error: (o, m) => process.env.SCHED_DEBUG && console.log("ERR", m, o) })
    .build();
  const app = { queue, runtime, worker: start ? runtime.spawn() : undefined };
  open.push(app);
  return app;
}

async function stop(app: App): Promise<void> {
  open.splice(open.indexOf(app), 1);
  await app.worker?.shutdown();
  await app.queue.close();
}

afterEach(async () => {
  for (const app of [...open]) await stop(app).catch(() => undefined);
});

const spec = (over: Partial<ScheduleSpec> = {}): ScheduleSpec => ({ id: "every-minute", cron: "* * * * *", run: { input: enc("tick") }, ...over });

/**
 * Waits until every run submitted so far ran its first step: no step job
 * pending or claimed (a held run's signal wait is a job scheduled a day
 * later, and the clock stands still here). A tick's run is submitted in the
 * commit that decides the tick, so once the tick is decided the recorder
 * then has every run it will see: a fixed pause instead could end before
 * the worker ran them on a loaded machine, and could not tell a late run
 * from none.
 */
async function allStarted(app: App): Promise<void> {
  await until(async () => {
    const s = await app.queue.view().stats("workflow-steps");
    return s.pending === 0 && s.claimed === 0;
  }, "every submitted run started");
}

/** Moves the clock to `at` and waits until the schedule decided that tick and `expected` of its runs started. */
async function tickTo(clock: MockClock, at: number, rec: Recorder, id: string, expected: number, app?: App): Promise<void> {
  clock.set(at);
  await until(() => rec.ticks(id).length >= expected, `${expected} runs of ${id}`);
  if (app !== undefined) await until(async () => ((await app.runtime.schedules.get(id))?.lastTickMs ?? 0) >= at, `tick ${at} decided`);
}

describe("schedules", () => {
  it("starts one run per tick, with the tick's run id, and reports next and last ticks", async () => {
    const rec = new Recorder();
    const clock = new MockClock(T0);
    const app = await openApp(new MemoryStore(), clock, rec);
    const info = await app.runtime.schedules.upsert(spec());
    expect(info).toMatchObject({
      id: "every-minute",
      timezone: "UTC",
      overlap: "skip",
      catchUp: "none",
      paused: false,
      nextTickMs: T0 + 30_000,
      lastTickMs: null,
    });
    for (let i = 1; i <= 3; i++) await tickTo(clock, T0 + 30_000 + (i - 1) * MIN, rec, "every-minute", i);
    expect(rec.ticks("every-minute")).toEqual([T0 + 30_000, T0 + 90_000, T0 + 150_000]);
    const [listed] = await app.runtime.schedules.list();
    expect(listed).toMatchObject({ lastTickMs: T0 + 150_000, nextTickMs: T0 + 210_000, lastRunId: `sched-every-minute-${T0 + 150_000}` });
    // The loop sleeps on the clock until the next tick: no timer of it fires earlier.
    expect(clock.nextDeadline).toBeLessThanOrEqual(T0 + 210_000);
  });

  it("starts each tick exactly once across restarts and an owner change", async () => {
    const rec = new Recorder();
    const clock = new MockClock(T0);
    const store = new MemoryStore();
    const a = await openApp(store, clock, rec);
    // "allow": a run the fenced owner held stays active until its lease expires, and this test is about ticks, not overlap.
    await a.runtime.schedules.upsert(spec({ overlap: "allow" }));
    await tickTo(clock, T0 + 30_000, rec, "every-minute", 1);
    await tickTo(clock, T0 + 90_000, rec, "every-minute", 2);
    await stop(a);
    // A clean restart 20 s after a tick: that tick is on time and runs once.
    clock.set(T0 + 150_000 + 20_000);
    const b = await openApp(store, clock, rec);
    await until(() => rec.ticks("every-minute").length === 3, "tick after restart");
    await tickTo(clock, T0 + 210_000, rec, "every-minute", 4, b);
    // Another process takes the store over without b stopping (b is fenced).
    const c = await openApp(store, clock, rec);
    await tickTo(clock, T0 + 270_000, rec, "every-minute", 5, c);
    await tickTo(clock, T0 + 330_000, rec, "every-minute", 6, c);
    // The fenced owner learns it at its next write; every run submitted by then has started.
    await until(() => b.queue.closed || b.queue.closedReason !== undefined, "the fenced owner closed");
    await allStarted(c);
    expect(rec.ticks("every-minute")).toEqual([0, 1, 2, 3, 4, 5].map((i) => T0 + 30_000 + i * MIN));
    expect(rec.doubled()).toEqual([]);
    await stop(c);
  });

  it("a schedule upserted again with the same definition keeps its state; a new definition keeps it too", async () => {
    const rec = new Recorder();
    const clock = new MockClock(T0);
    const app = await openApp(new MemoryStore(), clock, rec);
    await app.runtime.schedules.upsert(spec());
    await tickTo(clock, T0 + 30_000, rec, "every-minute", 1);
    expect((await app.runtime.schedules.upsert(spec())).lastTickMs).toBe(T0 + 30_000);
    const changed = await app.runtime.schedules.upsert(spec({ cron: "*/2 * * * *" }));
    expect(changed).toMatchObject({ cron: "*/2 * * * *", lastTickMs: T0 + 30_000, nextTickMs: T0 + 90_000 });
  });

  describe("catch-up after downtime", () => {
    // "allow": catch-up ticks follow the overlap policy too, and this test looks at catch-up alone.
    const hourly = (catchUp: ScheduleSpec["catchUp"]) => spec({ id: "hourly", cron: "0 * * * *", catchUp, overlap: "allow" });
    const H = 60 * MIN;
    const start = Date.parse("2026-01-05T00:30:00Z");

    async function downFor(catchUp: ScheduleSpec["catchUp"], backAt: number): Promise<number[]> {
      const rec = new Recorder();
      const clock = new MockClock(start);
      const store = new MemoryStore();
      const a = await openApp(store, clock, rec);
      await a.runtime.schedules.upsert(hourly(catchUp));
      await tickTo(clock, start + 30 * MIN, rec, "hourly", 1);
      await stop(a);
      clock.set(backAt);
      const b = await openApp(store, clock, rec);
      // The scheduler has decided when its state says every due tick was.
      const due = Math.floor(backAt / H) * H;
      await until(async () => (await b.runtime.schedules.get("hourly"))?.lastTickMs === due, "caught up");
      await allStarted(b);
      return rec.ticks("hourly").slice(1);
    }

    const first = start + 30 * MIN; // 01:00
    const backAt = first + 5 * H + 20 * MIN; // 06:20, ticks 02:00..06:00 missed

    it("none: no missed tick runs", async () => {
      expect(await downFor("none", backAt)).toEqual([]);
    });
    it("none: a tick within the grace is on time and runs", async () => {
      expect(await downFor("none", first + 5 * H + 30_000)).toEqual([first + 5 * H]);
    });
    it("last: only the latest missed tick runs", async () => {
      expect(await downFor("last", backAt)).toEqual([first + 5 * H]);
    });
    it("all-within: every missed tick of the window runs, oldest first", async () => {
      expect(await downFor({ allWithinMs: 3 * H }, backAt)).toEqual([first + 3 * H, first + 4 * H, first + 5 * H]);
    });
  });

  describe("overlap", () => {
    async function overlapRun(overlap: ScheduleSpec["overlap"]): Promise<{ rec: Recorder; app: App; clock: MockClock }> {
      const rec = new Recorder();
      rec.hold = true;
      const clock = new MockClock(T0);
      const app = await openApp(new MemoryStore(), clock, rec);
      await app.runtime.schedules.upsert(spec({ overlap }));
      await tickTo(clock, T0 + 30_000, rec, "every-minute", 1);
      for (const at of [T0 + 90_000, T0 + 150_000]) {
        clock.set(at);
        await until(async () => (await app.runtime.schedules.get("every-minute"))?.lastTickMs === at, `tick ${at} decided`);
      }
      await allStarted(app);
      return { rec, app, clock };
    }

    it("skip: ticks while the previous run is active start nothing", async () => {
      const { rec, app } = await overlapRun("skip");
      expect(rec.ticks("every-minute")).toEqual([T0 + 30_000]);
      expect((await app.runtime.schedules.get("every-minute"))?.bufferedTickMs).toBeNull();
    });

    it("buffer_one: holds the first overlapping tick and starts it when the previous run ends", async () => {
      const { rec, app } = await overlapRun("buffer_one");
      expect(rec.ticks("every-minute")).toEqual([T0 + 30_000]);
      expect((await app.runtime.schedules.get("every-minute"))?.bufferedTickMs).toBe(T0 + 90_000);
      rec.hold = false;
      await app.runtime.signal(`release:sched-every-minute-${T0 + 30_000}`, enc("done"));
      await until(() => rec.ticks("every-minute").length === 2, "buffered tick started");
      expect(rec.ticks("every-minute")).toEqual([T0 + 30_000, T0 + 90_000]);
      await until(async () => (await app.runtime.schedules.get("every-minute"))?.bufferedTickMs === null, "buffer cleared");
    });

    it("allow: every tick starts a run", async () => {
      const { rec } = await overlapRun("allow");
      expect(rec.ticks("every-minute")).toEqual([T0 + 30_000, T0 + 90_000, T0 + 150_000]);
    });
  });

  describe("DST in Europe/Berlin", () => {
    it("a daily 02:30 runs once on the spring-forward day (at 03:00 CEST) and once on the fall-back day (the first 02:30)", async () => {
      const rec = new Recorder();
      const clock = new MockClock(Date.parse("2026-03-27T12:00:00Z"));
      const app = await openApp(new MemoryStore(), clock, rec);
      await app.runtime.schedules.upsert(spec({ id: "daily", cron: "30 2 * * *", timezone: "Europe/Berlin" }));
      const expected = ["2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"].map(Date.parse);
      for (const [i, t] of expected.entries()) await tickTo(clock, t, rec, "daily", i + 1);
      clock.set(Date.parse("2026-10-24T12:00:00Z"));
      await app.runtime.schedules.resume("daily"); // no-op: never paused
      const autumn = ["2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"].map(Date.parse);
      // Between the two, the scheduler sees one late tick (catch-up none drops it); then each autumn tick on time.
      for (const [i, t] of autumn.slice(1).entries()) await tickTo(clock, t, rec, "daily", expected.length + i + 1);
      clock.set(Date.parse("2026-10-25T01:30:00Z"));
      await new Promise((r) => setTimeout(r, 30));
      expect(rec.ticks("daily")).toEqual([...expected, autumn[1], autumn[2]]);
    });

    it("an hourly schedule runs 23 times on the spring-forward day and 25 times on the fall-back day", async () => {
      for (const [day, count] of [
        ["2026-03-29", 23],
        ["2026-10-25", 25],
      ] as const) {
        const rec = new Recorder();
        // Midnight Berlin time the day before ends at 22:00 or 23:00 UTC; start a minute before.
        const dayStart = Date.parse(`${day}T00:00:00+01:00`) - (day.endsWith("10-25") ? 3_600_000 : 0);
        const clock = new MockClock(dayStart - MIN);
        const app = await openApp(new MemoryStore(), clock, rec);
        await app.runtime.schedules.upsert(spec({ id: "hourly", cron: "0 * * * *", timezone: "Europe/Berlin" }));
        const dayEnd = Date.parse(`${day}T23:59:00+0${day.endsWith("10-25") ? 1 : 2}:00`);
        let n = 0;
        for (;;) {
          const next = (await app.runtime.schedules.get("hourly"))!.nextTickMs!;
          if (next > dayEnd) break;
          await tickTo(clock, next, rec, "hourly", ++n);
        }
        expect(rec.ticks("hourly")).toHaveLength(count);
        const gaps = rec
          .ticks("hourly")
          .slice(1)
          .map((t, i) => t - rec.ticks("hourly")[i]!);
        expect(new Set(gaps)).toEqual(new Set([3_600_000]));
        await stop(app);
      }
    });
  });

  it("pause skips ticks until resume; trigger starts a run at once; backfill starts the ticks of a range once", async () => {
    const rec = new Recorder();
    const clock = new MockClock(T0);
    const app = await openApp(new MemoryStore(), clock, rec);
    const s = app.runtime.schedules;
    await s.upsert(spec({ catchUp: "last" }));
    await tickTo(clock, T0 + 30_000, rec, "every-minute", 1);
    expect((await s.pause("every-minute")).nextTickMs).toBeNull();
    clock.set(T0 + 90_000);
    clock.set(T0 + 150_000);
    const resumed = await s.resume("every-minute");
    expect(resumed).toMatchObject({ paused: false, nextTickMs: T0 + 210_000 });
    await tickTo(clock, T0 + 210_000, rec, "every-minute", 2, app);
    // A tick of the paused minutes (or the missed one catch-up "last" would start at a resume) would have started by now.
    await allStarted(app);
    expect(rec.ticks("every-minute")).toEqual([T0 + 30_000, T0 + 210_000]);

    const fired = await s.trigger("every-minute");
    expect(fired).toMatchObject({ tickMs: T0 + 210_000, runId: `sched-every-minute-now${T0 + 210_000}`, newlySubmitted: true });
    await until(() => rec.started.includes(fired.runId), "triggered run");
    // Each trigger starts its own run, also a second one in the same millisecond.
    const again = await s.trigger("every-minute");
    expect(again).toMatchObject({ tickMs: T0 + 210_000, runId: `sched-every-minute-now${T0 + 210_000}_2`, newlySubmitted: true });
    await until(() => rec.started.includes(again.runId), "second triggered run");
    expect((await s.get("every-minute"))!.lastRunId).toBe(again.runId);
    await s.remove("every-minute");
    await s.upsert(spec({ catchUp: "last" }));
    // A schedule removed and created again in that millisecond passes over the run ids the first one used.
    expect((await s.trigger("every-minute")).runId).toBe(`sched-every-minute-now${T0 + 210_000}_3`);

    const back = await s.backfill("every-minute", T0 + 30_000, T0 + 150_000);
    expect(back.map((f) => f.tickMs)).toEqual([T0 + 30_000, T0 + 90_000, T0 + 150_000]);
    // The tick that ran (T0 + 30 s) is not started again.
    expect(back.map((f) => f.newlySubmitted)).toEqual([false, true, true]);
    await until(() => rec.ticks("every-minute").length === 4, "backfilled");
    expect(rec.ticks("every-minute")).toEqual([T0 + 30_000, T0 + 210_000, T0 + 90_000, T0 + 150_000]);
    expect((await s.backfill("every-minute", T0 + 90_000, T0 + 90_000))[0]!.newlySubmitted).toBe(false);
    expect(rec.doubled()).toEqual([]);

    await expect(s.pause("nope")).rejects.toBeInstanceOf(ScheduleNotFoundError);
    await expect(s.backfill("every-minute", T0, Number.NaN)).rejects.toBeInstanceOf(ValidationError);
    await expect(s.backfill("every-minute", T0 + MIN, T0)).rejects.toBeInstanceOf(ValidationError);
    await expect(s.backfill("every-minute", 0, T0)).rejects.toThrow(/more than 10000 ticks/);
    expect(await s.remove("every-minute")).toBe(true);
    expect(await s.list()).toEqual([]);
  });

  it("each trigger starts its own run, also one of a millisecond that an earlier trigger used before a later one", async () => {
    const rec = new Recorder();
    const clock = new MockClock(T0);
    const app = await openApp(new MemoryStore(), clock, rec);
    const s = app.runtime.schedules;
    await s.upsert(spec());
    const first = await s.trigger("every-minute");
    clock.set(T0 + 1);
    const later = await s.trigger("every-minute");
    // A trigger stamped with the earlier millisecond again (a clock set back, a request sent earlier but applied later).
    clock.set(T0);
    const again = await s.trigger("every-minute");
    expect([first, later, again].map((f) => [f.runId, f.newlySubmitted])).toEqual([
      [`sched-every-minute-now${T0}`, true],
      [`sched-every-minute-now${T0 + 1}`, true],
      [`sched-every-minute-now${T0}_2`, true],
    ]);
    await until(() => [first, later, again].every((f) => rec.started.includes(f.runId)), "three triggered runs");
    expect(rec.doubled()).toEqual([]);
    await stop(app);
  });

  it("a tick whose run a backfill already started with another input is kept, and the schedule goes on", async () => {
    const rec = new Recorder();
    const clock = new MockClock(T0);
    const app = await openApp(new MemoryStore(), clock, rec);
    const s = app.runtime.schedules;
    await s.upsert(spec());
    // A backfill of a future tick, then the input changes: that tick's run id now exists with the old input.
    await s.backfill("every-minute", T0 + 30_000, T0 + 30_000);
    await s.upsert(spec({ run: { input: enc("new") } }));
    await tickTo(clock, T0 + 30_000, rec, "every-minute", 1, app);
    await tickTo(clock, T0 + 90_000, rec, "every-minute", 2, app);
    expect(rec.ticks("every-minute")).toEqual([T0 + 30_000, T0 + 90_000]);
    expect(rec.doubled()).toEqual([]);
  });

  it("jitter delays each tick's run by the same amount in every process, below the bound", async () => {
    const rec = new Recorder();
    const clock = new MockClock(T0);
    const app = await openApp(new MemoryStore(), clock, rec);
    await app.runtime.schedules.upsert(spec({ jitterMs: 20_000 }));
    clock.set(T0 + 30_000);
    await until(async () => (await app.runtime.schedules.get("every-minute"))?.lastTickMs === T0 + 30_000, "tick decided");
    const [job] = (await app.queue.view().listJobs("workflow-steps", "scheduled")).items;
    expect(job).toBeDefined();
    const { tickJitterMs } = await import("../../runtime/workflow/schedules/schedule-record.js");
    const jitter = tickJitterMs("every-minute", T0 + 30_000, 20_000);
    expect(jitter).toBeGreaterThan(0);
    expect(jitter).toBeLessThan(20_000);
    expect(job!.runAt).toBe(T0 + 30_000 + jitter);
    clock.set(T0 + 30_000 + jitter);
    await until(() => rec.ticks("every-minute").length === 1, "jittered run");
  });

  it("refuses bad definitions with every problem listed, and writes nothing", async () => {
    const rec = new Recorder();
    const app = await openApp(new MemoryStore(), new MockClock(T0), rec, false);
    const s = app.runtime.schedules;
    const bad: [Partial<ScheduleSpec>, RegExp][] = [
      [{ cron: "61 * * * *" }, /minute: 61/],
      [{ cron: "0 0 30 2 *" }, /never matches/],
      [{ cron: "* * * * * * *" }, /5 fields/],
      [{ timezone: "Mars/Olympus" }, /not an IANA timezone/],
      [{ id: "has.dot" }, /id must be/],
      [{ id: "x".repeat(65) }, /id must be/],
      [{ overlap: "queue" as never }, /overlap must be/],
      [{ catchUp: { allWithinMs: Number.POSITIVE_INFINITY } }, /catchUp/],
      [{ catchUp: { allWithinMs: Number.NaN } }, /catchUp/],
      [{ catchUp: "all" as never }, /catchUp/],
      [{ jitterMs: 1e30 }, /jitterMs/],
      [{ jitterMs: -1 }, /jitterMs/],
      [{ run: { input: "x" as never } }, /run.input/],
      [{ run: { input: enc("x"), options: { runAt: T0 } as never } }, /runAt is not allowed/],
      [{ run: { input: enc("x"), options: { headers: { "workflow.x": "1" } } } }, /reserved/],
    ];
    for (const [over, message] of bad) await expect(s.upsert(spec(over)), JSON.stringify(over)).rejects.toThrow(message);
    const both = await s.upsert(spec({ cron: "nope", jitterMs: -1 })).catch((e: unknown) => e);
    expect(both).toBeInstanceOf(ValidationError);
    expect((both as ValidationError).issues).toHaveLength(2);
    expect(await s.list()).toEqual([]);
  });
});
