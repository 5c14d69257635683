/**
 * @module Which due ticks of a schedule start a run: the catch-up policy as
 * a pure function of the last decided tick and the time now.
 */
import type { CronTimes } from "./cron-times.js";
import { MISFIRE_GRACE_MS, type CatchUpPolicy } from "./schedule-types.js";

/** Most ticks one plan returns; the scheduler plans again after deciding them. */
export const MAX_TICKS_PER_PLAN = 256;

export interface TickPlan {
  /** Ticks that start a run, ascending. */
  readonly fire: readonly number[];
  /** The tick the schedule's state advances to once `fire` is decided: every due tick up to it was decided or skipped. Null: nothing due. */
  readonly decidedThrough: number | null;
}

/**
 * Plans the ticks in `(lastTickMs, nowMs]`. The latest of them is on time
 * when it is at most {@link MISFIRE_GRACE_MS} old and always fires; the
 * others were missed and fire as `catchUp` says.
 */
export function planTicks(times: CronTimes, lastTickMs: number, nowMs: number, catchUp: CatchUpPolicy): TickPlan {
  const latest = times.latestAtOrBefore(nowMs);
  if (latest === null || latest <= lastTickMs) return { fire: [], decidedThrough: null };
  const onTime = nowMs - latest <= MISFIRE_GRACE_MS;
  if (catchUp === "none") return { fire: onTime ? [latest] : [], decidedThrough: latest };
  if (catchUp === "last") return { fire: [latest], decidedThrough: latest };
  // all-within: every due tick no older than the window, oldest first, a bounded batch at a time.
  const from = Math.max(lastTickMs, nowMs - catchUp.allWithinMs - 1);
  const fire: number[] = [];
  for (let t = times.next(from); t !== null && t <= nowMs; t = times.next(t)) {
    fire.push(t);
    if (fire.length === MAX_TICKS_PER_PLAN && t < latest) return { fire, decidedThrough: t };
  }
  if (onTime && fire.at(-1) !== latest) fire.push(latest);
  return { fire, decidedThrough: latest };
}
