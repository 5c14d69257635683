/**
 * @module The ordered in-memory map behind the engine: sorted-btree, keyed
 * by `compareKeys`.
 */
import * as btreeModule from "sorted-btree";
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
