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
import { isDebouncePeriod, MAX_DEBOUNCE_MS } from "../value-ranges.js";
import { describeValue, isOptionObject, optionFields, readOptions, refuseUnknownFields } from "../option-values.js";

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

// Each config read once into a copy (see `readOptions`): a limit set on Object.prototype is none.
const CONCURRENCY_FIELDS = optionFields<ConcurrencyConfig>({ limit: true, key: true });
const RATE_LIMIT_FIELDS = optionFields<RateLimitConfig>({ limit: true, periodMs: true, key: true });
const DEBOUNCE_FIELDS = optionFields<DebounceConfig>({ periodMs: true, key: true });

/** Longest debounce window: a day. */
export { MAX_DEBOUNCE_MS } from "../value-ranges.js";

/** Checks a debounce period; throws `ValidationError` naming `what`. */
export function validateDebouncePeriod(what: string, periodMs: unknown): asserts periodMs is number {
  if (!isDebouncePeriod(periodMs)) {
    throw new ValidationError(`${what} must be an integer from 1 to ${MAX_DEBOUNCE_MS} (a day), got ${describeValue(periodMs)}`);
  }
}

/** Checks and compiles a `DebounceConfig`; throws `ValidationError`. */
export function resolveDebounce(c: DebounceConfig): ResolvedDebounce {
  if (!isOptionObject(c)) throw new ValidationError(`QueueConfig.debounce must be an object { periodMs, key? }, got ${describeValue(c)}`);
  c = readOptions(c, DEBOUNCE_FIELDS, "QueueConfig.debounce") as DebounceConfig;
  validateDebouncePeriod("QueueConfig.debounce.periodMs", c.periodMs);
  const base = resolveConcurrency({ limit: 1, ...(c.key === undefined ? {} : { key: c.key }) }, "QueueConfig.debounce");
  return { periodMs: c.periodMs, key: base.key, keyOf: base.keyOf };
}

/** A resolved rate limit. */
export interface ResolvedRateLimit extends ResolvedConcurrency {
  readonly periodMs: number;
}

