/**
 * @module The limits of every delay, timeout, lease and instant the SDK
 * accepts, and their checks.
 *
 * Times end up in index keys as zero-padded decimal digits (so that byte
 * order is time order); NaN, Infinity or 1e30 would print as text that sorts
 * before real timestamps and make a job due at once, a timeout fire at once,
 * or a lease never expire. So every public entry point checks its times
 * here, and the key encoding rejects anything these checks would.
 */
import { ValidationError } from "./errors.js";
import { describeValue } from "./option-values.js";

/** The longest delay, timeout or lease extension accepted: 10 years (of 365 days), in ms. */
export const MAX_DELAY_MS = 10 * 365 * 24 * 60 * 60 * 1000;

/** The latest instant accepted, in ms since the epoch: the largest a JavaScript `Date` holds (year 275760). */
export const MAX_INSTANT_MS = 8_640_000_000_000_000;

/**
 * Whether `ms` is a delay or timeout the SDK takes, as records store it (a
 * step's `after` delay, a signal wait's timeout): ms from 0 to
 * `MAX_DELAY_MS` (10 years), fractions kept. The writers' check and the
 * readers' (value-ranges.ts) both call it.
 */
export function isStoredDelay(ms: unknown): ms is number {
  return typeof ms === "number" && ms >= 0 && ms <= MAX_DELAY_MS;
}

/**
 * Checks a duration in ms: a finite number from 0 to `MAX_DELAY_MS`.
 * Throws `ValidationError` naming `what` otherwise.
 */
export function validateDelay(what: string, ms: unknown): number {
  if (!isStoredDelay(ms)) {
    throw new ValidationError(`${what} must be a number of milliseconds from 0 to ${MAX_DELAY_MS} (10 years), got ${describeValue(ms)}`);
  }
  return ms;
}

/**
 * Checks an instant in ms since the epoch: a finite number from 0 to
 * `MAX_INSTANT_MS`. Throws `ValidationError` naming `what` otherwise.
 */
export function validateInstant(what: string, at: unknown): number {
  if (typeof at !== "number" || !Number.isFinite(at) || at < 0 || at > MAX_INSTANT_MS) {
    throw new ValidationError(`${what} must be an instant in ms since 1970 from 0 to ${MAX_INSTANT_MS}, got ${describeValue(at)}`);
  }
  return at;
}

/** `ms` as an ISO-8601 instant for a message, or as the number it is when no date has it (NaN, 1e30). */
export function instantText(ms: number): string {
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? String(ms) : d.toISOString();
}
