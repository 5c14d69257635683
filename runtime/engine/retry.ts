/**
 * @module Bounded retries with exponential backoff for object-store calls.
 */
import { PreconditionFailedError, StoreUnavailableError, TaqubaError, ValidationError } from "../errors.js";

/** How the engine retries transient store failures (exported as `EngineRetryOptions`). */
export interface RetryPolicy {
  /** Attempts in all, the first included. Default: 8 (about 2 s of retrying). */
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

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Runs `op` until it succeeds, fails permanently, `stop()` says to give up,
 * or the attempts run out; the last failure is rethrown as
 * `StoreUnavailableError` naming the operation and key.
 */
export async function withRetries<T>(
  policy: RetryPolicy,
  operation: string,
  key: string,
  op: () => Promise<T>,
  stop: () => boolean = () => false,
): Promise<T> {
  const attempts = Math.max(1, policy.attempts ?? 8);
  const base = policy.baseDelayMs ?? 20;
  const max = policy.maxDelayMs ?? 1000;
  let lastErr: unknown;
  for (let i = 0; i < attempts; i++) {
    if (i > 0) {
      if (stop()) break;
      const delay = Math.min(max, base * 2 ** (i - 1));
      await sleep(delay / 2 + Math.random() * (delay / 2));
      if (stop()) break;
    }
    try {
      return await op();
    } catch (err) {
      if (isPermanent(err)) throw err;
      lastErr = err;
    }
  }
  if (lastErr instanceof StoreUnavailableError) throw lastErr;
  throw new StoreUnavailableError(operation, key, lastErr ?? new Error("gave up before trying"));
}
