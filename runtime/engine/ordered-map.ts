/**
 * @module An ordered map of string keys for the engine's memtable: a B+ tree
 * whose nodes all have one shape, so the engine's calls into it stay
 * monomorphic; O(1) copy-on-write clones; no allocation to read a key or to
 * overwrite one.
 *
 * Leaves hold keys and values; a branch holds its children and, for each,
 * the largest key under it. `clone` shares the root and marks it shared; a
 * write that reaches a shared node copies it first (marking the copied
 * branch's children shared in turn), so each map copies only the path it
 * changes and never changes a node the other can reach.
 *
 * A leaf may hold its keys packed (packed-keys.ts) instead of as strings:
 * a leaf left full behind an ascending insert, and each leaf built from
 * sorted entries (a freeze's held table), while the map uses the built-in
 * order. Waiting records sit in such leaves until a checkpoint pages their
 * values out, and a key string is the largest part of what each costs on
 * the heap. A packed leaf is searched and its values overwritten without
 * making key strings; a delete of its first or last key narrows the packed
 * keys in place (each leaf owns its packed keys; a copy takes its own), its
 * first other insert or delete makes its keys strings again, and a walk
 * makes each key it yields.
 *
 * A key past every key of the map goes straight to the last leaf when it
 * has room (`#appendPastLast`): the family of keys that sorts last grows
 * only there, and the search of every level is one comparison instead. It
 * is tried only for a few sets after a key went past every key, so a map
 * written in random order pays nothing for it.
 */
import { type HeadedKey, hintedHead } from "./key-family.js";
import { KeyHeads } from "./key-heads.js";
import { PackedKeys } from "./packed-keys.js";

/** An order of string keys; `undefined` stands for the built-in comparison, inlined in the searches. */
export type KeyOrder = ((a: string, b: string) => number) | undefined;

/** Most entries (leaf) or children (branch) a node holds. */
const MAX = 32;
/** A node left with fewer than this after a delete merges with a neighbour when both fit in one node. */
const MIN = MAX >> 1;
/** Entries per node when built from sorted entries: room left for later inserts. */
const BULK_FILL = 26;

/** Sets that try the last leaf first after a key past every key: a fill's batches interleave one appending family with others. */
const APPEND_HINT = 4;

/** The keys of a packed leaf: empty and frozen, so a write that forgot to unpack the leaf throws instead of losing keys. */
const NO_KEYS = Object.freeze([]) as unknown as string[];

/** A leaf (`children` null) or a branch (`values` null): one class, so every node has one hidden class. */
class Node<V> {
  /** A leaf's are `NO_KEYS` while `packed` holds them. */
  keys: string[];
  values: V[] | null;
  children: Node<V>[] | null;
  /** Reachable from more than one map: copied before any change. */
  shared = false;
  /** A leaf's keys when packed; each leaf owns its own (a copy takes `copy()`), so a delete narrows it in place. */
  packed: PackedKeys | null = null;

  constructor(keys: string[], values: V[] | null, children: Node<V>[] | null) {
    this.keys = keys;
    this.values = values;
    this.children = children;
  }
}

/** The first index whose key is at or after `key` in `order` (`keys.length` when none). */
function lowerBound(keys: string[], key: string, order: KeyOrder): number {
  let lo = 0;
  let hi = keys.length;
  if (order === undefined) {
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (keys[mid]! < key) lo = mid + 1;
      else hi = mid;
    }
  } else {
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (order(keys[mid]!, key) < 0) lo = mid + 1;
      else hi = mid;
    }
  }
  return lo;
}

/** Entries of a leaf, children of a branch. */
function entryCount<V>(n: Node<V>): number {
  return n.children === null ? n.values!.length : n.keys.length;
}

/** Leaf entry `i`'s key; made as a string when the leaf is packed. */
function keyAt<V>(leaf: Node<V>, i: number): string {
  return leaf.packed === null ? leaf.keys[i]! : leaf.packed.keyAt(i);
}

/** The index of `key` in `leaf` when there; otherwise `-(i + 1)` for the first index after it. */
function leafFind<V>(leaf: Node<V>, key: string, order: KeyOrder): number {
  if (leaf.packed !== null) return leaf.packed.find(key);
  const keys = leaf.keys;
  const i = lowerBound(keys, key, order);
  return i < keys.length && keys[i] === key ? i : -(i + 1);
}

