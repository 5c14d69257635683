/**
 * @module The ordered in-memory map behind the engine: sorted-btree, keyed
 * by `compareKeys`.
 */
import * as btreeModule from "sorted-btree";
import * as bulkLoadModule from "sorted-btree/extended/bulkLoad.js";
import { compareKeys } from "../store/keys.js";

export type SortedMap = import("sorted-btree").default<string, Uint8Array>;
type BTreeCtor = typeof import("sorted-btree").default;

// sorted-btree is CommonJS with `exports.default`. Node's ESM interop puts
// it at `.default.default`; bundlers that honour `__esModule` at `.default`.
function resolveCtor(): BTreeCtor {
  let candidate: unknown = btreeModule;
  for (let i = 0; i < 3 && typeof candidate !== "function"; i++) {
    candidate = (candidate as { default?: unknown }).default;
  }
  if (typeof candidate !== "function") throw new Error("sorted-btree did not load: its default export is not a class");
  return candidate as BTreeCtor;
}

const BTree = resolveCtor();

export function newSortedMap(): SortedMap {
  return new BTree<string, Uint8Array>(undefined, compareKeys);
}

type BulkLoad = typeof import("sorted-btree/extended/bulkLoad.js").bulkLoad;

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
 * strictly ascending.
 */
export function sortedMapFromSorted(keys: string[], values: Uint8Array[]): SortedMap {
  if (keys.length === 0) return newSortedMap();
  return bulkLoad<string, Uint8Array>(keys, values, MAX_NODE_SIZE, compareKeys, 0.8) as SortedMap;
}
