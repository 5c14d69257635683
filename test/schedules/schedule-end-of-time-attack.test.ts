/**
 * @module Schedules at the end of the instants a `Date` holds (8.64e15 ms,
 * year 275760): the last instant a backfill or a clock takes, and near the
 * top of what a stored tick time may hold (2^53-1). Looking for a cron
 * tick there threw a RangeError from the calendar library below, which the
 * scheduler took for a store fault: it retried its whole pass forever, so
 * one schedule record there stopped every other schedule's ticks.
 * Ticks go on to the last instant and none lie past it (schedule-views-far-future
 * checks that every view of a schedule sees the same ones).
 */
import { pack, unpack } from "msgpackr";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore, MockClock, NoopTerminalHook, Queue, StepOutcome, WorkflowRuntime, type RunnerHandle } from "taquba";
import { cronTimes } from "../../runtime/workflow/schedules/cron-times.js";
import { scheduleKey } from "../../runtime/workflow/schedules/schedule-record.js";
import { MAX_INSTANT_MS } from "../../runtime/time-bounds.js";
import { enc, until } from "../workflow/helpers.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

const DAY = 86_400_000;
const NEAR_END = [
  MAX_INSTANT_MS - 8 * DAY,
  MAX_INSTANT_MS - 7 * DAY - 1,
  MAX_INSTANT_MS - 2 * DAY,
  MAX_INSTANT_MS - DAY - 1,
  MAX_INSTANT_MS - 120_001,
  MAX_INSTANT_MS - 1,
  MAX_INSTANT_MS,
  Number.MAX_SAFE_INTEGER,
];

describe("cron times at the end of the instants a Date holds", () => {
  it("answer without throwing: ticks up to the last instant, none past it, and a latest tick at or before the instant", () => {
    for (const tz of ["UTC", "Europe/Berlin", "Pacific/Kiritimati", "Pacific/Pago_Pago"]) {
      for (const cron of ["* * * * *", "0 0 1 1 *", "*/5 * * * * *"]) {
        const t = cronTimes("test", cron, tz);
        for (const at of NEAR_END) {
          const next = t.next(at);
          expect(next === null || (next > at && next <= MAX_INSTANT_MS), `${tz} ${cron} next(${at}) = ${next}`).toBe(true);
          const latest = t.latestAtOrBefore(at);
          expect(latest !== null && latest <= Math.min(at, MAX_INSTANT_MS), `${tz} ${cron} latestAtOrBefore(${at}) = ${latest}`).toBe(true);
        }
        expect(t.next(MAX_INSTANT_MS), `${tz} ${cron}: no tick past the last instant`).toBeNull();
      }
    }
  });
});

describe("a schedule at the end of the instants a Date holds", () => {
  it("is upserted, read, listed and backfilled to the last instant with a clock there, instead of a RangeError", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(MAX_INSTANT_MS - 10 * 60_000);
    const queue = await Queue.open(store, "app", { clock, flushIntervalMs: 1 });
    closers.push(() => queue.close());
    const runtime = WorkflowRuntime.builder(queue, store, { runStep: async (s) => StepOutcome.succeed(s.payload) }, NoopTerminalHook).build();
    await runtime.schedules.upsert({ id: "late", cron: "* * * * *", run: { input: enc("x") } });
    expect((await runtime.schedules.get("late"))?.nextTickMs).toBe(MAX_INSTANT_MS - 9 * 60_000);
    expect((await runtime.schedules.list()).map((s) => s.id)).toEqual(["late"]);
    const fires = await runtime.schedules.backfill("late", MAX_INSTANT_MS - 3 * 60_000, MAX_INSTANT_MS);
    expect(fires.map((f) => f.tickMs)).toEqual([3, 2, 1, 0].map((m) => MAX_INSTANT_MS - m * 60_000));
  });

  for (const [what, lastTickMs] of [
    ["the top of a stored time's range (2^53-1)", Number.MAX_SAFE_INTEGER],
    ["the last instant a Date holds", MAX_INSTANT_MS],
    ["a minute before the last instant", MAX_INSTANT_MS - 60_000],
  ] as const) {
    it(`a record whose last tick is at ${what} stops no other schedule's ticks`, async () => {
      const T0 = Date.parse("2026-01-05T00:00:30Z");
      const store = new MemoryStore();
      const clock = new MockClock(T0);
      const queue = await Queue.open(store, "app", { clock, flushIntervalMs: 1 });
      const started: string[] = [];
      const logged: string[] = [];
      const runtime = WorkflowRuntime.builder(
        queue,
        store,
        {
          runStep: async (s) => {
            if (s.stepNumber === 0) started.push(s.runId);
            return StepOutcome.succeed(s.payload);
          },
        },
        NoopTerminalHook,
      )
        .logger({ error: (_o, m) => logged.push(String(m)) })
        .build();
      let worker: RunnerHandle | undefined;
      closers.push(async () => {
        await worker?.shutdown();
        await queue.close();
      });
      await runtime.schedules.upsert({ id: "aaa", cron: "* * * * *", run: { input: enc("a") } });
      await runtime.schedules.upsert({ id: "zzz", cron: "* * * * *", run: { input: enc("z") } });
      const key = scheduleKey("workflow-steps", "aaa");
      await queue.kvPut(key, pack({ ...(unpack((await queue.kvGet(key))!) as Record<string, unknown>), lastTickMs, ticked: true }));
      worker = runtime.spawn();
      clock.set(T0 + 30_000);
      await until(() => started.includes(`sched-zzz-${T0 + 30_000}`), "zzz's first tick");
      clock.set(T0 + 90_000);
      await until(() => started.includes(`sched-zzz-${T0 + 90_000}`), "zzz's second tick");
      expect(started.some((r) => r.startsWith("sched-aaa-"))).toBe(false);
      expect(logged.filter((m) => m.includes("store fault"))).toEqual([]);
    });
  }
});