/** A leaf's keys as strings, without changing its form (it may be another map's too). */
function leafKeys<V>(leaf: Node<V>): string[] {
  return leaf.packed === null ? leaf.keys : leaf.packed.keys();
}

/** Makes a leaf (not shared) hold its keys as strings, before a structural write. */
function unpack<V>(leaf: Node<V>): void {
  if (leaf.packed === null) return;
  leaf.keys = leaf.packed.keys();
  leaf.packed = null;
}

/** Packs a leaf's keys (left as strings when they cannot be). */
function pack<V>(leaf: Node<V>): void {
  const packed = PackedKeys.of(leaf.keys);
  if (packed === null) return;
  leaf.packed = packed;
  leaf.keys = NO_KEYS;
}

// Shifting by hand: `splice` allocates the array of what it removed.
function insertAt<T>(a: T[], i: number, x: T): void {
  let j = a.length;
  a.push(x);
  for (; j > i; j--) a[j] = a[j - 1]!;
  a[i] = x;
}

function removeAt<T>(a: T[], i: number): void {
  const n = a.length - 1;
  for (let j = i; j < n; j++) a[j] = a[j + 1]!;
  a.pop();
}

/** A private copy of a shared node; a branch's children become shared with the original. */
function copyNode<V>(n: Node<V>): Node<V> {
  if (n.children === null) {
    if (n.packed === null) return new Node<V>(n.keys.slice(), n.values!.slice(), null);
    const copy = new Node<V>(NO_KEYS, n.values!.slice(), null);
    copy.packed = n.packed.copy();
    return copy;
  }
  for (const c of n.children) c.shared = true;
  return new Node<V>(n.keys.slice(), null, n.children.slice());
}

/**
 * Moves the upper half of an overfull node into a new node, returned; only
 * its last entry when that entry was just appended (a key past every key of
 * the map). Keys written in ascending order (a fill's job ids) always land
 * in the last node, and an even split left every node behind them half
 * full, with room for 41 (the growth of the array the split cut): about
 * 59 B per entry against 23 B for nodes left full. A node left full keeps
 * arrays of its exact size: the ones it grew have room for 41 entries, 4.5 B
 * per entry that only its next split would use. With `packLeft`, a leaf left
 * full that way packs its keys: ascending inserts never come back to it.
 */
function splitNode<V>(n: Node<V>, appended: boolean, packLeft: boolean): Node<V> {
  const half = appended ? n.keys.length - 1 : n.keys.length >> 1;
  const keys = n.keys.slice(half);
  if (appended) n.keys = n.keys.slice(0, half);
  else n.keys.length = half;
  if (n.children === null) {
    const values = n.values!.slice(half);
    if (appended) n.values = n.values!.slice(0, half);
    else n.values!.length = half;
    if (appended && packLeft) pack(n);
    return new Node<V>(keys, values, null);
  }
  const children = n.children.slice(half);
  if (appended) n.children = n.children.slice(0, half);
  else n.children.length = half;
  return new Node<V>(keys, null, children);
}

function lastKey<V>(n: Node<V>): string {
  return n.packed === null ? n.keys[n.keys.length - 1]! : n.packed.keyAt(n.packed.count - 1);
}

/** A tree of `keys` (at least one, strictly ascending in `order`) and their `values`, in O(n) with room left in each node. */
function buildSorted<V>(keys: string[], values: V[], order: KeyOrder): Node<V> {
  const n = keys.length;
  let level: Node<V>[] = [];
  // Each node's largest key, taken from `keys`: a packed leaf would make it again.
  let largest: string[] = [];
  const leaves = Math.ceil(n / BULK_FILL);
  for (let l = 0; l < leaves; l++) {
    const from = Math.floor((l * n) / leaves);
    const to = Math.floor(((l + 1) * n) / leaves);
    const leaf = new Node<V>(keys.slice(from, to), values.slice(from, to), null);
    if (order === undefined) pack(leaf);
    level.push(leaf);
    largest.push(keys[to - 1]!);
  }
  while (level.length > 1) {
    const parents: Node<V>[] = [];
    const parentsLargest: string[] = [];
    const count = Math.ceil(level.length / BULK_FILL);
    for (let p = 0; p < count; p++) {
      const from = Math.floor((p * level.length) / count);
      const to = Math.floor(((p + 1) * level.length) / count);
      parents.push(new Node<V>(largest.slice(from, to), null, level.slice(from, to)));
      parentsLargest.push(largest[to - 1]!);
    }
    level = parents;
    largest = parentsLargest;
  }
  return level[0]!;
}

