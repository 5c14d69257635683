/**
 * @module The memtable: recently written keys in `compareKeys` order, in an
 * ordered map (ordered-map.ts: point reads, scans, freezes and snapshots).
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
import { compareKeys, unitsBelowSurrogates } from "../store/keys.js";
import type { HeadedKey } from "./key-family.js";
import { KeyHeads } from "./key-heads.js";
import { OrderedMap } from "./ordered-map.js";

/** An ordered map of string keys: see the module documentation. No value may be undefined. */
export class Memtable<V> {
  /** Built-in string order (the map's `undefined` order) until the order switches. */
  #tree: OrderedMap<V>;
  /** Whether `#tree` still compares with the built-in order. */
  #plain = true;

  /** An empty table whose map splits its trees at `heads` (key-heads.ts: memory only, nothing stored depends on them). */
  constructor(heads: KeyHeads = KeyHeads.NONE) {
    this.#tree = new OrderedMap<V>(undefined, heads);
  }

  /** A table of `keys` (strictly ascending in `compareKeys` order, as a tree yields them) and their `values`, built in O(n). */
  static fromSorted<V>(keys: string[], values: V[], heads: KeyHeads = KeyHeads.NONE): Memtable<V> {
    const t = new Memtable<V>(heads);
    t.#plain = keys.every(unitsBelowSurrogates);
    t.#tree = OrderedMap.fromSorted<V>(keys, values, t.#plain ? undefined : compareKeys, heads);
    return t;
  }

  /**
   * A table of the same entries whose map splits its trees at `heads`, built
   * in O(n) from this one's entries in order (their key strings kept). This
   * table is not written again by the caller, which takes the new one in its
   * place; snapshots and cursors of this one still read it as it was.
   */
  withHeads(heads: KeyHeads): Memtable<V> {
    const keys: string[] = [];
    const values: V[] = [];
    this.#tree.forEachPair((k, v) => {
      keys.push(k);
      values.push(v);
    });
    const t = new Memtable<V>(heads);
    t.#plain = this.#plain;
    t.#tree = OrderedMap.fromSorted<V>(keys, values, this.#plain ? undefined : compareKeys, heads);
    return t;
  }

  /** The heads its map splits its trees at. */
  get heads(): KeyHeads {
    return this.#tree.heads;
  }

  /** The entries in `compareKeys` order, for iteration and `clone`: write through this class, never the tree. Replaced when the order switches. */
  get tree(): OrderedMap<V> {
    return this.#tree;
  }

  get size(): number {
    return this.#tree.size;
  }

  /** The value of `key`; `hint`: see `set`. */
  get(key: string, hint?: HeadedKey): V | undefined {
    return this.#tree.get(key, hint);
  }

  /**
   * Sets `key`; true when it was not in the table. `ascii`: the caller knows
   * every unit of `key` is below U+0080 (a commit's WAL encoding learns it
   * for the whole batch), so the key-order check is skipped. `hint`: the key
   * as its family made it, whose head needs no search (key-family.ts).
   */
  set(key: string, value: V, ascii = false, hint?: HeadedKey): boolean {
    if (this.#plain && !ascii && !unitsBelowSurrogates(key)) this.#switchOrder();
    return this.#tree.set(key, value, hint);
  }

  /**
   * Sets the value of `key`, which the table holds, keeping the key string
   * it holds: `set` would store the caller's (an equal string made again, as
   * a checkpoint decodes its keys), and the table's copy would die in the
   * old generation while the new one took its place there. The map's `set`
   * keeps the key it holds, and the order cannot switch for a key it holds.
   */
  replace(key: string, value: V): void {
    this.#tree.set(key, value);
  }

  /** Deletes `key`; false when it was not in the table. `hint`: see `set`. */
  delete(key: string, hint?: HeadedKey): boolean {
    return this.#tree.delete(key, hint);
  }

  /** The tree again under `compareKeys`: every key in it has only units below U+D800, so their order is already that one. */
  #switchOrder(): void {
    this.#plain = false;
    const keys: string[] = [];
    const values: V[] = [];
    this.#tree.forEachPair((k, v) => {
      keys.push(k);
      values.push(v);
    });
    this.#tree = OrderedMap.fromSorted<V>(keys, values, compareKeys, this.#tree.heads);
  }
}
