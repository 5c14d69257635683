/**
 * @module Queue options: per-queue `QueueConfig`, `OpenOptions`, their
 * defaults (those of the Rust crate) resolved once, and the backoff math.
 */
import type { Clock } from "../clock.js";
import type { Logger } from "../logger.js";
import type { EngineOptions } from "../engine/engine.js";
import { ValidationError } from "../errors.js";
import { validateMillis, validatePositiveInt, validateQueueName } from "./names.js";
import {
  resolveConcurrency,
  resolveDebounce,
  resolveRateLimit,
  type ConcurrencyConfig,
  type DebounceConfig,
  type ResolvedDebounce,
  type RateLimitConfig,
  type ResolvedConcurrency,
  type ResolvedRateLimit,
} from "./admission.js";
import { describeValue, isOptionObject, optionFields, readOptions, refuseUnknownFields } from "../option-values.js";

/** Retry backoff: `delay = min(baseMs × factor^(attempts−1), maxMs)`. */
export interface BackoffConfig {
  /** Delay after the first failed attempt. Zero requeues at once. Default: 1000. */
  baseMs: number;
  /** Cap on the delay. Default: 300000 (5 minutes). */
  maxMs: number;
  /** Growth per attempt. Default: 2. */
  factor?: number;
}

/** Settings of one named queue. */
export interface QueueConfig {
  /** Lease of `claimNext`/`runWorker` claims when none is given. Default: 30000. */
  leaseMs?: number;
  /** Claims a job gets before it is dead-lettered; crash-interrupted claims count. Default: 3. */
  maxAttempts?: number;
  /** Default priority; lower is claimed first. Default: 1000 (`Priority.NORMAL`). */
  defaultPriority?: number;
  /** Retry backoff. Default: base 1 s, max 300 s, factor 2. */
  backoff?: BackoffConfig;
  /** Keep done records this long after ack. Default: undefined (deleted at ack). */
  doneRetentionMs?: number;
  /** Keep dead records this long after they die; `null` keeps them forever. Default: 7 days. */
  deadRetention?: number | null;
  /**
   * At most `limit` claims of this queue held at once per `key` (a template
   * over the job's headers, such as `"{tenant_id}"`). Default: no limit.
   * See docs/flow-control.md.
   */
  concurrency?: ConcurrencyConfig;
  /**
   * At most `limit` claims of this queue per `key` in any sliding window of
   * `periodMs`; a job over the limit stays pending until the window frees.
   * Default: no limit. See docs/flow-control.md.
   */
  rateLimit?: RateLimitConfig;
  /**
   * Every enqueue of this queue is debounced per `key` (a template over its
   * headers): the last enqueue of a key within `periodMs` of the first
   * wins, earlier ones are superseded (see `EnqueueOptions.debounce`,
   * which overrides it per enqueue). Default: none. Not for a workflow
   * runtime's step queue (every step would be debounced).
   */
  debounce?: DebounceConfig;
}

/** Options of `Queue.open`. */
export interface OpenOptions {
  /** Time source for every timestamp and timer, the engine's pause after a failed checkpoint included (unless `engineOptions.clock` is set). Default: `SystemClock`. */
  clock?: Clock;
  /** Settings for queues not listed in `queueConfigs`. Default: the `QueueConfig` defaults. */
  defaultQueueConfig?: QueueConfig;
  /** Per-queue settings, keyed by queue name. */
  queueConfigs?: Record<string, QueueConfig>;
  /** The engine's group-commit window. Default: the engine's. */
  flushIntervalMs?: number;
  /** Payloads larger than this many bytes live in their own objects; `null` never offloads. Default: 262144. */
  payloadOffloadBytes?: number | null;
  /**
   * Largest job payload an enqueue takes, offloaded or not (either is held
   * whole in memory when it is enqueued and when it is claimed); a larger
   * one is refused with `PayloadTooLargeError` before anything is written.
   * An integer from 1 to 2^30 (1 GiB). Default: 67108864 (64 MiB).
   */
  maxPayloadBytes?: number;
  /**
   * Where fencing and dead letters (error), and background failures (warn)
   * are logged: any object with pino-style `debug/info/warn/error(obj, msg)`
   * methods. Default: `console` at warn level. See docs/observability.md.
   */
  logger?: Logger;
  /**
   * Called for every job the reaper or open-time recovery dead-letters (not for settlements).
   * A throw, or a returned promise that rejects, is logged; the listeners and jobs after it are still told.
   */
  onDeadLettered?: (event: DeadLetteredEvent) => void;
  /**
   * Called once when the queue closes: with the reason when it stopped on
   * its own (a `FencedError` when another process opened the store, a
   * `ClosedError` whose cause is the failed store write when a write
   * failed after its retries), or `undefined` after `close()`. An
   * application typically exits or alerts on a reason. A throw, or a
   * returned promise that rejects, is logged.
   */
  onClosed?: (reason: Error | undefined) => void;
  /**
   * Memory for job records that left memory: once a checkpoint stored a job
   * record that no operation touched since, the queue keeps only its key in
   * memory and reads the record back through a cache of this many bytes
   * when a claim, settlement or view needs it. `null` keeps every record in
   * memory. A whole number of bytes (a fraction is refused at open).
   * Default: 33554432 (32 MiB). See docs/engine.md.
   */
  recordCacheBytes?: number | null;
  /**
   * @internal Engine options for tests and benchmarks (checkpoint thresholds,
   * paging). `pageValues.keyPrefixes` may only name job records (prefixes
   * starting with `j/`): the queue reads its other keys synchronously.
   */
  engineOptions?: EngineOptions;
}

