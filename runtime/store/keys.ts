/**
 * @module Object key validation and ordering, shared by every store.
 */
import { ValidationError } from "../errors.js";
import { quoteValue } from "../option-values.js";

/** Longest key S3 accepts, in UTF-8 bytes. */
export const MAX_OBJECT_KEY_BYTES = 1024;

/**
 * Rejects keys that could escape a directory or that S3 and a file system
 * would read differently: empty, absolute, `.`/`..` or empty segments, NUL,
 * backslashes, lone UTF-16 surrogates, and keys longer than S3 allows.
 */
export function validateObjectKey(key: string): void {
  if (typeof key !== "string") throw new ValidationError(`an object key must be a string, got ${quoteValue(key)}`);
  if (!isValidObjectKey(key)) throw invalidObjectKey(key);
}

/**
 * Whether `key` passes every check of `validateObjectKey`, in one pass over
 * its units and without allocating: every store request validates its key,
 * and the engine puts a WAL object per commit when steps run one at a time.
 */
function isValidObjectKey(key: string): boolean {
  const n = key.length;
  // Every unit is at least one byte of UTF-8.
  if (n === 0 || n > MAX_OBJECT_KEY_BYTES) return false;
  let bytes = 0;
  let segmentStart = 0;
  for (let i = 0; i <= n; i++) {
    const c = i === n ? 0x2f : key.charCodeAt(i);
    if (c === 0x2f) {
      // "/": closes the segment [segmentStart, i); an empty one is a leading '/', a '//' or a trailing '/'.
      const len = i - segmentStart;
      if (len === 0) return false;
      if (key.charCodeAt(segmentStart) === 0x2e && (len === 1 || (len === 2 && key.charCodeAt(segmentStart + 1) === 0x2e))) return false;
      segmentStart = i + 1;
      if (i < n) bytes++;
    } else if (c < 0x80) {
      if (c === 0 || c === 0x5c) return false;
      bytes++;
    } else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdfff) {
      // A surrogate pair (4 bytes in UTF-8) or a lone surrogate.
      const next = i + 1 < n ? key.charCodeAt(i + 1) : 0;
      if (c > 0xdbff || next < 0xdc00 || next > 0xdfff) return false;
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes <= MAX_OBJECT_KEY_BYTES;
}

/** The error for a key `isValidObjectKey` rejects, naming every problem. */
function invalidObjectKey(key: string): ValidationError {
  return new ValidationError(`invalid object key ${quoteValue(key)}; use '/'-separated non-empty relative segments`, objectKeyProblems(key));
}

/** @internal What is wrong with `key`, each problem once; empty when `validateObjectKey` accepts it. */
export function objectKeyProblems(key: string): string[] {
  const problems: string[] = [];
  if (key.length === 0) problems.push("the key is empty");
  if (key.startsWith("/")) problems.push("the key is absolute (starts with '/')");
  if (key.includes("\0")) problems.push("the key contains a NUL character");
  if (key.includes("\\")) problems.push("the key contains a backslash");
  // A lone surrogate has no UTF-8 spelling: encoded for a file name or a URL it becomes U+FFFD, so distinct keys would share one object.
  if (!isWellFormed(key)) problems.push("the key contains a lone UTF-16 surrogate (no UTF-8 spelling)");
  if (key.length > 0 && !key.startsWith("/")) {
    for (const segment of key.split("/")) {
      if (segment === "") problems.push("the key has an empty segment ('//' or a trailing '/')");
      else if (segment === "." || segment === "..") problems.push(`the key has a '${segment}' segment`);
    }
  }
  if (Buffer.byteLength(key, "utf8") > MAX_OBJECT_KEY_BYTES) problems.push(`the key is longer than ${MAX_OBJECT_KEY_BYTES} bytes`);
  return [...new Set(problems)];
}

/**
 * Whether `s` has no lone UTF-16 surrogate, so it survives UTF-8 encoding
 * unchanged (native since Node 20; the ES2023 lib does not declare it). The
 * one copy: stores, the engine and the queue all call this.
 */
export function isWellFormed(s: string): boolean {
  return (s as string & { isWellFormed(): boolean }).isWellFormed();
}

/** A UTF-16 surrogate: a unit of a code point above U+FFFF. */
const SURROGATE = /[\ud800-\udfff]/;

/**
 * Compares strings by the byte order of their UTF-8 encodings, which is code
 * point order. JavaScript's `<` compares UTF-16 code units and disagrees for
 * characters above U+FFFF against U+E000..U+FFFF.
 *
 * A B-tree lookup calls this about twenty times, on keys that share long
 * prefixes, so strings without surrogates (nearly all keys) take the
 * built-in comparison: without surrogates, code unit order is code point
 * order. The engine's memtable skips even the surrogate tests while its
 * keys allow (engine/memtable.ts).
 */
export function compareKeys(a: string, b: string): number {
  if (a === b) return 0;
  if (!SURROGATE.test(a) && !SURROGATE.test(b)) return a < b ? -1 : 1;
  return compareByCodePoint(a, b);
}

/** A code unit of U+D800 or above: a surrogate, or a BMP character that UTF-16 order puts after them. */
const AT_OR_ABOVE_SURROGATES = /[\ud800-\uffff]/;

/**
 * Whether every code unit of `s` is below U+D800. Against such a string the
 * built-in comparison is `compareKeys` order, whatever the other string
 * holds: at the first unit where they differ, its unit is below every
 * surrogate and every U+E000..U+FFFF unit in both orders.
 */
export function unitsBelowSurrogates(s: string): boolean {
  return !AT_OR_ABOVE_SURROGATES.test(s);
}

function compareByCodePoint(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(i);
    if (ca === cb) continue;
    // Surrogates (D800..DFFF) encode code points above U+FFFF and so sort
    // after every BMP character.
    const sa = ca >= 0xd800 && ca <= 0xdfff;
    const sb = cb >= 0xd800 && cb <= 0xdfff;
    if (sa !== sb) return sa ? 1 : -1;
    return ca < cb ? -1 : 1;
  }
  return a.length - b.length;
}