/** The ordered map: see the module documentation. No value may be undefined. */
export class OrderedMap<V> {
  /** Per head (`headOf`), the root of its keys' tree; null when it has none. */
  #roots: (Node<V> | null)[];
  #size: number;
  readonly #order: KeyOrder;
  /** Which tree holds a key (key-heads.ts); shared with clones and cursors. */
  readonly #heads: KeyHeads;
  /** Per head, sets left to try `#appendPastLast` first: refilled by each key past every key of the head, so heads nothing is appended to pay no comparison for it. */
  readonly #appendHints: Uint8Array;
  /** The head `#insert` works under. */
  #head = 0;
  /** Set by `#insert`: whether the key was new. A field, so no result object is made per insert. */
  #added = false;

  /** An empty map in `order` (the built-in string comparison when undefined) with `heads` (by default one per first code unit); the order must put keys by head first, as both orders the engine uses do. */
  constructor(order?: KeyOrder, heads: KeyHeads = KeyHeads.NONE) {
    this.#heads = heads;
    this.#roots = new Array<Node<V> | null>(heads.count).fill(null);
    this.#appendHints = new Uint8Array(heads.count);
    this.#size = 0;
    this.#order = order;
  }

  /** The heads this map's trees are split by. */
  get heads(): KeyHeads {
    return this.#heads;
  }

  /** A map of `keys` (strictly ascending in `order`) and their `values`, built in O(n) with room left in each node. Throws a RangeError when the keys are not strictly ascending. */
  static fromSorted<V>(keys: readonly string[], values: readonly V[], order?: KeyOrder, heads: KeyHeads = KeyHeads.NONE): OrderedMap<V> {
    const map = new OrderedMap<V>(order, heads);
    const n = keys.length;
    if (n !== values.length) throw new RangeError(`OrderedMap.fromSorted: ${n} keys but ${values.length} values`);
    for (let i = 1; i < n; i++) {
      const a = keys[i - 1]!;
      const b = keys[i]!;
      if (order === undefined ? !(a < b) : order(a, b) >= 0) throw new RangeError(`OrderedMap.fromSorted: keys not strictly ascending at index ${i}`);
      if (heads.headOf(a) > heads.headOf(b)) throw new RangeError(`OrderedMap.fromSorted: keys at index ${i} not ordered by their head`);
    }
    // Each head's keys are a contiguous run of the sorted keys.
    for (let from = 0; from < n; ) {
      const head = heads.headOf(keys[from]!);
      let to = from + 1;
      while (to < n && heads.headOf(keys[to]!) === head) to++;
      map.#roots[head] = buildSorted(keys.slice(from, to), values.slice(from, to), order);
      from = to;
    }
    map.#size = n;
    return map;
  }

  get size(): number {
    return this.#size;
  }

  /** The value of `key`; `hint`: see `set`. */
  get(key: string, hint?: HeadedKey): V | undefined {
    const order = this.#order;
    let node = this.#roots[this.#headOf(key, hint)] as Node<V> | null;
    if (node === null) return undefined;
    while (node.children !== null) {
      const i = lowerBound(node.keys, key, order);
      if (i === node.keys.length) return undefined;
      node = node.children[i]!;
    }
    const i = leafFind(node, key, order);
    return i >= 0 ? node.values![i] : undefined;
  }

