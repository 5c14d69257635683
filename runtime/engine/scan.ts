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

/**
 * A scan's options, each read once into fields of one shape. Callers pass
 * options objects of many shapes (`{ prefix, limit }`, `{ start, end,
 * reverse }`, spreads of ranges), so reading them in the scan's loop made
 * those reads megamorphic; and a getter read once cannot answer one way for
 * the bounds and another for the filter.
 */
class ScanBounds {
  readonly prefix: string;
  readonly start: string | undefined;
  readonly startExclusive: boolean;
  readonly end: string | undefined;
  readonly limit: number;
  readonly reverse: boolean;

  constructor(opts: ScanOptions) {
    const prefix = opts.prefix;
    const limit = opts.limit;
    this.prefix = prefix === undefined ? "" : prefix;
    this.start = opts.start;
    this.startExclusive = opts.startExclusive ? true : false;
    this.end = opts.end;
    this.limit = limit === undefined ? Number.POSITIVE_INFINITY : limit;
    this.reverse = opts.reverse ? true : false;
  }

  /** Whether `k` is within the prefix and bounds. */
  holds(k: string): boolean {
    const end = this.end;
    const start = this.start;
    return (
      k.startsWith(this.prefix) &&
      (end === undefined || compareKeys(k, end) < 0) &&
      (start === undefined || (this.startExclusive ? compareKeys(k, start) > 0 : compareKeys(k, start) >= 0))
    );
  }
}

/** Ordered iteration over any ordered source with prefix, bounds, limit and direction. */
export function* scanOrdered<V>(source: OrderedSource<V>, opts: ScanOptions): IterableIterator<[string, V]> {
  const b = new ScanBounds(opts);
  const { prefix, limit, end } = b;
  let lo = b.start ?? prefix;
  if (compareKeys(lo, prefix) < 0) lo = prefix;
  let count = 0;
  if (count >= limit) return;
  if (!b.reverse) {
    const it = source.from(lo);
    for (let r = it.next(); r.done !== true; r = it.next()) {
      const entry = r.value;
      const k = entry[0];
      if (!k.startsWith(prefix) || (end !== undefined && compareKeys(k, end) >= 0)) return;
      if (!b.holds(k)) continue;
      yield [k, entry[1]];
      if (++count >= limit) return;
    }
  } else {
    let hi = end;
    const after = prefixSuccessor(prefix);
    if (after !== undefined && (hi === undefined || compareKeys(after, hi) < 0)) hi = after;
    const it = source.fromReversed(hi);
    for (let r = it.next(); r.done !== true; r = it.next()) {
      const entry = r.value;
      const k = entry[0];
      if (compareKeys(k, lo) < 0) return;
      if (!b.holds(k)) continue;
      yield [k, entry[1]];
      if (++count >= limit) return;
    }
  }
}

/** The smallest key greater than every key starting with `prefix`, when one exists. */
function prefixSuccessor(prefix: string): string | undefined {
  if (prefix === "") return undefined;
  const chars = Array.from(prefix);
  const last = chars.pop()!.codePointAt(0)!;
  if (last >= 0x10ffff) return undefined;
  return chars.join("") + String.fromCodePoint(last === 0xd7ff ? 0xe000 : last + 1);
}
