/**
 * @module The ticks of a backfill's range, listed a few at a time with a
 * turn of the event loop between: a sparse expression costs croner about
 * half a millisecond a tick (`0 0 29 2 1` looks at every day of the year),
 * so listing the 10,000 ticks a backfill may check in one go held the
 * owner's loop for seconds, and its lease renewals and timers with it.
 */
import { setImmediate as yieldToLoop } from "node:timers/promises";
import type { CronTimes } from "./cron-times.js";

/** Ticks listed between two turns of the event loop: a few milliseconds of croner's work for the sparsest expressions. */
export const TICKS_PER_TURN = 16;

/** The first ticks of a range, and whether the range holds more than were listed. */
export interface ListedTicks {
  readonly ticks: number[];
  /** Whether a tick past the last listed one is still within the range. */
  readonly more: boolean;
}

/**
 * The ticks of `times` in `[fromMs, toMs]`, at most `most` of them, in
 * order; a turn of the event loop after every {@link TICKS_PER_TURN}
 * looked for (the one past `most` included).
 */
export async function listTicks(times: CronTimes, fromMs: number, toMs: number, most: number): Promise<ListedTicks> {
  const ticks: number[] = [];
  let looked = 0;
  for (let t = times.next(fromMs - 1); t !== null && t <= toMs; t = times.next(t)) {
    if (ticks.length === most) return { ticks, more: true };
    ticks.push(t);
    if (++looked % TICKS_PER_TURN === 0) await yieldToLoop();
  }
  return { ticks, more: false };
}
