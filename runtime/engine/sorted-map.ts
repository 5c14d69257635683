/**
 * @module The ordered in-memory map behind the engine: sorted-btree, keyed
 * by `compareKeys`.
 */
import * as bulkLoadModule from "sorted-btree/extended/bulkLoad.js";
import { BTree } from "../store/btree.js";
import { compareKeys } from "../store/keys.js";
import type { ChangedKeys } from "./changed-keys.js";

/** The engine's state: values by key, in `compareKeys` order. */
export type SortedMap = BTree<string, Uint8Array>;

/**
 * The keys changed since the last checkpoint cut, with their new values
 * (packed when the engine packs them, see `applyOps`); `null` marks a
 * deleted key. A hash map (its keys as bytes outside the heap, see
 * changed-keys.ts), so recording a change costs far less than an ordered
 * insert; an incremental checkpoint orders the keys (change-order.ts) and
 * writes them as a segment run, nulls as tombstones.
 */
export type DeltaMap = ChangedKeys;

/**
 * Whether a delta has grown past what an incremental checkpoint is worth:
 * more than half as many keys as the state (and past a small floor). The
 * engine then stops recording and the next checkpoint rewrites the state,
 * which costs no more; this also bounds the delta's memory by the state's.
 */
export function deltaOverflows(delta: DeltaMap, stateSize: number): boolean {
  return delta.size > 4096 && delta.size > stateSize / 2;
}

/** An empty map ordered by `compareKeys`. */
export function newSortedMap(): SortedMap {
  return new BTree<string, Uint8Array>(undefined, compareKeys);
}

type BulkLoad = typeof import("sorted-btree/extended/bulkLoad.js").bulkLoad;

// Wrapped like the BTree class itself (see store/btree.ts).
function resolveBulkLoad(): BulkLoad {
  let candidate: unknown = bulkLoadModule;
  for (let i = 0; i < 3 && typeof (candidate as { bulkLoad?: unknown }).bulkLoad !== "function"; i++) {
    candidate = (candidate as { default?: unknown }).default;
  }
  const fn = (candidate as { bulkLoad?: unknown } | undefined)?.bulkLoad;
  if (typeof fn !== "function") throw new Error("sorted-btree did not load: bulkLoad is missing");
  return fn as BulkLoad;
}

const bulkLoad = resolveBulkLoad();

/** Node size of every tree; sorted-btree's default. */
const MAX_NODE_SIZE = 32;

/**
 * Builds a map from keys in strictly ascending `compareKeys` order in O(n),
 * leaving room in each leaf for later inserts. Throws if the keys are not
 * strictly ascending. `compare`: the tree's comparator, when a cheaper one
 * gives the same order for these keys and the keys it will take.
 */
export function sortedMapFromSorted<V = Uint8Array>(keys: string[], values: V[], compare: (a: string, b: string) => number = compareKeys): BTree<string, V> {
  if (keys.length === 0) return new BTree<string, V>(undefined, compare);
  return bulkLoad<string, V>(keys, values, MAX_NODE_SIZE, compare, 0.8) as BTree<string, V>;
}
