/**
 * @module Admission at claim time: at most `limit` claims held at once per
 * key of a queue (concurrency), and at most `limit` claims per key in any
 * sliding window of `periodMs` (rate), the key built from the job's headers
 * by a template such as `"{tenant_id}"`.
 *
 * Claims are in-memory leases committed synchronously (one turn of the
 * event loop), so counting them here, in the same turn as the claim, is
 * atomic with it: no two claims can both see a free slot. After a restart
 * every claim is void (recovery requeues the jobs), and so is every count.
 * A slot is released when its lease goes: settled, released, reaped.
 */
import { ValidationError } from "../errors.js";

/** Per-queue concurrency limit (`QueueConfig.concurrency`). */
export interface ConcurrencyConfig {
  /** Most claims held at once per key. */
  limit: number;
  /**
   * Template of the key over the job's headers, e.g. `"{tenant_id}"` or
   * `"{tenant_id}/{region}"`; a missing header reads as empty. Default:
   * one key for the whole queue.
   */
  key?: string;
}

/** Per-queue rate limit (`QueueConfig.rateLimit`). */
export interface RateLimitConfig {
  /** Most claims per key in any window of `periodMs`. */
  limit: number;
  periodMs: number;
  /** Key template over the job's headers, as for `ConcurrencyConfig.key`. Default: one key for the queue. */
  key?: string;
}

/** Per-queue debounce (`QueueConfig.debounce`): the last enqueue per key within `periodMs` wins. */
export interface DebounceConfig {
  /** Length of a debounce window, from the first enqueue of a key. */
  periodMs: number;
  /** Key template over the job's headers, as for `ConcurrencyConfig.key`. Default: one key for the queue. */
  key?: string;
}

/** A resolved debounce. */
export interface ResolvedDebounce {
  readonly periodMs: number;
  readonly key: string | undefined;
  keyOf(headers: Readonly<Record<string, string>> | undefined): string;
}

/** Longest debounce window: a day. */
export const MAX_DEBOUNCE_MS = 86_400_000;

/** Checks a debounce period; throws `ValidationError` naming `what`. */
export function validateDebouncePeriod(what: string, periodMs: unknown): asserts periodMs is number {
  if (typeof periodMs !== "number" || !Number.isInteger(periodMs) || periodMs < 1 || periodMs > MAX_DEBOUNCE_MS) {
    throw new ValidationError(`${what} must be an integer from 1 to ${MAX_DEBOUNCE_MS} (a day), got ${String(periodMs)}`);
  }
}

/** Checks and compiles a `DebounceConfig`; throws `ValidationError`. */
export function resolveDebounce(c: DebounceConfig): ResolvedDebounce {
  if (c === null || typeof c !== "object") throw new ValidationError("QueueConfig.debounce must be an object { periodMs, key? }");
  validateDebouncePeriod("QueueConfig.debounce.periodMs", c.periodMs);
  const base = resolveConcurrency({ limit: 1, ...(c.key === undefined ? {} : { key: c.key }) }, "QueueConfig.debounce");
  return { periodMs: c.periodMs, key: base.key, keyOf: base.keyOf };
}

/** A resolved rate limit. */
export interface ResolvedRateLimit extends ResolvedConcurrency {
  readonly periodMs: number;
}

/** Checks and compiles a `RateLimitConfig`; throws `ValidationError`. */
export function resolveRateLimit(c: RateLimitConfig): ResolvedRateLimit {
  if (c === null || typeof c !== "object") throw new ValidationError("QueueConfig.rateLimit must be an object { limit, periodMs, key? }");
  if (!Number.isInteger(c.periodMs) || c.periodMs < 1 || c.periodMs > 31_536_000_000) {
    throw new ValidationError(`QueueConfig.rateLimit.periodMs must be an integer from 1 to 31536000000 (a year), got ${String(c.periodMs)}`);
  }
  if (!Number.isInteger(c.limit) || c.limit < 1 || c.limit > 100_000) {
    throw new ValidationError(`QueueConfig.rateLimit.limit must be an integer from 1 to 100000, got ${String(c.limit)}`);
  }
  const base = resolveConcurrency({ limit: c.limit, ...(c.key === undefined ? {} : { key: c.key }) }, "QueueConfig.rateLimit");
  return { ...base, periodMs: c.periodMs };
}

/** A resolved limit: the key function and the bound. */
export interface ResolvedConcurrency {
  readonly limit: number;
  readonly key: string | undefined;
  keyOf(headers: Readonly<Record<string, string>> | undefined): string;
}

const PLACEHOLDER = /\{([A-Za-z0-9_.-]+)\}/g;

/** Checks and compiles a `ConcurrencyConfig`; throws `ValidationError`. */
export function resolveConcurrency(c: ConcurrencyConfig, what = "QueueConfig.concurrency"): ResolvedConcurrency {
  if (c === null || typeof c !== "object") throw new ValidationError(`${what} must be an object { limit, key? }`);
  if (!Number.isInteger(c.limit) || c.limit < 1 || c.limit > 1_000_000) {
    throw new ValidationError(`${what}.limit must be an integer from 1 to 1000000, got ${String(c.limit)}`);
  }
  const template = c.key;
  if (template !== undefined) {
    if (typeof template !== "string" || template.length === 0 || template.length > 256) {
      throw new ValidationError(`${what}.key must be a template of 1 to 256 characters such as "{tenant_id}", got ${JSON.stringify(template)}`);
    }
    const rest = template.replace(PLACEHOLDER, "");
    if (rest.includes("{") || rest.includes("}")) {
      throw new ValidationError(`${what}.key ${JSON.stringify(template)} has an unbalanced brace; name headers as {header_name}`);
    }
  }
  return {
    limit: c.limit,
    key: template,
    keyOf: (headers) =>
      template === undefined
        ? ""
        : template.replace(PLACEHOLDER, (_, name: string) => (headers !== undefined && Object.hasOwn(headers, name) ? headers[name]! : "")),
  };
}

