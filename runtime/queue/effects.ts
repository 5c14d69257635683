/**
 * @module `SettlementEffects`: caller KV writes and follow-up enqueues that
 * commit in the same transaction as a settlement, a cancel or an enqueue.
 */
import type { HeadedKey } from "../engine/key-family.js";
import { ValidationError } from "../errors.js";
import { objectsWithRoom } from "../engine/array-kinds.js";
import { describeValue, errorText } from "../option-values.js";
import { KvValueTooLargeError } from "./errors.js";
import { checkedEnqueueItem, rebuiltEnqueueItem, type RebuiltEnqueueOptions } from "./validate-enqueue.js";
import { MAX_KV_VALUE_SIZE, validateKvKey } from "./names.js";
import { copyCallerValue, type OwnedBytes } from "./owned-bytes.js";
import { keptEngineKey, KvKeyPrefixRef, KvKeyRef } from "./user-keys.js";
import { USER, userKey } from "./keys.js";
import type { EnqueueItem, EnqueueOptions } from "./types.js";

/** One staged KV operation, in staging order; a later op on a key wins. */
export type KvOp = { kind: "put"; key: string; value: Uint8Array } | { kind: "delete"; key: string };

/**
 * What this module alone hands the staged ops' constructors. A caller
 * reaches them through a staged op (`op.constructor`); without this, `new`
 * would give it an op the commit takes unchecked, under any engine key.
 */
const MINT = Symbol("staged KV op");

function refuseUnminted(mint: symbol): void {
  if (mint !== MINT)
    throw new ValidationError(
      "KV operations are staged by SettlementEffects.kvPut and kvDelete (or given as plain objects { kind, key, value }), not by calling the constructor of a staged one",
    );
}

/**
 * A put staged by `SettlementEffects` or `stageOwnedPut`: its key checked,
 * its value owned (a caller's copied once, or the workflow's own encoding)
 * and its engine key at hand. The commit reads the private fields only, so
 * nothing done to the op (or to `kvOps`) after staging reaches the store
 * unchecked; the public fields read, compare and encode as a plain `KvOp`,
 * and are frozen on an op a caller staged, so they always name what
 * commits. Only this module makes one.
 */
class StagedPut {
  readonly kind = "put" as const;
  readonly key: string;
  readonly value: Uint8Array;
  readonly #value: OwnedBytes;
  /** A key made under a prefix or a reference carries its head to the engine's memtable (engine/key-family.ts). */
  readonly #engineKey: string | HeadedKey;

  constructor(mint: symbol, key: string, value: OwnedBytes, engineKey: string | HeadedKey) {
    refuseUnminted(mint);
    this.key = key;
    this.value = value;
    this.#value = value;
    this.#engineKey = engineKey;
  }

