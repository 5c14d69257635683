/**
 * @module Caller KV writes. Caller keys live under their own engine prefix,
 * so no caller key can address a queue record.
 */
import * as K from "./keys.js";
import { validateKvKey } from "./names.js";
import { copyCallerValue } from "./owned-bytes.js";
import type { QueueCore } from "./queue-core.js";
import { requireKvOnly, type SettlementEffects } from "./effects.js";
import { Txn } from "./txn.js";

/** A caller KV key and the value it must hold (`null`: absent) for a guarded write to commit. */
export interface KvExpectation {
  readonly key: string;
  readonly value: Uint8Array | null;
}

/** Whether a committed value (`undefined`: absent) is `b` (`null`: absent). */
export function sameKvValue(a: Uint8Array | undefined, b: Uint8Array | null): boolean {
  if (a === undefined || b === null) return a === undefined && b === null;
  return a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;
}

export async function kvPut(core: QueueCore, key: string, value: Uint8Array): Promise<void> {
  core.checkOpen();
  validateKvKey(key);
  // Checked and copied once: the engine keeps what it commits as it is (see `SettlementEffects.kvPut`).
  const owned = copyCallerValue(key, value);
  const txn = new Txn(core.engine);
  txn.put(K.userKey(key), owned);
  await core.commit(txn, true);
}

export async function kvDelete(core: QueueCore, key: string): Promise<void> {
  core.checkOpen();
  validateKvKey(key);
  const txn = new Txn(core.engine);
  txn.delete(K.userKey(key));
  await core.commit(txn, true);
}

export async function kvCompareAndPut(core: QueueCore, key: string, expected: Uint8Array | null, value: Uint8Array): Promise<boolean> {
  core.checkOpen();
  validateKvKey(key);
  const owned = copyCallerValue(key, value);
  const txn = new Txn(core.engine);
  if (!sameKvValue(txn.get(K.userKey(key)), expected)) return false;
  txn.put(K.userKey(key), owned);
  await core.commit(txn, true);
  return true;
}

export async function kvCompareAndDelete(core: QueueCore, key: string, expected: Uint8Array): Promise<boolean> {
  core.checkOpen();
  validateKvKey(key);
  const txn = new Txn(core.engine);
  const cur = txn.get(K.userKey(key));
  if (cur === undefined || !sameKvValue(cur, expected)) return false;
  txn.delete(K.userKey(key));
  await core.commit(txn, true);
  return true;
}

/**
 * Applies the caller KV ops of `effects` in one durable commit, only if
 * every `expected` key holds its value (`null`: absent) at commit time.
 * `true` when applied.
 */
export async function kvCompareAndApply(core: QueueCore, expected: readonly KvExpectation[], effects: SettlementEffects): Promise<boolean> {
  core.checkOpen();
  requireKvOnly(effects, "kvCompareAndApply");
  for (const e of expected) validateKvKey(e.key);
  const txn = new Txn(core.engine);
  for (const e of expected) if (!sameKvValue(txn.get(K.userKey(e.key)), e.value)) return false;
  core.applyEffects(txn, core.ctx(), effects, []);
  await core.commit(txn, true);
  return true;
}
