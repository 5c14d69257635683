/**
 * @module `SettlementEffects`: caller KV writes and follow-up enqueues that
 * commit in the same transaction as a settlement, a cancel or an enqueue.
 */
import { copyBytes } from "../bytes.js";
import { ValidationError } from "../errors.js";
import { checkedEnqueueItem } from "./validate-enqueue.js";
import { validateKvKey, validateKvValue } from "./names.js";
import { keptEngineKey, KvKeyRef } from "./user-keys.js";
import { userKey } from "./keys.js";
import type { EnqueueItem, EnqueueOptions } from "./types.js";

/** One staged KV operation, in staging order; a later op on a key wins. */
export type KvOp = { kind: "put"; key: string; value: Uint8Array } | { kind: "delete"; key: string };

/**
 * A put staged with its engine key at hand (`kvPutOnce`, and `kvPutOwned` of a
 * kept key or a `KvKeyRef`), so the commit does not look the key up among the kept ones
 * again. The engine key is a private field: the op still reads, compares and
 * encodes as a plain `KvOp`.
 */
class PutWithEngineKey {
  readonly kind = "put" as const;
  readonly key: string;
  readonly value: Uint8Array;
  readonly #engineKey: string;

  constructor(key: string, value: Uint8Array, engineKey: string) {
    this.key = key;
    this.value = value;
    this.#engineKey = engineKey;
  }

  /** The engine key staged with `op`, or undefined for an op staged without one. */
  static engineKeyOf(op: KvOp): string | undefined {
    return op instanceof PutWithEngineKey ? op.#engineKey : undefined;
  }
}

/** The engine key a staged op carries (see `SettlementEffects.kvPutOnce`), or undefined: look it up then. */
export const stagedEngineKey = PutWithEngineKey.engineKeyOf;

/**
 * Effects staged for one commit. Every operation is validated as it is
 * staged, so a bad key, an oversize value or a bad enqueue throws here and
 * never reaches a commit.
 *
 * @example
 * const effects = new SettlementEffects().kvPut("orders/1", status).enqueue("emails", body);
 * await queue.ack(job, effects);
 */
export class SettlementEffects {
  readonly kvOps: KvOp[] = [];
  readonly enqueues: EnqueueItem[] = [];

  /**
   * Writes `value` at caller key `key`: the bytes as they are now (a copy
   * is staged, so changing `value` later changes nothing committed).
   */
  kvPut(key: string, value: Uint8Array): this {
    validateKvKey(key);
    validateKvValue(key, value);
    // The engine keeps what it commits as it is: the caller's array, changed later, would change
    // what later reads in this process see (not what the WAL stored) and what a checkpoint stores.
    this.kvOps.push({ kind: "put", key, value: copyBytes(value) });
    return this;
  }

  /**
   * @internal `kvPut` without the copy, for an array the caller made for
   * this write and never changes or hands out afterwards (a record it has
   * just encoded): the workflow stages two such records per step. `key`:
   * a caller key, or its reference (`Queue.kvKeyRef`).
   */
  kvPutOwned(key: string | KvKeyRef, value: Uint8Array): this {
    if (typeof key !== "string") {
      // Checked when the reference was made.
      validateKvValue(key.key, value);
      this.kvOps.push(new PutWithEngineKey(key.key, value, KvKeyRef.engineKeyOf(key)));
      return this;
    }
    // Validated as by `kvPut`; a key kept in use (the workflow's step pointer, read every step) was validated
    // before, and its engine key goes with the op, so the commit does not look it up again.
    const engineKey = keptEngineKey(key);
    if (engineKey === undefined) validateKvKey(key);
    validateKvValue(key, value);
    this.kvOps.push(engineKey === undefined ? { kind: "put", key, value } : new PutWithEngineKey(key, value, engineKey));
    return this;
  }

  /**
   * @internal `kvPutOwned` for a key written once and never read on a hot
   * path (a step's history entry): it is not looked up among the kept keys
   * (a new key always misses there, and the lookup hashes and flattens it),
   * and its engine key is made here for the commit to use.
   */
  kvPutOnce(key: string, value: Uint8Array): this {
    validateKvKey(key);
    validateKvValue(key, value);
    this.kvOps.push(new PutWithEngineKey(key, value, userKey(key)));
    return this;
  }

  /** Deletes caller key `key` (absent: no effect). */
  kvDelete(key: string): this {
    validateKvKey(key);
    this.kvOps.push({ kind: "delete", key });
    return this;
  }

  /** Enqueues a job; its outcome is returned, aligned by index, by the settlement. */
  enqueue(queueName: string, payload: Uint8Array, opts: EnqueueOptions = {}): this {
    // The options as checked now: the caller may reuse or change its object before the commit.
    this.enqueues.push(checkedEnqueueItem(queueName, payload, opts));
    return this;
  }

  /** Adds everything staged in `other` after this one's operations. */
  merge(other: SettlementEffects): this {
    this.kvOps.push(...other.kvOps);
    this.enqueues.push(...other.enqueues);
    return this;
  }

  get isEmpty(): boolean {
    return this.kvOps.length === 0 && this.enqueues.length === 0;
  }
}

/**
 * Refuses effects with enqueues, for the operations that commit caller KV
 * effects only (a wake, a dead job's requeue, `kvCompareAndApply`). `what`
 * names the operation as the caller knows it ("a wake").
 */
export function requireKvOnly(effects: SettlementEffects | undefined, what: string): void {
  if (effects !== undefined && effects.enqueues.length > 0) {
    throw new ValidationError(`${what} commits caller KV effects only, not enqueues; enqueue follow-up jobs with enqueueWithEffects or a settlement`);
  }
}