  /** Puts `op` into `txn` when it was staged by this module; false for an op made by hand. */
  static commitInto(op: object, txn: KvTxn): boolean {
    if (!(#engineKey in op)) return false;
    txn.put(op.#engineKey, op.#value);
    return true;
  }

  static isStaged(op: object): boolean {
    return #engineKey in op;
  }
}

/** A delete staged by `SettlementEffects`, its key checked (see `StagedPut`). */
class StagedDelete {
  readonly kind = "delete" as const;
  readonly key: string;
  readonly #engineKey: string;

  constructor(mint: symbol, key: string, engineKey: string) {
    refuseUnminted(mint);
    this.key = key;
    this.#engineKey = engineKey;
  }

  /** Deletes `op`'s key in `txn` when it was staged by this module; false for an op made by hand. */
  static commitInto(op: object, txn: KvTxn): boolean {
    if (!(#engineKey in op)) return false;
    txn.delete(op.#engineKey);
    return true;
  }

  static isStaged(op: object): boolean {
    return #engineKey in op;
  }
}

/** What committing staged KV ops needs of a transaction. */
export interface KvTxn {
  /** `key`: a string, or a key made under a prefix that carries its head to the engine (engine/key-family.ts). */
  put(key: string | HeadedKey, value: OwnedBytes): void;
  delete(key: string): void;
}

/** The engine key of valid caller key `key`: kept, or made. */
function engineKeyOf(key: string): string {
  return keptEngineKey(key) ?? userKey(key);
}

/**
 * Applies the KV ops of `effects` in `txn`, in staging order. Ops staged
 * through this module go in as staged; an op pushed onto `kvOps` by hand
 * is read once, checked as `kvPut` or `kvDelete` checks and copied, and
 * throws as they throw (before anything is committed).
 */
export function commitKvOps(effects: SettlementEffects, txn: KvTxn): void {
  const ops = effects.kvOps;
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i] as unknown;
    // A brand check throws on a primitive: those are refused as made by hand.
    if (typeof op === "object" && op !== null && (StagedPut.commitInto(op, txn) || StagedDelete.commitInto(op, txn))) continue;
    const read = readHandMadeOp(op, i);
    if (read.kind === "put") txn.put(read.engineKey, read.value);
    else txn.delete(read.engineKey);
  }
}

/** A `KvOp` not staged through this module, each field read once and checked. */
function readHandMadeOp(
  op: unknown,
  i: number,
): { kind: "put"; key: string; engineKey: string; value: OwnedBytes } | { kind: "delete"; key: string; engineKey: string } {
  if (op === null || typeof op !== "object")
    throw new ValidationError(`KV op ${i} of the effects must be an object, got ${describeValue(op)}; stage KV writes with kvPut and kvDelete`);
  let kind: unknown;
  let key: unknown;
  let value: unknown;
  try {
    kind = (op as KvOp).kind;
    key = (op as KvOp).key;
    if (kind === "put") value = (op as { value: unknown }).value;
  } catch (err) {
    throw new ValidationError(`KV op ${i} of the effects cannot be read (${errorText(err)}); stage KV writes with kvPut and kvDelete`);
  }
  if (kind !== "put" && kind !== "delete")
    throw new ValidationError(`KV op ${i} of the effects has kind ${describeValue(kind)}; use "put" or "delete", or stage with kvPut and kvDelete`);
  validateKvKey(key);
  if (kind === "delete") return { kind, key, engineKey: engineKeyOf(key) };
  return { kind, key, engineKey: engineKeyOf(key), value: copyCallerValue(key, value) };
}

/**
 * `effects` with every KV op staged (frozen, checked, its value owned): an
 * op pushed onto `kvOps` by hand is read once, checked and copied, in a new
 * `SettlementEffects` (the caller's is left as it is). A check of the ops'
 * keys made on the answer holds for what commits: a hand-made op's getter
 * cannot answer one key to the check and another to the commit.
 */
export function withStagedKvOps(effects: SettlementEffects): SettlementEffects {
  const ops = effects.kvOps;
  if (ops.every((op) => isStaged(op))) return effects;
  const out = new SettlementEffects();
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i] as unknown;
    if (isStaged(op)) {
      out.kvOps.push(op);
      continue;
    }
    const read = readHandMadeOp(op, i);
    out.kvOps.push(
      Object.freeze(read.kind === "put" ? new StagedPut(MINT, read.key, read.value, read.engineKey) : new StagedDelete(MINT, read.key, read.engineKey)),
    );
  }
  out.enqueues.push(...effects.enqueues);
  return out;
}

function isStaged(op: unknown): op is KvOp {
  return typeof op === "object" && op !== null && (StagedPut.isStaged(op) || StagedDelete.isStaged(op));
}

/**
 * @internal Stages a put of `value`, an array the queue or the workflow
 * just encoded, at caller key `key` (or its reference, `Queue.kvKeyRef`),
 * without a copy: the workflow stages two such records per step. The key
 * is checked (a kept key was checked before) and the size; the commit
 * takes the value as it is. Not a method of `SettlementEffects`, and not
 * exported by the package: a caller cannot stage an unchecked value.
 */
export function stageOwnedPut(effects: SettlementEffects, key: string | KvKeyRef, value: OwnedBytes): void {
  const name = typeof key === "string" ? key : key.key;
  // A kept key was validated before, and its engine key goes with the op (no look-up at the commit).
  const engineKey = typeof key === "string" ? (keptEngineKey(key) ?? validKeyEngineKey(key)) : KvKeyRef.headedKeyOf(key);
  checkSize(name, value);
  effects.kvOps.push(new StagedPut(MINT, name, value, engineKey));
}

/**
 * @internal `stageOwnedPut` for a key written once and never read on a hot
 * path (a step's history entry): it is not looked up among the kept keys
 * (a new key always misses there, and the lookup hashes and flattens it).
 */
export function stageOwnedPutOnce(effects: SettlementEffects, key: string, value: OwnedBytes): void {
  if (typeof key !== "string") validateKvKey(key);
  // The engine key is built first and flattened once, by the check of the caller key cut out of it: checked
  // on its own, the caller key (a concatenation) was flattened there and its engine key again by the memtable.
  const engineKey = userKey(key);
  const name = engineKey.slice(USER.length);
  validateKvKey(name);
  checkSize(name, value);
  effects.kvOps.push(new StagedPut(MINT, name, value, engineKey));
}

/**
 * @internal `stageOwnedPut` at caller key `prefix + suffix`, under a prefix
 * checked once (a run's history entries, one per step): only the suffix is
 * checked, and the key is neither built as a caller key first nor looked up
 * among the kept keys.
 */
export function stageOwnedPutUnder(effects: SettlementEffects, prefix: KvKeyPrefixRef, suffix: string, value: OwnedBytes): void {
  const engineKey = KvKeyPrefixRef.engineKeyUnder(prefix, suffix);
  // The caller key cut out of the engine key flattens the engine key once, here; the memtable then compares it flat.
  const name = engineKey.key.slice(USER.length);
  checkSize(name, value);
  effects.kvOps.push(new StagedPut(MINT, name, value, engineKey));
}

/**
 * @internal Stages an enqueue of options rebuilt from a job the queue
 * checked (see `rebuiltEnqueueItem`): the workflow's next step, once per
 * step. Not a method of `SettlementEffects`, and not exported by the
 * package: a caller's enqueue is always checked. `payloadOwned`: see
 * `rebuiltEnqueueItem`.
 */
export function stageRebuiltEnqueue(
  effects: SettlementEffects,
  queueName: string,
  payload: Uint8Array,
  opts: RebuiltEnqueueOptions,
  payloadOwned = false,
): void {
  effects.enqueues.push(rebuiltEnqueueItem(queueName, payload, opts, payloadOwned));
}

function validKeyEngineKey(key: string): string {
  validateKvKey(key);
  return userKey(key);
}

/** The size limit of any KV value: an owned value holds what a caller gave too (a step's output in its history entry). */
function checkSize(key: string, value: OwnedBytes): void {
  if (value.byteLength > MAX_KV_VALUE_SIZE) throw new KvValueTooLargeError(key, value.byteLength, MAX_KV_VALUE_SIZE);
}

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
  // With room for what a workflow step's settlement stages (its history entry and step pointer, its next step):
  // an empty literal grew to 17 slots at its first push (see `objectsWithRoom`).
  readonly kvOps: KvOp[] = objectsWithRoom<KvOp>(2);
  readonly enqueues: EnqueueItem[] = objectsWithRoom<EnqueueItem>(1);

  /**
   * Writes `value` at caller key `key`: the bytes as they are now (a copy
   * is staged, so changing `value` later changes nothing committed).
   */
  kvPut(key: string, value: Uint8Array): this {
    validateKvKey(key);
    // The engine keeps what it commits as it is: the caller's array, changed later, would change
    // what later reads in this process see (not what the WAL stored) and what a checkpoint stores.
    // Frozen: whoever reads kvOps before the commit (the workflow's check of a submission's keys) reads what commits.
    this.kvOps.push(Object.freeze(new StagedPut(MINT, key, copyCallerValue(key, value), engineKeyOf(key))));
    return this;
  }

  /** Deletes caller key `key` (absent: no effect). */
  kvDelete(key: string): this {
    validateKvKey(key);
    this.kvOps.push(Object.freeze(new StagedDelete(MINT, key, engineKeyOf(key))));
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
 * Why `effects`, as a caller passed it to a settlement, is refused: neither
 * absent nor a `SettlementEffects` (a number, null, an object lacking its
 * lists). Undefined when it may be applied. Checked at the call, since the
 * settlement reads its lists only once it is built.
 */
export function effectsRefusal(effects: unknown): ValidationError | undefined {
  if (effects === undefined) return undefined;
  if (typeof effects === "object" && effects !== null) {
    try {
      if (effects instanceof SettlementEffects) return undefined;
      const { kvOps, enqueues } = effects as { kvOps?: unknown; enqueues?: unknown };
      if (Array.isArray(kvOps) && Array.isArray(enqueues)) return undefined;
    } catch {
      // A getter that throws or a revoked Proxy: refused below like any other.
    }
  }
  return new ValidationError(`a settlement's effects must be a SettlementEffects (new SettlementEffects()), got ${describeValue(effects)}`);
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
