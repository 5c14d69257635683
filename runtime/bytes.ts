/**
 * @module Copies of byte arrays. A Node `Buffer` overrides `slice` to return
 * a view of the same memory, and callers hand in Buffers as often as plain
 * arrays: a copy made with `v.slice()` stays shared with the caller's bytes
 * when `v` is a Buffer (changing either changes the other, and the view
 * keeps the whole underlying allocation alive).
 */

/** A copy of `v[start..end)` that shares no memory with `v`, of `v`'s own class (a Buffer stays a Buffer). */
export function copyBytes<T extends Uint8Array>(v: T, start?: number, end?: number): T {
  return Uint8Array.prototype.slice.call(v, start, end) as T;
}
