/**
 * @module A schedule's ticks with a clock far ahead: past the year 3000
 * (where the calendar library stops looking ahead), past the year 10,000
 * and at the last instant a `Date` holds. Before, the next tick was none
 * there (`get` and `list` said `nextTickMs: null`, a backfill started no
 * run) while the worker still found the latest tick behind its clock, and
 * then never woke for the next one. Every view now sees the same ticks: the
 * worker, `get`, `list` and `backfill`, up to the last instant and none
 * past it.
 */
import { Cron } from "croner";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore, MockClock, NoopTerminalHook, Queue, StepOutcome, ValidationError, WorkflowRuntime, type RunnerHandle } from "taquba";
import { cronTimes } from "../../runtime/workflow/schedules/cron-times.js";
import { MAX_INSTANT_MS } from "../../runtime/time-bounds.js";
import { testRandom } from "../support/seed.js";
import { enc, until } from "../workflow/helpers.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

const MINUTE = 60_000;
const ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Kiritimati", "Asia/Kathmandu"];
const CRONS = ["* * * * *", "30 2 * * *", "0 0 29 2 *", "15 10 * * 1-5", "*/7 * * * * *"];

describe("cron times past the year 2800", () => {
  it("are croner's own where croner still looks ahead (to the year 2990), in every zone", () => {
    const r = testRandom("far-future cron times");
    const from = Date.UTC(2800, 0, 1);
    const to = Date.UTC(2990, 0, 1);
    for (const zone of ZONES) {
      for (const cron of CRONS) {
        const ours = cronTimes("test", cron, zone);
        const theirs = new Cron(cron, { timezone: zone, paused: true, mode: "5-or-6-parts" });
        for (let i = 0; i < 8; i++) {
          const at = from + r.int(to - from);
          const what = `${cron} in ${zone} at ${new Date(at).toISOString()}`;
          expect(ours.next(at), `next: ${what}`).toBe(theirs.nextRun(new Date(at))?.getTime() ?? null);
          expect(ours.latestAtOrBefore(at), `latest: ${what}`).toBe(theirs.previousRuns(1, new Date(at + 1))[0]?.getTime() ?? null);
        }
      }
    }
  });

  it("agree with each other around the years 3000 and 10,000 and the last instant", () => {
    const r = testRandom("far-future cron times");
    const around = [Date.UTC(3000, 0, 1), Date.UTC(10_000, 0, 1), Date.UTC(100_000, 0, 1), MAX_INSTANT_MS - 40 * 86_400_000];
    for (const zone of ZONES) {
      for (const cron of CRONS) {
        const t = cronTimes("test", cron, zone);
        for (const centre of around) {
          for (let i = 0; i < 6; i++) {
            const at = centre + r.int(60 * 86_400_000) - 30 * 86_400_000;
            const what = `${cron} in ${zone} at ${at}`;
            const next = t.next(at);
            if (next === null) {
              // Only at the end: no tick between the instant and the last one a Date holds.
              const last = t.latestAtOrBefore(MAX_INSTANT_MS);
              expect(last !== null && last <= at, `no next tick: ${what}`).toBe(true);
              continue;
            }
            expect(next! > at, what).toBe(true);
            // The next tick is a tick, and none lies between the instant and it.
            expect(t.latestAtOrBefore(next!), what).toBe(next);
            const latest = t.latestAtOrBefore(next! - 1);
            expect(latest !== null && latest <= at, `latest before next: ${what}`).toBe(true);
            expect(t.next(latest!), `next of latest: ${what}`).toBe(next);
          }
        }
      }
    }
  });

  it("end at the last instant a Date holds: a tick there is the last one, none past it", () => {
    const t = cronTimes("test", "* * * * *", "UTC");
    expect(t.next(MAX_INSTANT_MS - 1)).toBe(MAX_INSTANT_MS);
    expect(t.next(MAX_INSTANT_MS)).toBeNull();
    expect(t.latestAtOrBefore(MAX_INSTANT_MS)).toBe(MAX_INSTANT_MS);
    expect(t.latestAtOrBefore(MAX_INSTANT_MS + 1)).toBe(MAX_INSTANT_MS);
    expect(t.latestAtOrBefore(Number.MAX_SAFE_INTEGER)).toBe(MAX_INSTANT_MS);
    // Ticks that would fall past the end are none: Berlin's midnight is 22:00 UTC, the next one a day after the end.
    const berlin = cronTimes("test", "0 0 * * *", "Europe/Berlin");
    expect(berlin.next(MAX_INSTANT_MS - 3 * 3_600_000)).toBe(MAX_INSTANT_MS - 2 * 3_600_000);
    expect(berlin.next(MAX_INSTANT_MS - 2 * 3_600_000)).toBeNull();
    expect(berlin.latestAtOrBefore(MAX_INSTANT_MS)).toBe(MAX_INSTANT_MS - 2 * 3_600_000);
  });
});