/** Checks and compiles a `RateLimitConfig`; throws `ValidationError`. */
export function resolveRateLimit(c: RateLimitConfig, what = "QueueConfig.rateLimit"): ResolvedRateLimit {
  if (!isOptionObject(c)) throw new ValidationError(`${what} must be an object { limit, periodMs, key? }, got ${describeValue(c)}`);
  c = readOptions(c, RATE_LIMIT_FIELDS, what) as RateLimitConfig;
  if (!Number.isInteger(c.periodMs) || c.periodMs < 1 || c.periodMs > 31_536_000_000) {
    throw new ValidationError(`${what}.periodMs must be an integer from 1 to 31536000000 (a year), got ${describeValue(c.periodMs)}`);
  }
  if (!Number.isInteger(c.limit) || c.limit < 1 || c.limit > 100_000) {
    throw new ValidationError(`${what}.limit must be an integer from 1 to 100000, got ${describeValue(c.limit)}`);
  }
  const base = resolveConcurrency({ limit: c.limit, ...(c.key === undefined ? {} : { key: c.key }) }, what);
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
  if (!isOptionObject(c)) throw new ValidationError(`${what} must be an object { limit, key? }, got ${describeValue(c)}`);
  c = readOptions(c, CONCURRENCY_FIELDS, what) as ConcurrencyConfig;
  if (!Number.isInteger(c.limit) || c.limit < 1 || c.limit > 1_000_000) {
    throw new ValidationError(`${what}.limit must be an integer from 1 to 1000000, got ${describeValue(c.limit)}`);
  }
  const template = c.key;
  if (template !== undefined) {
    if (typeof template !== "string" || template.length === 0 || template.length > 256) {
      throw new ValidationError(`${what}.key must be a template of 1 to 256 characters such as "{tenant_id}", got ${describeValue(template)}`);
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

/**
 * The slot name of a key of a queue's own limit, or of a flow rule's
 * (queue names contain no NUL). Keys and rule names are any text, so the
 * two kinds differ in their first character and a rule's name and key are
 * JSON-encoded: no tenant's key reads as another limit's.
 */
export function slotOf(queue: string, key: string, rule?: string): string {
  return rule === undefined ? `${queue}\u0000q${key}` : `${queue}\u0000r${JSON.stringify([rule, key])}`;
}

/** Keys of rate windows a process keeps before it drops those that ended. */
const PRUNE_FROM_KEYS = 10_000;

/** Claim times per (queue, key) within the current window of each: at most `limit` entries a key. */
export class RateWindows {
  /** Each key's claim times and the period of the limit they count for (keys of several limits share the map). */
  readonly #log = new Map<string, { times: number[]; periodMs: number }>();
  /** Keys at which a new key first drops the windows that ended: twice the keys left after the last drop, so dropping stays linear overall. */
  #pruneAt = PRUNE_FROM_KEYS;
  /** Times ended windows were dropped (a test checks the cost stays linear). */
  prunes = 0;

  /**
   * When a claim of `slot` is allowed at `now` under `rate`: `now` itself,
   * or the time the window next frees. Changes nothing.
   */
  allowedAt(slot: string, rate: ResolvedRateLimit, now: number): number {
    const log = this.#log.get(slot)?.times;
    if (log === undefined) return now;
    // A claim logged after `now` means the clock went back: count it as made now, so it holds the key for one period, not the jump.
    for (let i = log.length - 1; i >= 0 && log[i]! > now; i--) log[i] = now;
    while (log.length > 0 && log[0]! <= now - rate.periodMs) log.shift();
    return log.length < rate.limit ? now : log[0]! + rate.periodMs;
  }

  /** Records a claim of `slot` at `now` (after `allowedAt` said yes). */
  take(slot: string, rate: ResolvedRateLimit, now: number): void {
    let entry = this.#log.get(slot);
    if (entry === undefined) {
      // Keys seen once stay bounded: drop windows that ended before adding a key.
      if (this.#log.size >= this.#pruneAt) {
        this.#prune(now);
        this.#pruneAt = Math.max(PRUNE_FROM_KEYS, 2 * this.#log.size);
      }
      entry = { times: [], periodMs: rate.periodMs };
      this.#log.set(slot, entry);
    }
    entry.periodMs = rate.periodMs;
    const log = entry.times;
    log.push(now);
    if (log.length > rate.limit) log.shift();
  }

  /** Whether `slot` has a window in memory. */
  has(slot: string): boolean {
    return this.#log.has(slot);
  }

  /** The claim times of `slot` kept now, oldest first (a copy). */
  times(slot: string): number[] {
    return [...(this.#log.get(slot)?.times ?? [])];
  }

  /**
   * Seeds `slot` with claims a previous owner made (its durable window):
   * the times it kept, and when it said the window was full until `until`
   * with fewer times than `limit`, earlier entries that keep it full until
   * then. Keeps any claim this process already counted.
   */
  seed(slot: string, rate: ResolvedRateLimit, times: readonly number[], until: number, now: number): void {
    if (this.#log.has(slot)) return;
    // Mark the slot seen even when nothing is left, so it is not read again.
    // Times after `now` (the clock went back since they were written) count as now, and hold the key one period at most.
    const log = times.map((t) => Math.min(t, now)).filter((t) => t > now - rate.periodMs);
    if (until > now && log.length < rate.limit) {
      const pad = Math.min(until, now + rate.periodMs) - rate.periodMs;
      while (log.length < rate.limit) log.unshift(pad);
    }
    this.#log.set(slot, { times: log.slice(Math.max(0, log.length - rate.limit)), periodMs: rate.periodMs });
  }

  /** Drops the keys whose window ended, each under its own limit's period. */
  #prune(now: number): void {
    this.prunes++;
    for (const [k, { times, periodMs }] of this.#log) if (times.length === 0 || times[times.length - 1]! <= now - periodMs) this.#log.delete(k);
  }

  clear(): void {
    this.#log.clear();
    this.#pruneAt = PRUNE_FROM_KEYS;
  }
}

/**
 * Limits a job's own headers select, beside its queue's: a job whose
 * `FLOW_RULE_HEADER` names a rule the owner defined for its queue
 * (`Queue.defineFlowRules`) is admitted only within that rule's limits, per
 * the keys its `FLOW_CONCURRENCY_KEY_HEADER` and `FLOW_RATE_KEY_HEADER`
 * carry (a missing key header reads as empty: one key for the rule). The
 * workflow runtime sets these from `RunOptions.flow`.
 */
export interface FlowRule {
  /** Most claims of the rule's jobs held at once per concurrency key. */
  concurrency?: { limit: number };
  /** Most claims of the rule's jobs per rate key in any sliding window of `periodMs`. */
  rateLimit?: { limit: number; periodMs: number };
}

const FLOW_RULE_FIELDS = optionFields<FlowRule>({ concurrency: true, rateLimit: true });
const FLOW_CONCURRENCY_FIELDS = optionFields<NonNullable<FlowRule["concurrency"]>>({ limit: true });
const FLOW_RATE_FIELDS = optionFields<NonNullable<FlowRule["rateLimit"]>>({ limit: true, periodMs: true });

/** The header naming a job's flow rule. */
export const FLOW_RULE_HEADER = "workflow.flow";
/** The header carrying a job's concurrency key under its flow rule. */
export const FLOW_CONCURRENCY_KEY_HEADER = "workflow.flow_concurrency_key";
/** The header carrying a job's rate key under its flow rule. */
export const FLOW_RATE_KEY_HEADER = "workflow.flow_rate_key";
/**
 * The header carrying the concurrency limit of a job's flow rule when the
 * job was enqueued, so a reader in another process (which has no rules)
 * can tell a full key from the claimed jobs it sees (`derived-waiting`).
 * Admission never reads it: the owner's rule decides.
 */
export const FLOW_CONCURRENCY_LIMIT_HEADER = "workflow.flow_concurrency_limit";

/** A resolved flow rule. */
export interface ResolvedFlowRule {
  readonly name: string;
  readonly concurrency: ResolvedConcurrency | undefined;
  readonly rateLimit: ResolvedRateLimit | undefined;
}

/** Checks and compiles a `FlowRule` named `name`; throws `ValidationError`. */
export function resolveFlowRule(name: string, given: FlowRule): ResolvedFlowRule {
  if (typeof name !== "string" || name.length === 0 || name.length > 256) {
    throw new ValidationError(`a flow rule name must be 1 to 256 characters, got ${describeValue(name)}`);
  }
  if (!isOptionObject(given)) throw new ValidationError(`flow rule "${name}" must be an object { concurrency?, rateLimit? }, got ${describeValue(given)}`);
  // A misspelt field would otherwise leave the rule without the limit its author meant.
  refuseUnknownFields(given, FLOW_RULE_FIELDS, `flow rule "${name}": `, `flow rule "${name}"`);
  // Each field read once, its parts too: the limits checked are the limits kept.
  const rule = readOptions(given, FLOW_RULE_FIELDS, `flow rule "${name}"`);
  const keyed = (header: string) => ({
    limit: 0,
    key: undefined,
    keyOf: (headers: Readonly<Record<string, string>> | undefined) => (headers !== undefined && Object.hasOwn(headers, header) ? headers[header]! : ""),
  });
  const part = <K extends string>(v: unknown, what: string, shape: string, fields: readonly K[]) => {
    if (!isOptionObject(v)) throw new ValidationError(`flow rule "${name}": ${what} must be an object ${shape}, got ${describeValue(v)}`);
    refuseUnknownFields(v, fields, `flow rule "${name}": ${what}.`, `flow rule "${name}": ${what}`);
    return readOptions(v, fields, `flow rule "${name}": ${what}`);
  };
  let concurrency: ResolvedConcurrency | undefined;
  if (rule.concurrency !== undefined) {
    const { limit } = part(rule.concurrency, "concurrency", "{ limit }", FLOW_CONCURRENCY_FIELDS);
    const c = resolveConcurrency({ limit } as ConcurrencyConfig, `flow rule "${name}": concurrency`);
    concurrency = { ...keyed(FLOW_CONCURRENCY_KEY_HEADER), limit: c.limit };
  }
  let rateLimit: ResolvedRateLimit | undefined;
  if (rule.rateLimit !== undefined) {
    const { limit, periodMs } = part(rule.rateLimit, "rateLimit", "{ limit, periodMs }", FLOW_RATE_FIELDS);
    const r = resolveRateLimit({ limit, periodMs } as RateLimitConfig, `flow rule "${name}": rateLimit`);
    rateLimit = { ...keyed(FLOW_RATE_KEY_HEADER), limit: r.limit, periodMs: r.periodMs };
  }
  return { name, concurrency, rateLimit };
}

/** The limits that apply to one job: its queue's, then its flow rule's. Slot names keep them apart. */
export interface Limits {
  readonly queue: string;
  readonly concurrency: ResolvedConcurrency | undefined;
  readonly rateLimit: ResolvedRateLimit | undefined;
  readonly rules: ReadonlyMap<string, ResolvedFlowRule> | undefined;
}

/** One limit applied to one job: its slot (queue, rule, key) and bound. */
export interface Applied {
  readonly slot: string;
  readonly key: string;
  readonly concurrency?: ResolvedConcurrency;
  readonly rate?: ResolvedRateLimit;
  readonly rule?: string;
}

/** The limits that apply to a job with `headers`, its flow rule's first. */
export function applied(l: Limits, headers: Readonly<Record<string, string>> | undefined): Applied[] {
  const out: Applied[] = [];
  // An own header only: a name set on Object.prototype would put every job under a rule.
  const name = headers !== undefined && Object.hasOwn(headers, FLOW_RULE_HEADER) ? headers[FLOW_RULE_HEADER] : undefined;
  const rule = name === undefined ? undefined : l.rules?.get(name);
  // The rule's limits first: when both are full, the views name the more specific reason.
  if (rule !== undefined) {
    if (rule.rateLimit !== undefined) {
      const key = rule.rateLimit.keyOf(headers);
      out.push({ slot: slotOf(l.queue, key, rule.name), key, rate: rule.rateLimit, rule: rule.name });
    }
    if (rule.concurrency !== undefined) {
      const key = rule.concurrency.keyOf(headers);
      out.push({ slot: slotOf(l.queue, key, rule.name), key, concurrency: rule.concurrency, rule: rule.name });
    }
  }
  if (l.rateLimit !== undefined) {
    const key = l.rateLimit.keyOf(headers);
    out.push({ slot: slotOf(l.queue, key), key, rate: l.rateLimit });
  }
  if (l.concurrency !== undefined) {
    const key = l.concurrency.keyOf(headers);
    out.push({ slot: slotOf(l.queue, key), key, concurrency: l.concurrency });
  }
  return out;
}

/** Whether any limit may apply to jobs of a queue (the claim then scans past held-back jobs). */
export function hasLimits(l: Limits): boolean {
  return l.concurrency !== undefined || l.rateLimit !== undefined || (l.rules !== undefined && l.rules.size > 0);
}

/** What admission decided for one pending job. */
export type Admission =
  /** Claim it; `slots` are the concurrency slots it holds, if any limit applies. */
  | { readonly admit: true; readonly slots: readonly string[] | undefined }
  /** Leave it pending; `retryAt` is when a rate limit next admits it, if that is the reason. */
  | { readonly admit: false; readonly retryAt: number | undefined };

const FREE: Admission = { admit: true, slots: undefined };

/**
 * The admission check of one pending job at claim time, in the claim's
 * turn: every rate limit must admit it and every concurrency key have a
 * free slot; only then are the slots taken and the claim counted.
 */
export function admit(
  slots: ConcurrencySlots,
  windows: RateWindows,
  limits: Limits,
  headers: Readonly<Record<string, string>> | undefined,
  now: number,
): Admission {
  if (!hasLimits(limits)) return FREE;
  const all = applied(limits, headers);
  if (all.length === 0) return FREE;
  let retryAt: number | undefined;
  for (const a of all) {
    if (a.rate === undefined) continue;
    const at = windows.allowedAt(a.slot, a.rate, now);
    if (at > now) retryAt = Math.max(retryAt ?? at, at);
  }
  if (retryAt !== undefined) return { admit: false, retryAt };
  for (const a of all) {
    if (a.concurrency !== undefined && slots.held(a.slot) >= a.concurrency.limit) return { admit: false, retryAt: undefined };
  }
  const taken: string[] = [];
  for (const a of all) {
    if (a.concurrency !== undefined) {
      slots.tryTake(a.slot, a.concurrency.limit);
      taken.push(a.slot);
    }
    if (a.rate !== undefined) windows.take(a.slot, a.rate, now);
  }
  return { admit: true, slots: taken.length === 0 ? undefined : taken };
}

/** How many pending jobs past `max` one claim may look at when keys are full, so jobs of a full key do not block the rest. */
export const ADMISSION_SCAN_BUDGET = 1024;

/**
 * Why the limits hold a pending job back now, if they do: a rate limit
 * (until when) or a full concurrency key, its queue's or its flow rule's.
 * Reads the counts the claim path reads.
 */
export function heldBack(
  slots: ConcurrencySlots,
  windows: RateWindows,
  limits: Limits,
  headers: Readonly<Record<string, string>> | undefined,
  now: number,
):
  | { reason: "concurrency"; key: string; limit: number; held: number; rule?: string }
  | { reason: "rate_limit"; key: string; limit: number; periodMs: number; until: number; rule?: string }
  | undefined {
  if (!hasLimits(limits)) return undefined;
  const ruleOf = (a: Applied) => (a.rule === undefined ? {} : { rule: a.rule });
  const all = applied(limits, headers);
  for (const a of all) {
    if (a.rate === undefined) continue;
    const at = windows.allowedAt(a.slot, a.rate, now);
    if (at > now) return { reason: "rate_limit", key: a.key, limit: a.rate.limit, periodMs: a.rate.periodMs, until: at, ...ruleOf(a) };
  }
  for (const a of all) {
    if (a.concurrency === undefined) continue;
    const held = slots.held(a.slot);
    if (held >= a.concurrency.limit) return { reason: "concurrency", key: a.key, limit: a.concurrency.limit, held, ...ruleOf(a) };
  }
  return undefined;
}
