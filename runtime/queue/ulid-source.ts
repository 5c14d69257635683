/**
 * @module ULID generators whose randomness comes from a pool.
 *
 * ulid's default source asks the OS for one random byte per character (16
 * calls per id); this draws the same kind of bytes from a refilled pool so
 * one system call serves hundreds of ids. Each byte is used once. Job ids,
 * payload names, run ids and client request ids all come from here.
 */
import { randomFillSync } from "node:crypto";
import { encodeTime, type ULIDFactory } from "ulid";

/** A source of uniform numbers in [0, 1) drawn from OS randomness a pool at a time. */
export function pooledRandom(): () => number {
  const pool = new Uint8Array(4096);
  let next = pool.length;
  return () => {
    if (next === pool.length) {
      randomFillSync(pool);
      next = 0;
    }
    return pool[next++]! / 256;
  };
}

/** A monotonic ULID generator (increasing within itself) over a pooled random source. */
export function pooledUlids(): ULIDFactory {
  return monotonicUlids(pooledRandom());
}

/** Crockford's base32 digits, as character codes. */
const DIGITS = Array.from("0123456789ABCDEFGHJKMNPQRSTVWXYZ", (c) => c.charCodeAt(0));
const TIME_LEN = 10;
const RANDOM_LEN = 16;

/**
 * ulid's `monotonicFactory(prng)`, the same ids from the same draws: a new
 * millisecond draws a new random part (its last character first), an id in
 * the same millisecond or an earlier one increments the last random part; a
 * missing or zero time means `Date.now()`. Built as one flat string from
 * the digits kept as numbers, where ulid builds each id a character at a
 * time (some forty string allocations per id, two ids per workflow step).
 */
export function monotonicUlids(prng: () => number): ULIDFactory {
  const codes: number[] = new Array<number>(TIME_LEN + RANDOM_LEN).fill(DIGITS[0]!);
  const random = new Uint8Array(RANDOM_LEN);
  let lastTime = 0;
  return (seedTime?: number) => {
    const seed = !seedTime || Number.isNaN(seedTime) ? Date.now() : seedTime;
    if (seed <= lastTime) {
      let i = RANDOM_LEN - 1;
      while (i >= 0 && random[i] === 31) i--;
      if (i < 0) throw new Error("cannot make another ULID in this millisecond: its random part is at its maximum");
      random[i]!++;
      codes[TIME_LEN + i] = DIGITS[random[i]!]!;
      for (let j = i + 1; j < RANDOM_LEN; j++) {
        random[j] = 0;
        codes[TIME_LEN + j] = DIGITS[0]!;
      }
    } else {
      // ulid's own encoder checks the time (a range error for a bad one); once per millisecond.
      const time = encodeTime(seed, TIME_LEN);
      for (let i = 0; i < TIME_LEN; i++) codes[i] = time.charCodeAt(i);
      lastTime = seed;
      for (let i = RANDOM_LEN - 1; i >= 0; i--) {
        const d = Math.floor(prng() * 32) % 32;
        random[i] = d;
        codes[TIME_LEN + i] = DIGITS[d]!;
      }
    }
    return String.fromCharCode.apply(null, codes);
  };
}
