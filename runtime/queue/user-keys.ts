/**
 * @module The engine keys of the caller KV keys in use (`u/<key>`),
 * validated and built once.
 *
 * The workflow runtime reads and writes the same caller keys of a run on
 * every step (its run record, its step pointer). Each use validated the key
 * again and built `u/` + key afresh, and the engine's memtable flattened
 * that new concatenation on its first comparison: a copy per use. Kept
 * here, a key in use reaches the engine as one string, flattened once.
 *
 * Only keys read in the caller's turn (`Queue.kvGetNow`: the records a
 * run reads on every step) are kept; other uses look them up. A key written
 * once (a step's history entry) would only make the kept keys outlive
 * the young generation of the collector for nothing.
 *
 * Two generations bound the memory: a key found in the older one moves to
 * the newer, and when the newer fills up the older is dropped, so keys in
 * use stay while the others leave.
 */
import { userKey } from "./keys.js";
import { validateKvKey } from "./names.js";

/** Keys per generation: some 100 KB each at the workflow's key lengths. */
const GENERATION = 1024;

let young = new Map<string, string>();
let old = new Map<string, string>();

/** The engine key of caller key `key` when it is kept (it was valid then), else undefined. */
export function keptEngineKey(key: string): string | undefined {
  const kept = young.get(key);
  if (kept !== undefined) return kept;
  const k = old.get(key);
  if (k !== undefined) keep(key, k);
  return k;
}

/** The engine key of caller key `key`, kept from now on; throws as `validateKvKey` does for a key that is not valid. */
export function keptUserEngineKey(key: string): string {
  let k = keptEngineKey(key);
  if (k === undefined) {
    validateKvKey(key);
    k = userKey(key);
    keep(key, k);
  }
  return k;
}

function keep(key: string, k: string): void {
  if (young.size >= GENERATION) {
    old = young;
    young = new Map();
  }
  young.set(key, k);
}