/** A runtime over a MemoryStore at `nowMs`, recording the runs its steps start. */
async function open(nowMs: number) {
  const store = new MemoryStore();
  const clock = new MockClock(nowMs);
  const queue = await Queue.open(store, "app", { clock, flushIntervalMs: 1 });
  const started = new Set<string>();
  const runtime = WorkflowRuntime.builder(
    queue,
    store,
    {
      runStep: async (s) => {
        started.add(s.runId);
        return StepOutcome.succeed(s.payload);
      },
    },
    NoopTerminalHook,
  ).build();
  let worker: RunnerHandle | undefined;
  closers.push(async () => {
    await worker?.shutdown();
    await queue.close();
  });
  return { runtime, clock, started, spawn: () => (worker = runtime.spawn()) };
}

describe("every view of a schedule with a clock far ahead", () => {
  it.each([
    ["past the year 3000", Date.UTC(3001, 5, 1, 12, 0, 30)],
    ["past the year 10,000", Date.UTC(10_001, 5, 1, 12, 0, 30)],
    ["past the year 100,000", Date.UTC(100_001, 5, 1, 12, 0, 30)],
  ])("%s: get, list, backfill and the worker see the same ticks", async (_what, now) => {
    const { runtime, clock, started, spawn } = await open(now);
    const first = now + 30_000;
    await runtime.schedules.upsert({ id: "s", cron: "* * * * *", run: { input: enc("x") } });
    await runtime.schedules.upsert({ id: "b", cron: "* * * * *", run: { input: enc("x") } });
    expect((await runtime.schedules.get("s"))?.nextTickMs).toBe(first);
    expect((await runtime.schedules.list()).map((s) => [s.id, s.nextTickMs])).toEqual([
      ["b", first],
      ["s", first],
    ]);
    const fires = await runtime.schedules.backfill("b", now - 3 * MINUTE, now);
    expect(fires.map((f) => f.tickMs)).toEqual([3, 2, 1].map((m) => first - m * MINUTE));
    spawn();
    for (const tick of [first, first + MINUTE]) {
      clock.set(tick);
      await until(() => started.has(`sched-s-${tick}`), `the tick at ${new Date(tick).toISOString()}`);
      await until(async () => (await runtime.schedules.get("s"))?.nextTickMs === tick + MINUTE, "the next tick after it");
    }
  });

  it("at the last instant a Date holds: the worker runs the tick there, then every view says there is no next tick", async () => {
    const now = MAX_INSTANT_MS - 90_000;
    const { runtime, clock, started, spawn } = await open(now);
    await runtime.schedules.upsert({ id: "s", cron: "* * * * *", run: { input: enc("x") } });
    // Jittered ticks near the end are held at the last instant, not refused.
    await runtime.schedules.upsert({ id: "j", cron: "* * * * *", jitterMs: 86_400_000, run: { input: enc("x") } });
    await runtime.schedules.upsert({ id: "b", cron: "* * * * *", run: { input: enc("x") } });
    expect((await runtime.schedules.get("s"))?.nextTickMs).toBe(MAX_INSTANT_MS - MINUTE);
    const fires = await runtime.schedules.backfill("b", MAX_INSTANT_MS - 2 * MINUTE, MAX_INSTANT_MS);
    expect(fires.map((f) => f.tickMs)).toEqual([MAX_INSTANT_MS - 2 * MINUTE, MAX_INSTANT_MS - MINUTE, MAX_INSTANT_MS]);
    await expect(runtime.schedules.backfill("b", MAX_INSTANT_MS - MINUTE, MAX_INSTANT_MS + 1)).rejects.toThrow(ValidationError);
    spawn();
    for (const tick of [MAX_INSTANT_MS - MINUTE, MAX_INSTANT_MS]) {
      clock.set(tick);
      await until(() => started.has(`sched-s-${tick}`), `the tick at ${tick}`);
    }
    await until(() => started.has(`sched-j-${MAX_INSTANT_MS}`), "the jittered schedule's last tick");
    await until(async () => (await runtime.schedules.get("s"))?.lastTickMs === MAX_INSTANT_MS, "the last tick decided");
    expect((await runtime.schedules.get("s"))?.nextTickMs).toBeNull();
    expect((await runtime.schedules.list()).map((s) => [s.id, s.nextTickMs])).toEqual([
      ["b", null],
      ["j", null],
      ["s", null],
    ]);
  });
});