/**
 * A job dead-lettered outside any settlement: by the reaper, by recovery on
 * open, or by a claim that found its payload object missing or corrupted,
 * or its stored record damaged.
 */
export interface DeadLetteredEvent {
  jobId: string;
  queueName: string;
  /** `record_corrupted`: a claim found the job's stored record damaged and set the job aside (see docs/queue.md). */
  reason: "lease_expired" | "interrupted" | "payload_missing" | "payload_corrupted" | "record_corrupted";
  /** The job's `lastError` (bounded like it: 16,384 characters and a marker of the cut). */
  lastError: string;
}

/** Priority constants; any integer 0..2^32−1 is accepted, lower first. */
export const Priority = { HIGH: 100, NORMAL: 1000, LOW: 10000 } as const;

/** Largest priority; priorities are stored as 10 decimal digits. */
export const MAX_PRIORITY = 2 ** 32 - 1;

const DAY_MS = 24 * 3600 * 1000;

/** A `QueueConfig` with every default filled in. */
export interface ResolvedQueueConfig {
  leaseMs: number;
  maxAttempts: number;
  defaultPriority: number;
  backoff: Required<BackoffConfig>;
  doneRetentionMs: number | undefined;
  deadRetentionMs: number | null;
  concurrency: ResolvedConcurrency | undefined;
  rateLimit: ResolvedRateLimit | undefined;
  debounce: ResolvedDebounce | undefined;
}

/** The settings of a queue no `QueueConfig` changes. */
export const DEFAULT_QUEUE_CONFIG: ResolvedQueueConfig = Object.freeze({
  // Long enough for most jobs; workers extend it with ensureAtLeast.
  leaseMs: 30_000,
  maxAttempts: 3,
  defaultPriority: Priority.NORMAL,
  backoff: Object.freeze({ baseMs: 1000, maxMs: 300_000, factor: 2 }),
  doneRetentionMs: undefined,
  // A week gives operators time to inspect and requeue failures.
  deadRetentionMs: 7 * DAY_MS,
  concurrency: undefined,
  rateLimit: undefined,
  debounce: undefined,
});

/** Whether `v` is a priority: an integer from 0 to `MAX_PRIORITY` (what enqueue accepts and what a job record holds). */
export function isPriority(v: unknown): v is number {
  return Number.isInteger(v) && (v as number) >= 0 && (v as number) <= MAX_PRIORITY;
}

/** A priority is an integer from 0 to `MAX_PRIORITY`; `path` names it as the caller wrote it. */
export function validatePriority(p: unknown, path = "priority"): asserts p is number {
  if (!isPriority(p)) {
    throw new ValidationError(`${path} must be an integer from 0 to ${MAX_PRIORITY} (lower is claimed first), got ${describeValue(p)}`);
  }
}

/** Every field of `QueueConfig`: a field given that is none of them is refused (a misspelt one would leave its default in force). */
const QUEUE_CONFIG_FIELDS = optionFields<QueueConfig>({
  leaseMs: true,
  maxAttempts: true,
  defaultPriority: true,
  backoff: true,
  doneRetentionMs: true,
  deadRetention: true,
  concurrency: true,
  rateLimit: true,
  debounce: true,
});

const BACKOFF_FIELDS = optionFields<BackoffConfig>({ baseMs: true, maxMs: true, factor: true });

