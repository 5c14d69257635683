/**
 * @module The B+tree class of `sorted-btree`, loaded the same way under
 * every module loader, for the ordered maps of the memory store, the engine
 * and the lease registry.
 *
 * sorted-btree is CommonJS with `exports.default`. Node's ESM interop puts
 * the class at `.default.default`, bundlers that honour `__esModule` at
 * `.default`; this unwraps whichever layers the loader left around it.
 */
import * as btreeModule from "sorted-btree";

type BTreeClass = typeof import("sorted-btree").default;

/** A sorted map from `K` to `V` (sorted-btree's `BTree`). */
export type BTree<K, V> = import("sorted-btree").default<K, V>;

function resolveClass(): BTreeClass {
  let candidate: unknown = btreeModule;
  for (let i = 0; i < 3 && typeof candidate !== "function"; i++) {
    candidate = (candidate as { default?: unknown }).default;
  }
  if (typeof candidate !== "function") throw new Error("sorted-btree did not load: its default export is not a class");
  return candidate as BTreeClass;
}

/** The `BTree` constructor: `new BTree<K, V>(entries?, compare?)`. */
export const BTree: BTreeClass = resolveClass();
