/**
 * @module The catch-up policies as a pure function: which due ticks fire
 * after a scheduler was away, and how far the state advances.
 */
import { describe, expect, it } from "vitest";
import { cronTimes } from "../../runtime/workflow/schedules/cron-times.js";
import { MAX_TICKS_PER_PLAN, planTicks } from "../../runtime/workflow/schedules/tick-plan.js";

const MIN = 60_000;
const T0 = Date.parse("2026-01-05T00:00:00Z");
const everyMinute = cronTimes("test", "* * * * *", "UTC");

describe("planTicks", () => {
  it("fires the one due tick when the scheduler wakes on time, whatever the policy", () => {
    for (const c of ["none", "last", { allWithinMs: 10 * MIN }] as const) {
      expect(planTicks(everyMinute, T0, T0 + MIN + 5, c)).toEqual({ fire: [T0 + MIN], decidedThrough: T0 + MIN });
    }
  });

  it("plans nothing before the next tick is due", () => {
    expect(planTicks(everyMinute, T0, T0 + MIN - 1, "last")).toEqual({ fire: [], decidedThrough: null });
    expect(planTicks(everyMinute, T0 + MIN, T0 + MIN + 30_000, "last")).toEqual({ fire: [], decidedThrough: null });
  });

  it("none: drops every missed tick, keeps the latest only while it is within the grace", () => {
    // Away 10 minutes, back 30 s after a tick: that tick is on time, the 9 before it missed.
    expect(planTicks(everyMinute, T0, T0 + 10 * MIN + 30_000, "none")).toEqual({ fire: [T0 + 10 * MIN], decidedThrough: T0 + 10 * MIN });
    // An hourly schedule back 61 s after its tick: missed.
    const hourly = cronTimes("test", "0 * * * *", "UTC");
    expect(planTicks(hourly, T0, T0 + 60 * MIN + 61_000, "none")).toEqual({ fire: [], decidedThrough: T0 + 60 * MIN });
  });

  it("last: fires only the latest missed tick", () => {
    const hourly = cronTimes("test", "0 * * * *", "UTC");
    expect(planTicks(hourly, T0, T0 + 5 * 60 * MIN + 20 * MIN, "last")).toEqual({ fire: [T0 + 5 * 60 * MIN], decidedThrough: T0 + 5 * 60 * MIN });
  });

  it("all-within: fires every tick of the window, oldest first, and drops older ones", () => {
    const plan = planTicks(everyMinute, T0, T0 + 10 * MIN, { allWithinMs: 3 * MIN });
    expect(plan).toEqual({ fire: [T0 + 7 * MIN, T0 + 8 * MIN, T0 + 9 * MIN, T0 + 10 * MIN], decidedThrough: T0 + 10 * MIN });
  });

  it("all-within: hands out a long catch-up in bounded batches that resume where they stopped", () => {
    const secondly = cronTimes("test", "* * * * * *", "UTC");
    const now = T0 + 3_600_000;
    const first = planTicks(secondly, T0, now, { allWithinMs: 3_600_000 });
    expect(first.fire).toHaveLength(MAX_TICKS_PER_PLAN);
    expect(first.decidedThrough).toBe(first.fire.at(-1));
    let last = first.decidedThrough!;
    let total = first.fire.length;
    for (;;) {
      const p = planTicks(secondly, last, now, { allWithinMs: 3_600_000 });
      if (p.decidedThrough === null) break;
      expect(p.fire[0]).toBe(last + 1000);
      total += p.fire.length;
      last = p.decidedThrough;
    }
    expect(total).toBe(3600);
    expect(last).toBe(now);
  });
});
