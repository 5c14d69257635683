/**
 * @module Concurrency admission: at most `limit` claims held at once per
 * key of a queue, the key built from the job's headers by a template such
 * as `"{tenant_id}"`.
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

/** A resolved limit: the key function and the bound. */
export interface ResolvedConcurrency {
  readonly limit: number;
  readonly key: string | undefined;
  keyOf(headers: Readonly<Record<string, string>> | undefined): string;
}

const PLACEHOLDER = /\{([A-Za-z0-9_.-]+)\}/g;

/** Checks and compiles a `ConcurrencyConfig`; throws `ValidationError`. */
export function resolveConcurrency(c: ConcurrencyConfig): ResolvedConcurrency {
  if (c === null || typeof c !== "object") throw new ValidationError("QueueConfig.concurrency must be an object { limit, key? }");
  if (!Number.isInteger(c.limit) || c.limit < 1 || c.limit > 1_000_000) {
    throw new ValidationError(`QueueConfig.concurrency.limit must be an integer from 1 to 1000000, got ${String(c.limit)}`);
  }
  const template = c.key;
  if (template !== undefined) {
    if (typeof template !== "string" || template.length === 0 || template.length > 256) {
      throw new ValidationError(`QueueConfig.concurrency.key must be a template of 1 to 256 characters such as "{tenant_id}", got ${JSON.stringify(template)}`);
    }
    const rest = template.replace(PLACEHOLDER, "");
    if (rest.includes("{") || rest.includes("}")) {
      throw new ValidationError(`QueueConfig.concurrency.key ${JSON.stringify(template)} has an unbalanced brace; name headers as {header_name}`);
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

/**
 * The admission check of one pending job at claim time: `undefined` when
 * its queue has no limit (nothing to hold), `null` when its key is full
 * (leave it pending), else the slot it now holds.
 */
export function admit(
  slots: ConcurrencySlots,
  limit: ResolvedConcurrency | undefined,
  queue: string,
  headers: Readonly<Record<string, string>> | undefined,
): string | null | undefined {
  if (limit === undefined) return undefined;
  const slot = slotOf(queue, limit.keyOf(headers));
  return slots.tryTake(slot, limit.limit) ? slot : null;
}

/** How many pending jobs past `max` one claim may look at when keys are full, so jobs of a full key do not block the rest. */
export const ADMISSION_SCAN_BUDGET = 1024;
