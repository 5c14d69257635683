/**
 * @module The byte step of the engine's in-memory key hashes (the changed
 * keys' table, the key runs' filters), each from a start drawn at random per
 * map or per process.
 *
 * FNV-1a's step (`h ^ byte`, then a multiply) only ever carries a bit
 * upwards, so the hash's low 7 bits depend only on the start's low 7 bits
 * and the bytes, and the rest of the start only adds a constant: keys made
 * to collide from one start collide from every start that shares its low 7
 * bits, one start in 128. Rotating the state before each byte moves its high
 * bits into the low ones, so a collision found from one start says nothing
 * about another.
 */

/** The FNV-1a prime. */
const PRIME = 0x01000193;

/** `h` after one more byte: FNV-1a's multiply over the state rotated left by 11 (5 left some pairs of crafted keys colliding from other starts; 11 leaves them as apart as random keys). */
export function hashStep(h: number, byte: number): number {
  return Math.imul(((h << 11) | (h >>> 21)) ^ byte, PRIME);
}

/** The hash of `s`'s UTF-16 code units from `start`, unsigned (for tests and benchmarks: the engine hashes UTF-8 bytes, the same for ASCII). */
export function hashFrom(start: number, s: string): number {
  let h = start | 0;
  for (let i = 0; i < s.length; i++) h = hashStep(h, s.charCodeAt(i));
  return h >>> 0;
}
