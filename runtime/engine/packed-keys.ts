/**
 * @module A leaf's keys held as one string: the prefix they share and, past
 * it, their suffixes side by side. A key string costs about 40 B for a job
 * key of 23 characters (plus the 8 B slot pointing at it); past the prefix
 * 32 consecutive job keys differ in a few characters, so the packed form
 * costs a few bytes per key. Searched by comparing code units, so no key
 * string is made to find or overwrite one; a key is made again as a string
 * only when asked for (a walk, or the leaf's next structural write).
 *
 * Code unit order only: the built-in string comparison, which the ordered
 * map uses while every key is below U+D800. Under it the keys between the
 * first and last of a sorted run share the prefix those two share.
 *
 * A search tells whether a key starts with the prefix by two built-in
 * comparisons, with the prefix and with the least string past every string
 * starting with it: `startsWith` on a string argument compiles to a loop
 * over both strings' code units, and a leaf's prefix is most of the key (55
 * of a step pointer's 58 units), which made that loop about three quarters
 * of a search's instructions. Both are flat strings of their own, so the
 * comparisons take the built-in's fast path (a slice of a key is not flat).
 */

import { flatHead } from "./flat-string.js";

/** Longest span of suffixes the offset form can address: offsets are one code unit each. */
const MAX_UNITS = 0xffff;

export class PackedKeys {
  /** What every key starts with. */
  readonly prefix: string;
  /** The least string after every string starting with `prefix`; null when there is none (the prefix is empty or all U+FFFF). */
  readonly #past: string | null;
  #count: number;
  /**
   * With `stride` > 0, the suffixes of `stride` units each; with 0 (keys of
   * different lengths), `header` offsets (one unit each, into what follows
   * them: one per key packed and one past the last) and then the suffixes.
   */
  readonly #units: string;
  readonly #stride: number;
  readonly #header: number;
  /** The index in `#units` of key 0: keys taken from the front leave their units behind. */
  #base: number;

  private constructor(prefix: string, past: string | null, count: number, units: string, stride: number, header: number, base: number) {
    this.prefix = prefix;
    this.#past = past;
    this.#count = count;
    this.#units = units;
    this.#stride = stride;
    this.#header = header;
    this.#base = base;
  }

  /** `keys` (at least one, strictly ascending in code unit order) packed; null when their suffixes are too long to address. */
  static of(keys: readonly string[]): PackedKeys | null {
    const count = keys.length;
    const first = keys[0]!;
    const last = keys[count - 1]!;
    const bound = Math.min(first.length, last.length);
    let shared = 0;
    while (shared < bound && first.charCodeAt(shared) === last.charCodeAt(shared)) shared++;
    const stride = first.length - shared;
    let sameLength = stride > 0;
    let total = 0;
    for (const k of keys) {
      total += k.length - shared;
      if (k.length - shared !== stride) sameLength = false;
    }
    const suffixes = new Array<string>(count);
    for (let i = 0; i < count; i++) suffixes[i] = keys[i]!.slice(shared);
    // join makes one flat string; `+=` would leave a rope of every part.
    const prefix = flatHead(first, shared, 0);
    // Past every string starting with the prefix: its last unit below U+FFFF raised, the U+FFFF after it dropped.
    let end = shared;
    while (end > 0 && first.charCodeAt(end - 1) === 0xffff) end--;
    const past = end === 0 ? null : flatHead(first, end, 1);
    if (sameLength) return new PackedKeys(prefix, past, count, suffixes.join(""), stride, 0, 0);
    if (total > MAX_UNITS) return null;
    const offsets = new Array<number>(count + 1);
    let at = 0;
    for (let i = 0; i < count; i++) {
      offsets[i] = at;
      at += suffixes[i]!.length;
    }
    offsets[count] = at;
    return new PackedKeys(prefix, past, count, String.fromCharCode(...offsets) + suffixes.join(""), 0, count + 1, 0);
  }

  /** Keys held. */
  get count(): number {
    return this.#count;
  }

  /**
   * Drops key `i` when it is the first or the last, in place, the units
   * staying shared: a queue takes its oldest entries from the front of a
   * leaf, and the leaf stays packed instead of making every key it holds a
   * string. False (nothing dropped) when one key is left, or for a key
   * between (the caller unpacks). Only for keys one leaf owns: a copy of the
   * leaf takes `copy()`.
   */
  drop(i: number): boolean {
    const count = this.#count;
    if (count < 2 || (i !== 0 && i !== count - 1)) return false;
    if (i === 0) this.#base++;
    this.#count = count - 1;
    return true;
  }

  /** The same keys in an object of their own (the units shared), for a copy of the leaf holding them. */
  copy(): PackedKeys {
    return new PackedKeys(this.prefix, this.#past, this.#count, this.#units, this.#stride, this.#header, this.#base);
  }

  /** The index of `key` when held; otherwise `-(i + 1)`, where `i` is the index of the first key after it (`count` when none). */
  find(key: string): number {
    const prefix = this.prefix;
    // Every key held is at or after the prefix and before `#past`: a key outside goes before or after them all.
    if (key < prefix) return -1;
    const past = this.#past;
    if (past !== null && !(key < past)) return -(this.#count + 1);
    const from = prefix.length;
    let lo = 0;
    let hi = this.#count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const c = this.#compareAt(mid, key, from);
      if (c < 0) lo = mid + 1;
      else if (c > 0) hi = mid;
      else return mid;
    }
    return -(lo + 1);
  }

  /** Key `i` made as a string. */
  keyAt(i: number): string {
    return this.prefix + this.#units.slice(this.#start(i), this.#end(i));
  }

  /** Every key made as a string, in order. */
  keys(): string[] {
    const out = new Array<string>(this.#count);
    for (let i = 0; i < this.#count; i++) out[i] = this.keyAt(i);
    return out;
  }

  #start(i: number): number {
    const stride = this.#stride;
    const at = this.#base + i;
    return stride > 0 ? at * stride : this.#header + this.#units.charCodeAt(at);
  }

  #end(i: number): number {
    const stride = this.#stride;
    const at = this.#base + i + 1;
    return stride > 0 ? at * stride : this.#header + this.#units.charCodeAt(at);
  }

  /** Key `i`'s suffix against `key` past its first `from` units (the prefix): negative, zero or positive as the built-in order puts key `i` before, at or after `key`. */
  #compareAt(i: number, key: string, from: number): number {
    const units = this.#units;
    const start = this.#start(i);
    const length = this.#end(i) - start;
    const keyLength = key.length - from;
    const n = Math.min(length, keyLength);
    for (let j = 0; j < n; j++) {
      const d = units.charCodeAt(start + j) - key.charCodeAt(from + j);
      if (d !== 0) return d;
    }
    return length - keyLength;
  }
}
