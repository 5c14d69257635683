/**
 * @module Retries of one request to a cloud object store, shared by the
 * Azure and GCS stores: the store layer's backoff loop (retry.ts) for
 * failures the store calls transient, and loading of the optional SDK
 * packages they use.
 */
import { MissingDependencyError, TaqubaError, ValidationError } from "../errors.js";
import { retryWithBackoff } from "./retry.js";
import { describeValue, optionFields, readExactOptions } from "../option-values.js";

/** How failed requests are retried. */
export interface StoreRetryOptions {
  /** Attempts per request, the first included: an integer from 1 to 100. Default 6. */
  maxAttempts?: number;
  /** Backoff before the second attempt; doubles each time. Default 50 ms. */
  baseDelayMs?: number;
  /** Cap on one backoff. Default 2,000 ms. */
  maxDelayMs?: number;
}

const RETRY_FIELDS = optionFields<StoreRetryOptions>({ maxAttempts: true, baseDelayMs: true, maxDelayMs: true });

/** `StoreRetryOptions` with every default filled in. */
export type RetrySettings = Required<StoreRetryOptions>;

/** Most attempts a store's `retry.maxAttempts` may ask for (each HTTP store). */
export const MAX_STORE_ATTEMPTS = 100;

/** Validates `opts` and fills in the defaults; `store` names the store in the error. */
export function retrySettings(store: string, given: StoreRetryOptions = {}): RetrySettings {
  const opts = readExactOptions(given, RETRY_FIELDS, `${store}Options.retry`) as StoreRetryOptions;
  const settings = { maxAttempts: opts.maxAttempts ?? 6, baseDelayMs: opts.baseDelayMs ?? 50, maxDelayMs: opts.maxDelayMs ?? 2_000 };
  // An infinite delay would not wait forever: a timer that long fires after 1 ms.
  const finiteDelay = (n: number) => Number.isFinite(n) && n >= 0;
  if (
    !(Number.isInteger(settings.maxAttempts) && settings.maxAttempts >= 1 && settings.maxAttempts <= MAX_STORE_ATTEMPTS) ||
    !finiteDelay(settings.baseDelayMs) ||
    !finiteDelay(settings.maxDelayMs)
  ) {
    // Each value described, not JSON: JSON shows NaN as null, leaves a symbol out, and throws at a bigint.
    const got = `maxAttempts ${describeValue(settings.maxAttempts)}, baseDelayMs ${describeValue(settings.baseDelayMs)}, maxDelayMs ${describeValue(settings.maxDelayMs)}`;
    throw new ValidationError(`${store}: retry.maxAttempts must be an integer from 1 to ${MAX_STORE_ATTEMPTS} and delays finite numbers >= 0, got ${got}`);
  }
  return settings;
}

/** Validates a per-request timeout (default 60 s); `store` names the store in the error. */
export function requestTimeout(store: string, ms: number | undefined): number {
  const value = ms ?? 60_000;
  if (!Number.isInteger(value) || value < 1 || value > 3_600_000) {
    throw new ValidationError(`${store}: requestTimeoutMs must be an integer from 1 to 3,600,000, got ${describeValue(ms)}`);
  }
  return value;
}

/** Validates a listing page size (default and most: the service's `max`); `store` names the store in the error. */
export function listPageSize(store: string, size: number | undefined, max: number): number {
  const value = size ?? max;
  if (!Number.isInteger(value) || value < 1 || value > max) {
    throw new ValidationError(`${store}: listPageSize must be an integer from 1 to ${max}, got ${describeValue(size)}`);
  }
  return value;
}

/** How a store judges one failed attempt. */
export interface FailureJudge {
  /** Whether repeating the request may succeed. */
  retryable(err: unknown): boolean;
  /** The error to throw once retrying stops after `attempts` attempts. */
  giveUp(err: unknown, attempts: number): Error;
}

/**
 * Runs `attempt` until it succeeds, throws a `TaqubaError` (already judged),
 * throws something `judge` calls permanent, or runs out of attempts.
 */
export async function retryRequest<T>(settings: RetrySettings, judge: FailureJudge, attempt: () => Promise<T>): Promise<T> {
  let n = 0;
  const policy = { attempts: settings.maxAttempts, baseDelayMs: settings.baseDelayMs, maxDelayMs: settings.maxDelayMs };
  try {
    // The store layer's one backoff loop (retry.ts), as S3Store and the engine use.
    return await retryWithBackoff(
      policy,
      (err) => !(err instanceof TaqubaError) && judge.retryable(err),
      (i) => {
        n = i;
        return attempt();
      },
    );
  } catch (err) {
    if (err instanceof TaqubaError) throw err;
    throw judge.giveUp(err, n);
  }
}

const NETWORK_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "EAI_AGAIN",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
  "REQUEST_SEND_ERROR",
]);

/**
 * `check(err)`, or false when reading `err` throws: an error whose fields
 * throw when read (or a revoked Proxy) is none an SDK made, and a
 * retryability test must answer rather than throw.
 */
export function retryableUnlessUnreadable(check: (err: unknown) => boolean, err: unknown): boolean {
  try {
    return check(err);
  } catch {
    return false;
  }
}

/** Whether `err` (or its cause) is a failure to reach the service at all. */
export function isNetworkError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; typeof e === "object" && e !== null && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && NETWORK_CODES.has(code)) return true;
    const name = (e as { name?: unknown }).name;
    if (name === "TimeoutError" || name === "AbortError") return true;
    // node-fetch, under the GCS SDK: timeouts and socket failures.
    const type = (e as { type?: unknown }).type;
    if (name === "FetchError" && (type === "request-timeout" || type === "body-timeout" || type === "system")) return true;
  }
  return false;
}

/**
 * Imports the optional package `name`, or throws `MissingDependencyError`
 * telling the user to install it when it is absent. `importer` exists so the
 * missing case can be tested; it defaults to a dynamic `import`.
 */
export async function loadOptionalPackage<T>(name: string, feature: string, importer: (name: string) => Promise<unknown> = (n) => import(n)): Promise<T> {
  try {
    return (await importer(name)) as T;
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const message = err instanceof Error ? err.message : "";
    // Node sets a code; bundlers and test runners (Vite's "Could not resolve") only a message.
    const notFound =
      code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND" || /cannot find (package|module)|could not resolve|failed to resolve/i.test(message);
    if (notFound && (message.includes(`'${name}'`) || message.includes(`"${name}"`))) {
      throw new MissingDependencyError(feature, name, err);
    }
    throw err;
  }
}
