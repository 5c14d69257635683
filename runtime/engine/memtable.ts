/**
 * @module The memtable's key order: `compareKeys` order, at the cost of the
 * built-in string comparison while no key in the tree needs more.
 *
 * Against a string whose code units are all below U+D800, UTF-16 order is
 * code point order: at the first unit where the two differ, that string's
 * unit is a BMP character below every surrogate and every U+E000..U+FFFF
 * unit, in both orders. Every comparison a B-tree makes has one of its own
 * keys on a side (the search key against a node's keys, or two node keys),
 * so while every key ever set in the tree has only such units, the built-in
 * comparison is exact. Queue and workflow keys are ASCII, so a step's
 * twenty-odd comparisons per lookup skip `compareKeys`' surrogate tests.
 */
import { BTree } from "../store/btree.js";
import { compareKeys, unitsBelowSurrogates } from "../store/keys.js";

/** A tree ordered by `compareKeys` whose writes go through `noteKey` first. */
export class MemtableOrder<V> {
  /** Whether every key noted so far has only code units below U+D800; once false, stays false. */
  #plain = true;
  /** An empty tree in this order; every key set in it must be noted first. */
  readonly tree: BTree<string, V>;

  constructor() {
    this.tree = new BTree<string, V>(undefined, (a, b) => (this.#plain ? (a === b ? 0 : a < b ? -1 : 1) : compareKeys(a, b)));
  }

  /** Call before setting `key` in the tree: a key with a unit at or above U+D800 switches the tree to `compareKeys`. */
  noteKey(key: string): void {
    if (this.#plain && !unitsBelowSurrogates(key)) this.#plain = false;
  }
}
