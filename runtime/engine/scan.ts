/**
 * @module Ordered range iteration over the engine's sorted map.
 */
import { compareKeys } from "../store/keys.js";

/** Bounds, order and size of a scan. */
export interface ScanOptions {
  /** Only keys starting with this prefix. */
  prefix?: string;
  /** Lower bound (inclusive unless `startExclusive`). */
  start?: string;
  startExclusive?: boolean;
  /** Upper bound, exclusive. */
  end?: string;
  /** Stop after this many entries. */
  limit?: number;
  /** Descending order. */
  reverse?: boolean;
}

/**
 * Entries in order from a lower bound (inclusive), and in reverse from an
 * upper bound (inclusive; undefined: from the last). A scan calls only
 * `next` on them: one left early is dropped, never closed (`return`).
 */
export interface OrderedSource<V> {
  from(lo: string): Iterator<[string, V]>;
  fromReversed(hi: string | undefined): Iterator<[string, V]>;
}

/** An ordered map's iteration from a lower bound and, reversed, from an upper bound (both inclusive; undefined: from the end). */
export interface OrderedEntries<V> {
  entries(lo?: string): Iterator<[string, V]>;
  entriesReversed(hi?: string): Iterator<[string, V]>;
}

/**
 * A tree as an ordered source. A class, not an object of arrows: where
 * names are kept at run time (esbuild's `keepNames`, as tsx runs the
 * sources), each arrow bound to a name costs a definition of that name
 * every time it is made, and a scan is made on every claim.
 */
class TreeSource<V> implements OrderedSource<V> {
  readonly #tree: OrderedEntries<V>;

  constructor(tree: OrderedEntries<V>) {
    this.#tree = tree;
  }

  from(lo: string): Iterator<[string, V]> {
    return this.#tree.entries(lo);
  }

  fromReversed(hi: string | undefined): Iterator<[string, V]> {
    return this.#tree.entriesReversed(hi);
  }
}

/** Ordered iteration over a tree with prefix, bounds, limit and direction. */
export function scanTree<V>(tree: OrderedEntries<V>, opts: ScanOptions): IterableIterator<[string, V]> {
  return scanOrdered(new TreeSource(tree), opts);
}

/** Ordered iteration over any ordered source with prefix, bounds, limit and direction. */
export function* scanOrdered<V>(source: OrderedSource<V>, opts: ScanOptions): IterableIterator<[string, V]> {
  const { prefix = "", limit = Infinity } = opts;
  let lo = opts.start ?? prefix;
  if (compareKeys(lo, prefix) < 0) lo = prefix;
  let count = 0;
  if (count >= limit) return;
  if (!opts.reverse) {
    const it = source.from(lo);
    for (let r = it.next(); r.done !== true; r = it.next()) {
      const entry = r.value;
      const k = entry[0];
      if (!k.startsWith(prefix) || (opts.end !== undefined && compareKeys(k, opts.end) >= 0)) return;
      if (!inRange(k, prefix, opts)) continue;
      yield [k, entry[1]];
      if (++count >= limit) return;
    }
  } else {
    let hi = opts.end;
    const after = prefixSuccessor(prefix);
    if (after !== undefined && (hi === undefined || compareKeys(after, hi) < 0)) hi = after;
    const it = source.fromReversed(hi);
    for (let r = it.next(); r.done !== true; r = it.next()) {
      const entry = r.value;
      const k = entry[0];
      if (compareKeys(k, lo) < 0) return;
      if (!inRange(k, prefix, opts)) continue;
      yield [k, entry[1]];
      if (++count >= limit) return;
    }
  }
}

/** Whether `k` is within the scan's prefix and bounds. A function of the module, not a closure per scan (see `TreeSource`). */
function inRange(k: string, prefix: string, opts: ScanOptions): boolean {
  return (
    k.startsWith(prefix) &&
    (opts.end === undefined || compareKeys(k, opts.end) < 0) &&
    (opts.start === undefined || (opts.startExclusive ? compareKeys(k, opts.start) > 0 : compareKeys(k, opts.start) >= 0))
  );
}

/** The smallest key greater than every key starting with `prefix`, when one exists. */
function prefixSuccessor(prefix: string): string | undefined {
  if (prefix === "") return undefined;
  const chars = Array.from(prefix);
  const last = chars.pop()!.codePointAt(0)!;
  if (last >= 0x10ffff) return undefined;
  return chars.join("") + String.fromCodePoint(last === 0xd7ff ? 0xe000 : last + 1);
}
