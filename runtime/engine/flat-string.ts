/**
 * @module Strings made flat: one sequential run of code units of their own.
 * The built-in comparison of two strings (`<`, `<=`) takes a fast path only
 * when both are flat; `a + b` makes a pair of strings (for 13 units or
 * more) and `slice` a view into its source, which it sends to the engine's
 * runtime instead, hundreds of instructions a call. A string compared on
 * every look-up (a key head's bound, a packed leaf's prefix) is made flat
 * once here.
 */

/** Units per `String.fromCharCode` call: a call's arguments go on the stack. */
const FLAT_CHUNK = 4096;

/**
 * The first `n` units of `s` as a flat string of their own, the last one
 * raised by `raise` (so `flatHead(p, p.length, 1)` is the least string past
 * every string starting with `p` when its last unit is below U+FFFF).
 */
export function flatHead(s: string, n: number, raise: number): string {
  const parts: string[] = [];
  for (let at = 0; at < n; at += FLAT_CHUNK) {
    const units = new Array<number>(Math.min(FLAT_CHUNK, n - at));
    for (let i = 0; i < units.length; i++) units[i] = s.charCodeAt(at + i);
    if (at + units.length === n) units[units.length - 1]! += raise;
    parts.push(String.fromCharCode(...units));
  }
  // join makes one flat string of the parts.
  return parts.length === 1 ? parts[0]! : parts.join("");
}

/** `s` as a flat string of its own (see the module documentation). */
export function flatString(s: string): string {
  return flatHead(s, s.length, 0);
}
