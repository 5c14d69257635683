/**
 * @module The one backoff loop for object-store calls. The engine runs every
 * store call through it (with its `RetryPolicy` and `isPermanent`), and
 * `S3Store` runs each HTTP request through it (with its own attempt counts
 * and `isRetryableS3Error`), so a transient failure is retried the same way
 * wherever it happens: exponential backoff from `baseDelayMs`, capped at
 * `maxDelayMs`, each wait drawn from its upper half (equal jitter).
 */
import { MAX_TIMEOUT_MS } from "../clock.js";

/** Attempts and waits of one retry loop, every field filled in. */
export interface Backoff {
  /** Attempts in all, the first included (at least 1). */
  attempts: number;
  /** The wait before the second attempt; doubled before each later one. */
  baseDelayMs: number;
  /** The longest wait between two attempts. */
  maxDelayMs: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** How often a wait between attempts asks `stop()`: a caller that stops (an engine closing) waits this long at most, not a whole backoff. */
const STOP_POLL_MS = 50;

/**
 * Waits `ms`, or less once `stop()` says to give up. Measured on the
 * monotonic clock, as a timer is: a wall clock set back meanwhile (a
 * resumed VM, a stepped system clock) would stretch the wait by the jump.
 */
async function pause(ms: number, stop: (() => boolean) | undefined): Promise<void> {
  if (stop === undefined) return sleep(ms);
  for (const end = performance.now() + ms; !stop(); ) {
    const left = end - performance.now();
    if (left <= 0) return;
    await sleep(Math.min(left, STOP_POLL_MS));
  }
}

/**
 * The wait before attempt `n` (2 for the first retry): half fixed, half
 * random, so retries of many callers spread out. At most `MAX_TIMEOUT_MS`,
 * whatever the policy: a longer timer would fire at once.
 */
export function backoffDelay(policy: Backoff, n: number): number {
  // 2 ** 1024 is Infinity, and 0 * Infinity NaN (a wait that never ends when it can stop): the growth stops before.
  const delay = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.min(n - 2, 1023), MAX_TIMEOUT_MS);
  return delay / 2 + Math.random() * (delay / 2);
}

/**
 * Runs `op` (given the attempt number, from 1) until it succeeds, throws an
 * error `retryable` says no to, `stop()` says to give up, or the attempts run
 * out. Rethrows the last error as is (the first attempt always runs, so
 * there is one).
 */
export async function retryWithBackoff<T>(
  policy: Backoff,
  retryable: (err: unknown) => boolean,
  op: (attempt: number) => Promise<T>,
  stop?: () => boolean,
): Promise<T> {
  const attempts = Math.max(1, policy.attempts);
  let lastErr: unknown;
  for (let n = 1; n <= attempts; n++) {
    if (n > 1) {
      if (stop?.()) break;
      await pause(backoffDelay(policy, n), stop);
      if (stop?.()) break;
    }
    try {
      return await op(n);
    } catch (err) {
      if (!retryable(err) || n === attempts) throw err;
      lastErr = err;
    }
  }
  throw lastErr;
}
