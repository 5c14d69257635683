/**
 * @module The engine's retry policy for object-store calls: every store call
 * the engine makes goes through `withRetries` (see store-ops.ts), which runs
 * the store layer's one backoff loop and retries everything but permanent
 * errors.
 */
import { PreconditionFailedError, StoreUnavailableError, TaqubaError, ValidationError } from "../errors.js";
import { retryWithBackoff } from "../store/retry.js";

/** How the engine retries transient store failures (exported as `EngineRetryOptions`). */
export interface RetryPolicy {
  /** Attempts in all, the first included: a whole number from 1 to 100. Default: 8 (about 2 s of retrying). */
  attempts?: number;
  /** Delay before the first retry; doubled each time, with jitter. Default: 20 ms. */
  baseDelayMs?: number;
  /** Longest delay between attempts. Default: 1000 ms. */
  maxDelayMs?: number;
}

/** Errors that repeating the same call cannot fix. */
function isPermanent(err: unknown): boolean {
  if (err instanceof PreconditionFailedError || err instanceof ValidationError) return true;
  return err instanceof TaqubaError && !err.retryable;
}

/**
 * Runs `op` until it succeeds, fails permanently, `stop()` says to give up,
 * or the attempts run out (the store layer's one backoff loop,
 * `retryWithBackoff`); the last failure is rethrown as
 * `StoreUnavailableError` naming the operation and key.
 */
export async function withRetries<T>(policy: RetryPolicy, operation: string, key: string, op: () => Promise<T>, stop?: () => boolean): Promise<T> {
  const backoff = { attempts: policy.attempts ?? 8, baseDelayMs: policy.baseDelayMs ?? 20, maxDelayMs: policy.maxDelayMs ?? 1000 };
  try {
    return await retryWithBackoff(backoff, (err) => !isPermanent(err), op, stop);
  } catch (err) {
    if (isPermanent(err) || err instanceof StoreUnavailableError) throw err;
    throw new StoreUnavailableError(operation, key, err ?? new Error("gave up before trying"));
  }
}
