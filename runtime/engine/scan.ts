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

/** Entries in order from a lower bound (inclusive), and in reverse from an upper bound (inclusive; undefined: from the last). */
export interface OrderedSource<V> {
  from(lo: string): Iterator<[string, V]>;
  fromReversed(hi: string | undefined): Iterator<[string, V]>;
}

/** An ordered map's iteration from a lower bound and, reversed, from an upper bound (both inclusive; undefined: from the end). */
export interface OrderedEntries<V> {
  entries(lo?: string): Iterator<[string, V]>;
  entriesReversed(hi?: string): Iterator<[string, V]>;
}

/** Ordered iteration over a tree with prefix, bounds, limit and direction. */
export function scanTree<V>(tree: OrderedEntries<V>, opts: ScanOptions): IterableIterator<[string, V]> {
  return scanOrdered({ from: (lo) => tree.entries(lo), fromReversed: (hi) => tree.entriesReversed(hi) }, opts);
}

/** Ordered iteration over any ordered source with prefix, bounds, limit and direction. */
export function* scanOrdered<V>(source: OrderedSource<V>, opts: ScanOptions): IterableIterator<[string, V]> {
  const { prefix = "", limit = Infinity } = opts;
  let lo = opts.start ?? prefix;
  if (compareKeys(lo, prefix) < 0) lo = prefix;
  let count = 0;
  if (count >= limit) return;
  const inRange = (k: string) =>
    k.startsWith(prefix) &&
    (opts.end === undefined || compareKeys(k, opts.end) < 0) &&
    (opts.start === undefined || (opts.startExclusive ? compareKeys(k, opts.start) > 0 : compareKeys(k, opts.start) >= 0));
  if (!opts.reverse) {
    for (const [k, v] of iterable(source.from(lo))) {
      if (!k.startsWith(prefix) || (opts.end !== undefined && compareKeys(k, opts.end) >= 0)) return;
      if (!inRange(k)) continue;
      yield [k, v];
      if (++count >= limit) return;
    }
  } else {
    let hi = opts.end;
    const after = prefixSuccessor(prefix);
    if (after !== undefined && (hi === undefined || compareKeys(after, hi) < 0)) hi = after;
    for (const [k, v] of iterable(source.fromReversed(hi))) {
      if (compareKeys(k, lo) < 0) return;
      if (!inRange(k)) continue;
      yield [k, v];
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

function iterable<T>(it: Iterator<T>): Iterable<T> {
  return { [Symbol.iterator]: () => it };
}