/** Merges `c` over `base`, validating every given field; `path` names `c` in a refusal. */
export function resolveQueueConfig(c: QueueConfig | undefined, base: ResolvedQueueConfig = DEFAULT_QUEUE_CONFIG, path = "QueueConfig"): ResolvedQueueConfig {
  if (c === undefined) return base;
  if (!isOptionObject(c)) throw new ValidationError(`${path} must be an object of queue settings, got ${describeValue(c)}`);
  refuseUnknownFields(c, QUEUE_CONFIG_FIELDS, `${path}.`, path);
  // Each field read once into a copy: what is checked is what is kept, and a field set on Object.prototype is none.
  c = readOptions(c, QUEUE_CONFIG_FIELDS, path) as QueueConfig;
  if (c.backoff !== undefined) {
    if (!isOptionObject(c.backoff)) throw new ValidationError(`${path}.backoff must be an object { baseMs, maxMs, factor? }, got ${describeValue(c.backoff)}`);
    refuseUnknownFields(c.backoff, BACKOFF_FIELDS, `${path}.backoff.`, `${path}.backoff`);
    c.backoff = readOptions(c.backoff, BACKOFF_FIELDS, `${path}.backoff`) as BackoffConfig;
  }
  const out: ResolvedQueueConfig = { ...base, backoff: { ...base.backoff } };
  if (c.leaseMs !== undefined) {
    validatePositiveInt("QueueConfig.leaseMs", c.leaseMs);
    validateMillis("QueueConfig.leaseMs", c.leaseMs);
    out.leaseMs = c.leaseMs;
  }
  if (c.maxAttempts !== undefined) {
    validatePositiveInt("QueueConfig.maxAttempts", c.maxAttempts);
    out.maxAttempts = c.maxAttempts;
  }
  if (c.defaultPriority !== undefined) {
    validatePriority(c.defaultPriority, "QueueConfig.defaultPriority");
    out.defaultPriority = c.defaultPriority;
  }
  if (c.backoff !== undefined) {
    validateMillis("QueueConfig.backoff.baseMs", c.backoff.baseMs);
    validateMillis("QueueConfig.backoff.maxMs", c.backoff.maxMs);
    const factor = c.backoff.factor ?? 2;
    if (!(typeof factor === "number" && factor >= 1 && Number.isFinite(factor))) {
      throw new ValidationError(`QueueConfig.backoff.factor must be a number >= 1, got ${describeValue(factor)}`);
    }
    out.backoff = { baseMs: c.backoff.baseMs, maxMs: c.backoff.maxMs, factor };
  }
  if (c.doneRetentionMs !== undefined) {
    validateMillis("QueueConfig.doneRetentionMs", c.doneRetentionMs);
    out.doneRetentionMs = c.doneRetentionMs;
  }
  if (c.deadRetention !== undefined) {
    if (c.deadRetention !== null) validateMillis("QueueConfig.deadRetention", c.deadRetention);
    out.deadRetentionMs = c.deadRetention;
  }
  if (c.concurrency !== undefined) out.concurrency = resolveConcurrency(c.concurrency);
  if (c.rateLimit !== undefined) out.rateLimit = resolveRateLimit(c.rateLimit);
  if (c.debounce !== undefined) out.debounce = resolveDebounce(c.debounce);
  return out;
}

/** Resolves every queue's configuration once, at open. */
export class QueueConfigs {
  readonly #base: ResolvedQueueConfig;
  readonly #byName = new Map<string, ResolvedQueueConfig>();

  constructor(defaults: QueueConfig | undefined, perQueue: Record<string, QueueConfig> | undefined) {
    this.#base = resolveQueueConfig(defaults, DEFAULT_QUEUE_CONFIG, "defaultQueueConfig");
    for (const [name, c] of Object.entries(perQueue ?? {})) {
      validateQueueName(name);
      this.#byName.set(name, resolveQueueConfig(c, this.#base, `queueConfigs.${name}`));
    }
  }

  get(queue: string): ResolvedQueueConfig {
    return this.#byName.get(queue) ?? this.#base;
  }
}

/**
 * Delay before the next attempt after `attempts` claims failed:
 * `min(base × factor^(attempts−1), max)`; the first failure waits `base`.
 */
export function backoffDelay(b: Required<BackoffConfig>, attempts: number): number {
  if (b.baseMs === 0) return 0;
  const exp = Math.max(0, attempts - 1);
  const d = b.baseMs * b.factor ** exp;
  return Math.min(Number.isFinite(d) ? d : b.maxMs, b.maxMs);
}
