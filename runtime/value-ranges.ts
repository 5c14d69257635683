/**
 * @module The ranges of the numbers stored records hold: times, counts and
 * step indexes. The code that writes such a number and the code that reads
 * it back check it with the same function, so a stored value outside its
 * range (NaN, negative, fractional where whole, past 2^53) is damage no
 * writer made, and is refused as such instead of acted on.
 */

/**
 * Whether `v` is a time a record or an index key stores: milliseconds since
 * the epoch, finite, from 0 to 2^53-1 (an instant a clock reads, plus at
 * most a delay, a lease or a retention period). Fractions are kept; index
 * keys drop them.
 */
export function isStoredTime(v: unknown): v is number {
  return typeof v === "number" && v >= 0 && v <= Number.MAX_SAFE_INTEGER;
}

/** Whether `v` is a count a record stores (attempts, requeues, sizes, step indexes): a whole number from 0 up that a number holds exactly. */
export function isCount(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) >= 0;
}

/** Whether `v` is a limit a record stores (most attempts): a whole number from 1 up that a number holds exactly. */
export function isPositiveCount(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) >= 1;
}

/** Delays and timeouts: defined beside their limit and the writers' check, which call it too. */
export { isStoredDelay } from "./time-bounds.js";

/** The longest debounce window: a day, in ms. */
export const MAX_DEBOUNCE_MS = 86_400_000;

/** Whether `v` is a debounce window (`periodMs`): whole ms from 1 to a day. */
export function isDebouncePeriod(v: unknown): v is number {
  return Number.isInteger(v) && (v as number) >= 1 && (v as number) <= MAX_DEBOUNCE_MS;
}
