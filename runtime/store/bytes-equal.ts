/**
 * @module Byte equality, the one comparison every layer uses (a stored object
 * against a write, a record against its re-encoding, an address against a list).
 */

/** Whether `a` and `b` hold the same bytes (views compare their own range only). */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  const n = a.length;
  if (n !== b.length) return false;
  // Native comparison past a few dozen bytes; below, a loop (with the length in a local:
  // reading `byteLength` on every iteration made it ten times slower).
  if (n > 32) return Buffer.compare(a, b) === 0;
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}
