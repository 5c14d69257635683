/**
 * @module Retrying the workflow layer's own object-store calls (memo
 * entries, replay records, run result records) with backoff.
 *
 * A store fault (a timeout, a 503, a dropped connection) is transient: the
 * same call succeeds once the store answers again. Faults must not fail a
 * run or count against a step's attempts, so these calls are retried in
 * place first; a caller that still cannot reach the store puts the step back
 * without counting an attempt (see `step-processor`).
 */
import { ClosedError, PreconditionFailedError, StoreCorruptedError, TaqubaError, ValidationError } from "../errors.js";

/** How a store call is retried. */
export interface StoreRetryPolicy {
  /** Attempts in all, the first included. */
  readonly attempts: number;
  /** Delay before the first retry, doubled each time (with jitter). */
  readonly baseDelayMs: number;
  /** Longest delay between two attempts. */
  readonly maxDelayMs: number;
}

/** About 2.5 s of retrying: enough to ride out a burst of faults, short enough to keep a step's lease. */
export const STORE_RETRY: StoreRetryPolicy = { attempts: 9, baseDelayMs: 20, maxDelayMs: 1000 };

/**
 * Whether `err` is a store fault that repeating the call may fix. Bad
 * input, a refused create-if-absent, corrupted data and a closed queue are
 * not: repeating them gives the same answer.
 */
export function isStoreFault(err: unknown): boolean {
  if (err instanceof ValidationError || err instanceof PreconditionFailedError) return false;
  if (err instanceof StoreCorruptedError || err instanceof ClosedError) return false;
  if (err instanceof TaqubaError) return err.retryable;
  return true;
}

/** The backoff before retry number `retry` (from 1), with jitter in [delay/2, delay]. */
export function backoffMs(policy: StoreRetryPolicy, retry: number): number {
  const delay = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  return delay / 2 + Math.random() * (delay / 2);
}

/** Sleeps `ms` of real time (store faults pass in real time, whatever clock the runtime runs on); resolves early when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted === true) return resolve();
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * Runs `op` until it succeeds, fails with something other than a store
 * fault, or the attempts run out; then rethrows the last error.
 */
export async function retryStore<T>(op: () => Promise<T>, policy: StoreRetryPolicy = STORE_RETRY): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await op();
    } catch (err) {
      if (attempt >= policy.attempts || !isStoreFault(err)) throw err;
    }
    await sleep(backoffMs(policy, attempt));
  }
}