  /** Sets `key`; true when it was not in the map. An existing key keeps the string the map holds. `hint`: the key as its family made it, whose head needs no search (key-family.ts). */
  set(key: string, value: V, hint?: HeadedKey): boolean {
    const head = this.#headOf(key, hint);
    const roots = this.#roots;
    let root = roots[head] as Node<V> | null;
    if (root === null) {
      roots[head] = new Node<V>([key], [value], null);
      this.#size++;
      return true;
    }
    const hints = this.#appendHints;
    if (hints[head]! > 0 && root.children !== null) {
      if (this.#appendPastLast(root, key, value)) {
        hints[head] = APPEND_HINT;
        this.#size++;
        return true;
      }
      hints[head]!--;
    }
    if (root.shared) roots[head] = root = copyNode(root);
    this.#head = head;
    const right = this.#insert(root, key, value);
    if (right !== null) roots[head] = new Node<V>([lastKey(root), lastKey(right)], null, [root, right]);
    if (!this.#added) return false;
    this.#size++;
    return true;
  }

  /**
   * Appends `key` to the last leaf when it is past every key of the map and
   * the leaf has room: one comparison instead of a search at every level.
   * The family of keys that sorts last (a queue's pending entries, a fill's
   * index keys) grows only at the end, in commits and in a reopen's replay.
   * False, with nothing changed, when the general insert must run instead
   * (not past the last key, a shared node on the way, or a full or packed leaf).
   */
  #appendPastLast(root: Node<V>, key: string, value: V): boolean {
    const keys = root.keys;
    const last = keys[keys.length - 1]!;
    if (this.#order === undefined ? !(key > last) : this.#order(last, key) >= 0) return false;
    let node = root;
    while (node.children !== null) {
      if (node.shared) return false;
      node = node.children[node.children.length - 1]!;
    }
    if (node.shared || node.packed !== null || node.values!.length >= MAX) return false;
    // The largest key of every node on the right edge becomes `key`.
    node = root;
    while (node.children !== null) {
      node.keys[node.keys.length - 1] = key;
      node = node.children[node.children.length - 1]!;
    }
    node.keys.push(key);
    node.values!.push(value);
    return true;
  }

  /** Inserts into or overwrites in `node` (not shared); returns the new right sibling when `node` split. */
  #insert(node: Node<V>, key: string, value: V): Node<V> | null {
    const order = this.#order;
    const children = node.children;
    if (children === null) {
      const values = node.values!;
      const found = leafFind(node, key, order);
      if (found >= 0) {
        values[found] = value;
        this.#added = false;
        return null;
      }
      unpack(node);
      const leafKeys = node.keys;
      const at = -found - 1;
      insertAt(leafKeys, at, key);
      insertAt(values, at, value);
      this.#added = true;
      if (leafKeys.length <= MAX) return null;
      const appended = at === leafKeys.length - 1;
      return splitNode(node, appended, appended && order === undefined && this.#lastHead(this.#head));
    }
    const keys = node.keys;
    const i = lowerBound(keys, key, order);
    // Past every key: into the last child, whose largest key it becomes.
    const at = i === keys.length ? i - 1 : i;
    let child = children[at]!;
    if (child.shared) children[at] = child = copyNode(child);
    const right = this.#insert(child, key, value);
    if (i === keys.length) {
      keys[at] = key;
      // Past every key of the head: appends are under way, so the head's next sets try its last leaf first.
      if (node === this.#roots[this.#head]) this.#appendHints[this.#head] = APPEND_HINT;
    }
    if (right === null) return null;
    keys[at] = lastKey(child);
    insertAt(keys, at + 1, lastKey(right));
    insertAt(children, at + 1, right);
    return keys.length > MAX ? splitNode(node, at + 1 === keys.length - 1, false) : null;
  }

  /** Deletes `key`; false when it was not in the map. `hint`: see `set`. */
  delete(key: string, hint?: HeadedKey): boolean {
    const head = this.#headOf(key, hint);
    const roots = this.#roots;
    let root = roots[head] as Node<V> | null;
    if (root === null) return false;
    if (root.shared) roots[head] = root = copyNode(root);
    if (!this.#remove(root, key)) return false;
    this.#size--;
    // A branch left with one child gives way to it; a head left with no key has no tree.
    while (root.children !== null && root.children.length === 1) root = root.children[0]!;
    roots[head] = entryCount(root) === 0 ? null : root;
    return true;
  }

  /** The head of `key`: its hint's when that applies (key-family.ts), else the search's. */
  #headOf(key: string, hint: HeadedKey | undefined): number {
    const h = hintedHead(this.#heads, key, hint);
    return h >= 0 ? h : this.#heads.headOf(key);
  }

  /** Whether no head after `head` has keys: its last leaf is then the map's. */
  #lastHead(head: number): boolean {
    const roots = this.#roots;
    for (let h = head + 1; h < roots.length; h++) if (roots[h] !== null) return false;
    return true;
  }

  /** Removes `key` from under `node` (not shared); false when it is not there. */
  #remove(node: Node<V>, key: string): boolean {
    const children = node.children;
    if (children === null) {
      const found = leafFind(node, key, this.#order);
      if (found < 0) return false;
      if (node.packed === null || !node.packed.drop(found)) {
        unpack(node);
        removeAt(node.keys, found);
      }
      removeAt(node.values!, found);
      return true;
    }
    const keys = node.keys;
    const i = lowerBound(keys, key, this.#order);
    if (i === keys.length) return false;
    let child = children[i]!;
    if (child.shared) children[i] = child = copyNode(child);
    if (!this.#remove(child, key)) return false;
    const n = entryCount(child);
    if (n === 0) {
      removeAt(keys, i);
      removeAt(children, i);
    } else {
      // A packed leaf's last key would be made again as a string; the key it lost is still above
      // every key it holds and below the next child's, so the search goes where it did.
      if (child.packed === null) keys[i] = lastKey(child);
      if (n < MIN) this.#mergeNeighbours(node, i);
    }
    return true;
  }

  /** Merges child `i` of `node` with a neighbour when their entries fit in one node. */
  #mergeNeighbours(node: Node<V>, i: number): void {
    const children = node.children!;
    if (children.length < 2) return;
    const at = i > 0 ? i - 1 : i;
    let left = children[at]!;
    const right = children[at + 1]!;
    if (entryCount(left) + entryCount(right) > MAX) return;
    if (left.shared) children[at] = left = copyNode(left);
    if (left.children === null) unpack(left);
    for (const k of left.children === null ? leafKeys(right) : right.keys) left.keys.push(k);
    if (left.children === null) {
      for (const v of right.values!) left.values!.push(v);
    } else {
      // The dropped node may still be another map's: its children are now reachable from both.
      for (const c of right.children!) {
        if (right.shared) c.shared = true;
        left.children.push(c);
      }
    }
    node.keys[at] = lastKey(left);
    removeAt(node.keys, at + 1);
    removeAt(children, at + 1);
  }

  /** A map with the same entries now, that later writes to either do not affect: O(1), nodes are copied when first written. */
  clone(): OrderedMap<V> {
    const copy = new OrderedMap<V>(this.#order, this.#heads);
    const roots = this.#roots;
    for (const root of roots) if (root !== null) root.shared = true;
    copy.#roots = roots.slice();
    copy.#size = this.#size;
    return copy;
  }

  /** Entries from `lo` (inclusive; all when undefined) up, in order. Do not write while iterating. */
  entries(lo?: string): OrderedMapCursor<V> {
    return new OrderedMapCursor<V>(this.#roots, this.#heads, this.#order, false, lo);
  }

  /** Entries from `hi` (inclusive; all when undefined) down, in reverse order. Do not write while iterating. */
  entriesReversed(hi?: string): OrderedMapCursor<V> {
    return new OrderedMapCursor<V>(this.#roots, this.#heads, this.#order, true, hi);
  }

  /** How many leaves hold the entries (how full the nodes are: a measure for tests and benchmarks). */
  leafCount(): number {
    let n = 0;
    for (const root of this.#roots) if (root !== null) n += countLeaves(root, false);
    return n;
  }

  /** How many leaves hold their keys packed (a measure for tests and benchmarks). */
  packedLeafCount(): number {
    let n = 0;
    for (const root of this.#roots) if (root !== null) n += countLeaves(root, true);
    return n;
  }

  /** Calls `fn` with each entry in order. Do not write while iterating. */
  forEachPair(fn: (key: string, value: V) => void): void {
    for (const root of this.#roots) if (root !== null) walk(root, fn);
  }
}

function countLeaves<V>(node: Node<V>, packedOnly: boolean): number {
  if (node.children === null) return packedOnly && node.packed === null ? 0 : 1;
  let n = 0;
  for (const c of node.children) n += countLeaves(c, packedOnly);
  return n;
}

function walk<V>(node: Node<V>, fn: (key: string, value: V) => void): void {
  const children = node.children;
  if (children !== null) {
    for (const c of children) walk(c, fn);
    return;
  }
  const values = node.values!;
  for (let i = 0; i < values.length; i++) fn(keyAt(node, i), values[i]!);
}

/** An iterator over an `OrderedMap` in either direction: the head it is in, the path of branches to the current leaf and the index in each. */
export class OrderedMapCursor<V> implements IterableIterator<[string, V]> {
  readonly #roots: readonly (Node<V> | null)[];
  readonly #path: Node<V>[] = [];
  readonly #at: number[] = [];
  readonly #reverse: boolean;
  #head: number;
  /** The current leaf; null when the iteration has ended. */
  #leaf: Node<V> | null = null;
  #i = 0;

  constructor(roots: readonly (Node<V> | null)[], heads: KeyHeads, order: KeyOrder, reverse: boolean, bound: string | undefined) {
    this.#roots = roots;
    this.#reverse = reverse;
    if (bound === undefined) {
      this.#head = reverse ? roots.length : -1;
      this.#nextHead();
      return;
    }
    this.#head = heads.headOf(bound);
    const root = roots[this.#head] as Node<V> | null;
    // A head with nothing from the bound on (forward) leaves the iteration to the next head; reversed,
    // the bound's leaf holds a key at or before it unless the head has none, which `next` finds.
    if (root === null || !this.#seek(root, bound, order)) this.#nextHead();
  }

  /** Goes down from `root` to the bound's leaf and index in it; false, with no leaf, when forward and every key of the tree is before the bound. */
  #seek(root: Node<V>, bound: string, order: KeyOrder): boolean {
    const reverse = this.#reverse;
    let node = root;
    while (node.children !== null) {
      let i = lowerBound(node.keys, bound, order);
      if (i === node.keys.length) {
        if (!reverse) return false;
        i--;
      }
      this.#path.push(node);
      this.#at.push(i);
      node = node.children[i]!;
    }
    this.#leaf = node;
    const found = leafFind(node, bound, order);
    // Reversed, the bound is the first key taken when present, else the one before it.
    this.#i = found >= 0 ? found : reverse ? -found - 2 : -found - 1;
    return true;
  }

  /** Moves to the first leaf (the last, reversed) of the next head that has keys; no leaf when none has. */
  #nextHead(): Node<V> | null {
    const roots = this.#roots;
    const reverse = this.#reverse;
    const path = this.#path;
    const at = this.#at;
    path.length = 0;
    at.length = 0;
    for (let h = reverse ? this.#head - 1 : this.#head + 1; reverse ? h >= 0 : h < roots.length; h += reverse ? -1 : 1) {
      let node = roots[h] as Node<V> | null;
      if (node === null) continue;
      this.#head = h;
      while (node.children !== null) {
        const i: number = reverse ? node.children.length - 1 : 0;
        path.push(node);
        at.push(i);
        node = node.children[i]!;
      }
      this.#leaf = node;
      this.#i = reverse ? node.values!.length - 1 : 0;
      return node;
    }
    this.#leaf = null;
    return null;
  }

  [Symbol.iterator](): this {
    return this;
  }

  next(): IteratorResult<[string, V]> {
    let leaf = this.#leaf;
    if (leaf === null) return { done: true, value: undefined };
    if (this.#reverse ? this.#i < 0 : this.#i >= leaf.values!.length) {
      leaf = this.#step();
      if (leaf === null) return { done: true, value: undefined };
    }
    const i = this.#i;
    this.#i = this.#reverse ? i - 1 : i + 1;
    return { done: false, value: [keyAt(leaf, i), leaf.values![i]!] };
  }

  /** Moves to the next leaf in the direction (its first entry that way), in the next head's tree past the last of this one's; null at the end. */
  #step(): Node<V> | null {
    const path = this.#path;
    const at = this.#at;
    const reverse = this.#reverse;
    let d = path.length - 1;
    while (d >= 0 && (reverse ? at[d]! === 0 : at[d]! + 1 >= path[d]!.children!.length)) d--;
    if (d < 0) return this.#nextHead();
    at[d] = at[d]! + (reverse ? -1 : 1);
    let node: Node<V> = path[d]!.children![at[d]!]!;
    for (d++; d < path.length; d++) {
      path[d] = node;
      const i = reverse ? node.children!.length - 1 : 0;
      at[d] = i;
      node = node.children![i]!;
    }
    this.#leaf = node;
    this.#i = reverse ? node.values!.length - 1 : 0;
    return node;
  }
}
