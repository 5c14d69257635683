/**
 * @module The memtable: recently written keys in `compareKeys` order, in a
 * B-tree (point reads, scans, freezes and snapshots).
 *
 * The tree compares with the built-in string comparison while no key in it
 * needs more. Against a string whose code units are all below U+D800, UTF-16
 * order is code point order: at the first unit where the two differ, that
 * string's unit is a BMP character below every surrogate and every
 * U+E000..U+FFFF unit, in both orders. Every comparison a B-tree makes has
 * one of its own keys on a side (the search key against a node's keys, or
 * two node keys), so while every key in the tree has only such units, the
 * built-in comparison is exact. The first key with a unit at or above U+D800
 * rebuilds the tree under `compareKeys` (its keys are in that order already),
 * so the comparator is chosen once instead of tested in every comparison.
 * Queue and workflow keys are ASCII and never pay for the rebuild.
 */
import { BTree } from "../store/btree.js";
import { unitsBelowSurrogates } from "../store/keys.js";
import { sortedMapFromSorted } from "./sorted-map.js";

/** The built-in string order, as a comparator (exact while one side has only units below U+D800). */
const plainOrder = (a: string, b: string): number => (a === b ? 0 : a < b ? -1 : 1);

/** An ordered map of string keys: see the module documentation. No value may be undefined. */
export class Memtable<V> {
  #tree: BTree<string, V> = new BTree<string, V>(undefined, plainOrder);
  /** Whether `#tree` still compares with `plainOrder`. */
  #plain = true;

  /** A table of `keys` (strictly ascending in `compareKeys` order, as a tree yields them) and their `values`, built in O(n). */
  static fromSorted<V>(keys: string[], values: V[]): Memtable<V> {
    const t = new Memtable<V>();
    t.#plain = keys.every(unitsBelowSurrogates);
    t.#tree = sortedMapFromSorted<V>(keys, values, t.#plain ? plainOrder : undefined);
    return t;
  }

  /** The entries in `compareKeys` order, for iteration and `clone`: write through this class, never the tree. Replaced when the order switches. */
  get tree(): BTree<string, V> {
    return this.#tree;
  }

  get size(): number {
    return this.#tree.size;
  }

  get(key: string): V | undefined {
    return this.#tree.get(key);
  }

  /** Sets `key`; true when it was not in the table. */
  set(key: string, value: V): boolean {
    if (this.#plain && !unitsBelowSurrogates(key)) this.#switchOrder();
    return this.#tree.set(key, value);
  }

  /**
   * Sets the value of `key`, which the table holds, keeping the key string
   * it holds: `set` would store the caller's (an equal string made again, as
   * a checkpoint decodes its keys), and the table's copy would die in the
   * old generation while the new one took its place there.
   */
  replace(key: string, value: V): void {
    this.#tree.editRange(key, key, true, () => ({ value }));
  }

  /** Deletes `key`; false when it was not in the table. */
  delete(key: string): boolean {
    return this.#tree.delete(key);
  }

  /** The tree again under `compareKeys`: every key in it has only units below U+D800, so their order is already that one. */
  #switchOrder(): void {
    this.#plain = false;
    const keys: string[] = [];
    const values: V[] = [];
    for (const [k, v] of this.#tree.entries()) {
      keys.push(k);
      values.push(v);
    }
    this.#tree = sortedMapFromSorted<V>(keys, values);
  }
}
