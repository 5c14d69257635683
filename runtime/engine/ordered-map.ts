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
 */

/** An order of string keys; `undefined` stands for the built-in comparison, inlined in the searches. */
export type KeyOrder = ((a: string, b: string) => number) | undefined;

/** Most entries (leaf) or children (branch) a node holds. */
const MAX = 32;
/** A node left with fewer than this after a delete merges with a neighbour when both fit in one node. */
const MIN = MAX >> 1;
/** Entries per node when built from sorted entries: room left for later inserts. */
const BULK_FILL = 26;

/** A leaf (`children` null) or a branch (`values` null): one class, so every node has one hidden class. */
class Node<V> {
  keys: string[];
  values: V[] | null;
  children: Node<V>[] | null;
  /** Reachable from more than one map: copied before any change. */
  shared = false;

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
  if (n.children === null) return new Node<V>(n.keys.slice(), n.values!.slice(), null);
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
 * per entry that only its next split would use.
 */
function splitNode<V>(n: Node<V>, appended: boolean): Node<V> {
  const half = appended ? n.keys.length - 1 : n.keys.length >> 1;
  const keys = n.keys.slice(half);
  if (appended) n.keys = n.keys.slice(0, half);
  else n.keys.length = half;
  if (n.children === null) {
    const values = n.values!.slice(half);
    if (appended) n.values = n.values!.slice(0, half);
    else n.values!.length = half;
    return new Node<V>(keys, values, null);
  }
  const children = n.children.slice(half);
  if (appended) n.children = n.children.slice(0, half);
  else n.children.length = half;
  return new Node<V>(keys, null, children);
}

function lastKey<V>(n: Node<V>): string {
  return n.keys[n.keys.length - 1]!;
}

/** The ordered map: see the module documentation. No value may be undefined. */
export class OrderedMap<V> {
  #root: Node<V>;
  #size: number;
  readonly #order: KeyOrder;
  /** Set by `#insert`: whether the key was new. A field, so no result object is made per insert. */
  #added = false;

  /** An empty map in `order` (the built-in string comparison when undefined). */
  constructor(order?: KeyOrder) {
    this.#root = new Node<V>([], [], null);
    this.#size = 0;
    this.#order = order;
  }

  /** A map of `keys` (strictly ascending in `order`) and their `values`, built in O(n) with room left in each node. Throws a RangeError when the keys are not strictly ascending. */
  static fromSorted<V>(keys: readonly string[], values: readonly V[], order?: KeyOrder): OrderedMap<V> {
    const map = new OrderedMap<V>(order);
    const n = keys.length;
    if (n !== values.length) throw new RangeError(`OrderedMap.fromSorted: ${n} keys but ${values.length} values`);
    for (let i = 1; i < n; i++) {
      const a = keys[i - 1]!;
      const b = keys[i]!;
      if (order === undefined ? !(a < b) : order(a, b) >= 0) throw new RangeError(`OrderedMap.fromSorted: keys not strictly ascending at index ${i}`);
    }
    if (n === 0) return map;
    let level: Node<V>[] = [];
    const leaves = Math.ceil(n / BULK_FILL);
    for (let l = 0; l < leaves; l++) {
      const from = Math.floor((l * n) / leaves);
      const to = Math.floor(((l + 1) * n) / leaves);
      level.push(new Node<V>(keys.slice(from, to), values.slice(from, to), null));
    }
    while (level.length > 1) {
      const parents: Node<V>[] = [];
      const count = Math.ceil(level.length / BULK_FILL);
      for (let p = 0; p < count; p++) {
        const children = level.slice(Math.floor((p * level.length) / count), Math.floor(((p + 1) * level.length) / count));
        parents.push(new Node<V>(children.map(lastKey), null, children));
      }
      level = parents;
    }
    map.#root = level[0]!;
    map.#size = n;
    return map;
  }

  get size(): number {
    return this.#size;
  }

