/**
 * @module Caller KV effects a step or a terminal hook stages, applied in the
 * transaction that settles it.
 */
import { copyBytes } from "../../bytes.js";
import { ValidationError } from "../../errors.js";
import { describeValue, isOptionBytes, readOptionArray, readOptions } from "../../option-values.js";
import { MAX_KV_VALUE_SIZE } from "../../queue/names.js";
import { SettlementEffects, stageOwnedPut } from "../../queue/effects.js";
import { copyOwned, type OwnedBytes, uint8ArraySize } from "../../queue/owned-bytes.js";
import type { EnqueueOptions } from "../../queue/types.js";
import type { StagedKv } from "../records/records.js";
import { RESERVED_KV_PREFIX } from "../records/reserved.js";
import { EffectsSealedError, InvalidEffectError, ReservedKeyError } from "../workflow-errors.js";

function checkKey(key: string): void {
  if (typeof key !== "string" || key.length === 0) throw new InvalidEffectError(String(key), "a KV key must be a non-empty string");
  if (key.startsWith(RESERVED_KV_PREFIX)) throw new ReservedKeyError(key, `the "${RESERVED_KV_PREFIX}" KV prefix belongs to the workflow runtime`);
}

/** `value` checked and copied once: the copy is what the settlement commits (see `applyStaged`). */
function copyValue(key: string, value: Uint8Array): OwnedBytes {
  const size = uint8ArraySize(value);
  if (size === undefined) throw new InvalidEffectError(key, "a KV value must be a Uint8Array");
  if (size > MAX_KV_VALUE_SIZE) {
    throw new InvalidEffectError(key, `the value is ${size} bytes, over MAX_KV_VALUE_SIZE (${MAX_KV_VALUE_SIZE}); store large values in the object store`);
  }
  const copy = copyOwned(value);
  if (copy === undefined) throw new InvalidEffectError(key, "the value is a view of a detached or shrunk ArrayBuffer, whose bytes are gone");
  return copy;
}

/**
 * What a live handle staged, its values the handle's own copies, which
 * nothing else holds: `applyStaged` stages them without another copy. A
 * replay record's staged effects are a plain `StagedKv` and are copied.
 */
class HandleStaged implements StagedKv {
  readonly puts: Array<[string, OwnedBytes]>;
  readonly deletes: string[];
  readonly #owned = true;

  constructor(puts: Array<[string, OwnedBytes]>, deletes: string[]) {
    this.puts = puts;
    this.deletes = deletes;
  }

  static is(staged: StagedKv): staged is HandleStaged {
    return #owned in staged;
  }
}

/** What a handle that staged nothing hands its settlement: one frozen object for every such step (most steps), only read. */
const NOTHING_STAGED: StagedKv = Object.freeze(new HandleStaged(Object.freeze([]) as never, Object.freeze([]) as never));

/**
 * Caller KV writes and deletes staged during a step, applied in the
 * settlement that commits the outcome the runner returned. Each operation
 * is validated as it is staged; after the step returns the handle is
 * sealed and staging throws {@link EffectsSealedError}. Delivery is
 * at-least-once, so stage absolute values.
 *
 * @example
 * step.effects.put(`app/runs/${step.runId}`, summary);
 */
export class EffectsHandle {
  // Made on the first put or delete: every step gets a handle, and most stage nothing.
  #puts: Map<string, OwnedBytes> | undefined;
  #deletes: Set<string> | undefined;
  #sealed = false;

