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
 * Two generations bound the memory: a key found in the older one moves to
 * the newer, and when the newer fills up the older is dropped, so keys in
 * use stay while one-off keys leave.
 */
import { userKey } from "./keys.js";
import { validateKvKey } from "./names.js";

/** Keys per generation: some 100 KB each at the workflow's key lengths. */
const GENERATION = 1024;

let young = new Map<string, string>();
let old = new Map<string, string>();

/** The engine key of caller key `key`; throws as `validateKvKey` does for a key that is not valid. */
export function userEngineKey(key: string): string {
  const kept = young.get(key);
  if (kept !== undefined) return kept;
  let k = old.get(key);
  if (k === undefined) {
    validateKvKey(key);
    k = userKey(key);
  }
  if (young.size >= GENERATION) {
    old = young;
    young = new Map();
  }
  young.set(key, k);
  return k;
}