/** Claims held per (queue, key), for the queues that have a limit. */
export class ConcurrencySlots {
  readonly #held = new Map<string, number>();

  /**
   * Takes a slot of `slot` when fewer than `limit` are held; returns
   * whether it did. Called from the claim path, in the claim's turn.
   */
  tryTake(slot: string, limit: number): boolean {
    const n = this.#held.get(slot) ?? 0;
    if (n >= limit) return false;
    this.#held.set(slot, n + 1);
    return true;
  }

  /** Gives a slot back (the lease that held it went). */
  release(slot: string): void {
    const n = this.#held.get(slot) ?? 0;
    if (n <= 1) this.#held.delete(slot);
    else this.#held.set(slot, n - 1);
  }

  /** Claims held under `slot` now. */
  held(slot: string): number {
    return this.#held.get(slot) ?? 0;
  }

  clear(): void {
    this.#held.clear();
  }
}

/** The slot name of a key of a queue (queue names contain no NUL). */
export function slotOf(queue: string, key: string): string {
  return `${queue}\u0000${key}`;
}

/** Claim times per (queue, key) within the current window of each: at most `limit` entries a key. */
export class RateWindows {
  readonly #log = new Map<string, number[]>();

  /**
   * When a claim of `slot` is allowed at `now` under `rate`: `now` itself,
   * or the time the window next frees. Changes nothing.
   */
  allowedAt(slot: string, rate: ResolvedRateLimit, now: number): number {
    const log = this.#log.get(slot);
    if (log === undefined) return now;
    while (log.length > 0 && log[0]! <= now - rate.periodMs) log.shift();
    return log.length < rate.limit ? now : log[0]! + rate.periodMs;
  }

  /** Records a claim of `slot` at `now` (after `allowedAt` said yes). */
  take(slot: string, rate: ResolvedRateLimit, now: number): void {
    let log = this.#log.get(slot);
    if (log === undefined) {
      // Keys seen once stay bounded: drop windows that ended before adding a key.
      if (this.#log.size >= 10_000) this.#prune(now, rate.periodMs);
      log = [];
      this.#log.set(slot, log);
    }
    log.push(now);
    if (log.length > rate.limit) log.shift();
  }

  #prune(now: number, periodMs: number): void {
    for (const [k, log] of this.#log) if (log.length === 0 || log[log.length - 1]! <= now - periodMs) this.#log.delete(k);
  }

  clear(): void {
    this.#log.clear();
  }
}

/** What admission decided for one pending job. */
export type Admission =
  /** Claim it; `slot` is the concurrency slot it holds, if its queue has a limit. */
  | { readonly admit: true; readonly slot: string | undefined }
  /** Leave it pending; `retryAt` is when a rate limit next admits it, if that is the reason. */
  | { readonly admit: false; readonly retryAt: number | undefined };

const FREE: Admission = { admit: true, slot: undefined };

/**
 * The admission check of one pending job at claim time, in the claim's
 * turn. With neither limit configured it decides at once.
 */
export function admit(
  slots: ConcurrencySlots,
  windows: RateWindows,
  limit: ResolvedConcurrency | undefined,
  rate: ResolvedRateLimit | undefined,
  queue: string,
  headers: Readonly<Record<string, string>> | undefined,
  now: number,
): Admission {
  if (limit === undefined && rate === undefined) return FREE;
  let rateSlot: string | undefined;
  if (rate !== undefined) {
    rateSlot = slotOf(queue, rate.keyOf(headers));
    const at = windows.allowedAt(rateSlot, rate, now);
    if (at > now) return { admit: false, retryAt: at };
  }
  let slot: string | undefined;
  if (limit !== undefined) {
    slot = slotOf(queue, limit.keyOf(headers));
    if (!slots.tryTake(slot, limit.limit)) return { admit: false, retryAt: undefined };
  }
  if (rate !== undefined) windows.take(rateSlot!, rate, now);
  return { admit: true, slot };
}

/** How many pending jobs past `max` one claim may look at when keys are full, so jobs of a full key do not block the rest. */
export const ADMISSION_SCAN_BUDGET = 1024;

/**
 * Why the limits hold a pending job back now, if they do: its rate limit
 * (until when) or its full concurrency key. Reads the same counts the
 * claim path does; changes nothing a claim would see differently.
 */
export function heldBack(
  slots: ConcurrencySlots,
  windows: RateWindows,
  limit: ResolvedConcurrency | undefined,
  rate: ResolvedRateLimit | undefined,
  queue: string,
  headers: Readonly<Record<string, string>> | undefined,
  now: number,
):
  | { reason: "concurrency"; key: string; limit: number; held: number }
  | { reason: "rate_limit"; key: string; limit: number; periodMs: number; until: number }
  | undefined {
  if (rate !== undefined) {
    const key = rate.keyOf(headers);
    const at = windows.allowedAt(slotOf(queue, key), rate, now);
    if (at > now) return { reason: "rate_limit", key, limit: rate.limit, periodMs: rate.periodMs, until: at };
  }
  if (limit !== undefined) {
    const key = limit.keyOf(headers);
    const held = slots.held(slotOf(queue, key));
    if (held >= limit.limit) return { reason: "concurrency", key, limit: limit.limit, held };
  }
  return undefined;
}