  /** Stages a write of `value` at `key`; a later `put` of the same key replaces it. */
  put(key: string, value: Uint8Array): void {
    if (this.#sealed) throw new EffectsSealedError();
    checkKey(key);
    const copy = copyValue(key, value);
    if (this.#deletes?.has(key) === true)
      throw new InvalidEffectError(key, "it is already staged for a delete in this step; a key is either written or deleted");
    (this.#puts ??= new Map()).set(key, copy);
  }

  /** Stages a delete of `key`. */
  delete(key: string): void {
    if (this.#sealed) throw new EffectsSealedError();
    checkKey(key);
    if (this.#puts?.has(key) === true) throw new InvalidEffectError(key, "it is already staged for a write in this step; a key is either written or deleted");
    (this.#deletes ??= new Set()).add(key);
  }

  /** Whether the step has returned and staging is closed. */
  get sealed(): boolean {
    return this.#sealed;
  }

  /** Closes staging. The runtime calls it when the step returns. */
  seal(): void {
    this.#sealed = true;
  }

  /** What is staged, in a form replay records store: copies, so changing them changes nothing committed. */
  staged(): StagedKv {
    return {
      puts: this.#puts === undefined ? [] : Array.from(this.#puts, ([k, v]) => [k, copyBytes(v)]),
      deletes: this.#deletes === undefined ? [] : [...this.#deletes],
    };
  }

  /** @internal What is staged, holding the handle's own copies, for the settlement (see `applyStaged`): not handed to step code. */
  static stagedOwned(h: EffectsHandle): StagedKv {
    if (h.#puts === undefined && h.#deletes === undefined) return NOTHING_STAGED;
    return new HandleStaged(h.#puts === undefined ? [] : [...h.#puts], h.#deletes === undefined ? [] : [...h.#deletes]);
  }

  /** A handle pre-filled from a replay record, already sealed. */
  static fromStaged(staged: StagedKv): EffectsHandle {
    const { puts, deletes } = readStaged(staged);
    const h = new EffectsHandle();
    // Copied: a replay record's values are the caller's, and a settlement stages the handle's values as they are.
    for (const [k, v] of puts) (h.#puts ??= new Map()).set(k, copyValue(k, v));
    for (const k of deletes) (h.#deletes ??= new Set()).add(k);
    h.#sealed = true;
    return h;
  }
}

/** Most entries of a staged list read back: a step stages at most as many KV operations as a settlement holds. */
const MAX_STAGED = 100_000;

/** `staged` read once and checked (a replay record's shape): a wrong one is a `ValidationError` naming the entry. */
function readStaged(staged: unknown): StagedKv {
  const o = readOptions(staged, ["puts", "deletes"], "EffectsHandle.fromStaged's staged");
  const puts = readOptionArray("EffectsHandle.fromStaged's staged.puts", o.puts, "an array of [key, value] pairs", MAX_STAGED).map((e, i) => {
    const at = `EffectsHandle.fromStaged's staged.puts[${i}]`;
    const [k, v] = readOptionArray(at, e, "a [key, value] pair", 2);
    if (typeof k !== "string" || !isOptionBytes(v))
      throw new ValidationError(`${at} must be a [string key, Uint8Array value] pair, got [${describeValue(k)}, ${describeValue(v)}]`);
    return [k, v] as [string, Uint8Array];
  });
  const deletes = readOptionArray("EffectsHandle.fromStaged's staged.deletes", o.deletes, "an array of keys", MAX_STAGED).map((k, i) => {
    if (typeof k !== "string") throw new ValidationError(`EffectsHandle.fromStaged's staged.deletes[${i}] must be a string key, got ${describeValue(k)}`);
    return k;
  });
  return { puts, deletes };
}

/** Adds staged KV operations to queue settlement effects: a live handle's copies as they are, others copied. */
export function applyStaged(staged: StagedKv, into: SettlementEffects): SettlementEffects {
  // Most steps stage nothing: no iterators made for empty lists, and the loops in a function of their own, so
  // that this one, called for every step, is small enough for V8 to optimize at its first tick.
  if (staged.puts.length === 0 && staged.deletes.length === 0) return into;
  return applyEach(staged, into);
}

function applyEach(staged: StagedKv, into: SettlementEffects): SettlementEffects {
  if (HandleStaged.is(staged)) for (const [k, v] of staged.puts) stageOwnedPut(into, k, v);
  else for (const [k, v] of staged.puts) into.kvPut(k, v);
  for (const k of staged.deletes) into.kvDelete(k);
  return into;
}

/**
 * What a terminal hook stages: caller KV writes and deletes plus follow-up
 * enqueues, applied in the transaction that acknowledges the run's
 * notification job. Validated as staged, like {@link EffectsHandle}.
 *
 * @example
 * effects.put(`app/orders/${outcome.runId}`, encode(outcome.status));
 * effects.enqueue("emails", receipt);
 */
export class TerminalEffects {
  readonly #kv = new EffectsHandle();
  readonly #enqueues = new SettlementEffects();

  /** Stages a write of `value` at `key`. */
  put(key: string, value: Uint8Array): void {
    this.#kv.put(key, value);
  }

  /** Stages a delete of `key`. */
  delete(key: string): void {
    this.#kv.delete(key);
  }

  /** Stages an enqueue of a follow-up job. */
  enqueue(queueName: string, payload: Uint8Array, opts?: EnqueueOptions): void {
    if (this.#kv.sealed) throw new EffectsSealedError();
    this.#enqueues.enqueue(queueName, payload, opts);
  }

  /** Closes staging; the runtime calls it when the hook returns. */
  seal(): void {
    this.#kv.seal();
  }

  /** Everything staged, as queue settlement effects. */
  toSettlementEffects(): SettlementEffects {
    const out = applyStaged(EffectsHandle.stagedOwned(this.#kv), new SettlementEffects());
    // Checked and copied when staged, and frozen: handed on as they are, not checked and copied again.
    out.enqueues.push(...this.#enqueues.enqueues);
    return out;
  }
}

/**
 * Reads committed caller KV state inside a step. Effects the running step
 * staged are not visible until its settlement commits.
 */
export interface KvReadHandle {
  /** The committed value at `key`, or `null`. */
  get(key: string): Promise<Uint8Array | null>;
}