  get(key: string): V | undefined {
    const order = this.#order;
    let node = this.#root;
    while (node.children !== null) {
      const i = lowerBound(node.keys, key, order);
      if (i === node.keys.length) return undefined;
      node = node.children[i]!;
    }
    const i = lowerBound(node.keys, key, order);
    return i < node.keys.length && node.keys[i] === key ? node.values![i] : undefined;
  }

  /** Sets `key`; true when it was not in the map. An existing key keeps the string the map holds. */
  set(key: string, value: V): boolean {
    let root = this.#root;
    if (root.shared) this.#root = root = copyNode(root);
    const right = this.#insert(root, key, value);
    if (right !== null) this.#root = new Node<V>([lastKey(root), lastKey(right)], null, [root, right]);
    if (!this.#added) return false;
    this.#size++;
    return true;
  }

  /** Inserts into or overwrites in `node` (not shared); returns the new right sibling when `node` split. */
  #insert(node: Node<V>, key: string, value: V): Node<V> | null {
    const keys = node.keys;
    const i = lowerBound(keys, key, this.#order);
    const children = node.children;
    if (children === null) {
      const values = node.values!;
      if (i < keys.length && keys[i] === key) {
        values[i] = value;
        this.#added = false;
        return null;
      }
      insertAt(keys, i, key);
      insertAt(values, i, value);
      this.#added = true;
      return keys.length > MAX ? splitNode(node, i === keys.length - 1) : null;
    }
    // Past every key: into the last child, whose largest key it becomes.
    const at = i === keys.length ? i - 1 : i;
    let child = children[at]!;
    if (child.shared) children[at] = child = copyNode(child);
    const right = this.#insert(child, key, value);
    if (i === keys.length) keys[at] = key;
    if (right === null) return null;
    keys[at] = lastKey(child);
    insertAt(keys, at + 1, lastKey(right));
    insertAt(children, at + 1, right);
    return keys.length > MAX ? splitNode(node, at + 1 === keys.length - 1) : null;
  }

  /** Deletes `key`; false when it was not in the map. */
  delete(key: string): boolean {
    if (this.#size === 0) return false;
    let root = this.#root;
    if (root.shared) this.#root = root = copyNode(root);
    if (!this.#remove(root, key)) return false;
    this.#size--;
    // A branch left with one child (or none) gives way to it.
    while (root.children !== null && root.children.length <= 1) {
      root = root.children.length === 0 ? new Node<V>([], [], null) : root.children[0]!;
      this.#root = root;
    }
    return true;
  }

  /** Removes `key` from under `node` (not shared); false when it is not there. */
  #remove(node: Node<V>, key: string): boolean {
    const keys = node.keys;
    const i = lowerBound(keys, key, this.#order);
    if (i === keys.length) return false;
    const children = node.children;
    if (children === null) {
      if (keys[i] !== key) return false;
      removeAt(keys, i);
      removeAt(node.values!, i);
      return true;
    }
    let child = children[i]!;
    if (child.shared) children[i] = child = copyNode(child);
    if (!this.#remove(child, key)) return false;
    const n = child.keys.length;
    if (n === 0) {
      removeAt(keys, i);
      removeAt(children, i);
    } else {
      keys[i] = lastKey(child);
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
    if (left.keys.length + right.keys.length > MAX) return;
    if (left.shared) children[at] = left = copyNode(left);
    for (const k of right.keys) left.keys.push(k);
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
    const copy = new OrderedMap<V>(this.#order);
    this.#root.shared = true;
    copy.#root = this.#root;
    copy.#size = this.#size;
    return copy;
  }

  /** Entries from `lo` (inclusive; all when undefined) up, in order. Do not write while iterating. */
  entries(lo?: string): OrderedMapCursor<V> {
    return new OrderedMapCursor<V>(this.#root, this.#order, false, lo);
  }

  /** Entries from `hi` (inclusive; all when undefined) down, in reverse order. Do not write while iterating. */
  entriesReversed(hi?: string): OrderedMapCursor<V> {
    return new OrderedMapCursor<V>(this.#root, this.#order, true, hi);
  }

  /** How many leaves hold the entries (how full the nodes are: a measure for tests and benchmarks). */
  leafCount(): number {
    return countLeaves(this.#root);
  }

  /** Calls `fn` with each entry in order. Do not write while iterating. */
  forEachPair(fn: (key: string, value: V) => void): void {
    walk(this.#root, fn);
  }
}

function countLeaves<V>(node: Node<V>): number {
  if (node.children === null) return 1;
  let n = 0;
  for (const c of node.children) n += countLeaves(c);
  return n;
}

function walk<V>(node: Node<V>, fn: (key: string, value: V) => void): void {
  const children = node.children;
  if (children !== null) {
    for (const c of children) walk(c, fn);
    return;
  }
  const keys = node.keys;
  const values = node.values!;
  for (let i = 0; i < keys.length; i++) fn(keys[i]!, values[i]!);
}

/** An iterator over an `OrderedMap` in either direction: the path of branches to the current leaf and the index in each. */
export class OrderedMapCursor<V> implements IterableIterator<[string, V]> {
  readonly #path: Node<V>[] = [];
  readonly #at: number[] = [];
  readonly #reverse: boolean;
  /** The current leaf; null when the iteration has ended. */
  #leaf: Node<V> | null;
  #i = 0;

  constructor(root: Node<V>, order: KeyOrder, reverse: boolean, bound: string | undefined) {
    this.#reverse = reverse;
    let node = root;
    while (node.children !== null) {
      let i: number;
      if (bound === undefined) i = reverse ? node.children.length - 1 : 0;
      else {
        i = lowerBound(node.keys, bound, order);
        if (i === node.keys.length) {
          if (!reverse) {
            this.#leaf = null;
            return;
          }
          i--;
        }
      }
      this.#path.push(node);
      this.#at.push(i);
      node = node.children[i]!;
    }
    this.#leaf = node;
    if (bound === undefined) this.#i = reverse ? node.keys.length - 1 : 0;
    else {
      const i = lowerBound(node.keys, bound, order);
      // Reversed, the bound is the first key taken when present, else the one before it.
      this.#i = reverse && !(i < node.keys.length && node.keys[i] === bound) ? i - 1 : i;
    }
  }

  [Symbol.iterator](): this {
    return this;
  }

  next(): IteratorResult<[string, V]> {
    let leaf = this.#leaf;
    if (leaf === null) return { done: true, value: undefined };
    if (this.#reverse ? this.#i < 0 : this.#i >= leaf.keys.length) {
      leaf = this.#step();
      if (leaf === null) return { done: true, value: undefined };
    }
    const i = this.#i;
    this.#i = this.#reverse ? i - 1 : i + 1;
    return { done: false, value: [leaf.keys[i]!, leaf.values![i]!] };
  }

  /** Moves to the next leaf in the direction (its first entry that way); null at the end. */
  #step(): Node<V> | null {
    const path = this.#path;
    const at = this.#at;
    const reverse = this.#reverse;
    let d = path.length - 1;
    while (d >= 0 && (reverse ? at[d]! === 0 : at[d]! + 1 >= path[d]!.children!.length)) d--;
    if (d < 0) {
      this.#leaf = null;
      return null;
    }
    at[d] = at[d]! + (reverse ? -1 : 1);
    let node = path[d]!.children![at[d]!]!;
    for (d++; d < path.length; d++) {
      path[d] = node;
      const i = reverse ? node.children!.length - 1 : 0;
      at[d] = i;
      node = node.children![i]!;
    }
    this.#leaf = node;
    this.#i = reverse ? node.keys.length - 1 : 0;
    return node;
  }
}
