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

/** Uniform numbers in [0, 1). */
export interface RandomSource {
  next(): number;
}

/**
 * A source of uniform numbers in [0, 1) drawn from OS randomness a pool at a
 * time. A class, not a closure per source: every queue's draws run the same
 * function, which a closure made per queue is not to V8.
 */
export class PooledRandom implements RandomSource {
  readonly #pool = new Uint8Array(4096);
  #next = 4096;

  next(): number {
    if (this.#next === this.#pool.length) {
      randomFillSync(this.#pool);
      this.#next = 0;
    }
    return this.#pool[this.#next++]! / 256;
  }
}

/** A source of uniform numbers in [0, 1) drawn from OS randomness a pool at a time. */
export function pooledRandom(): () => number {
  const source = new PooledRandom();
  return () => source.next();
}

/** A monotonic ULID generator (increasing within itself) over a pooled random source. */
export function pooledUlids(): ULIDFactory {
  const ids = new MonotonicUlids(new PooledRandom());
  return (seedTime?: number) => ids.next(seedTime);
}

/** Crockford's base32 digits, as character codes. */
const DIGITS = Array.from("0123456789ABCDEFGHJKMNPQRSTVWXYZ", (c) => c.charCodeAt(0));
const TIME_LEN = 10;
const RANDOM_LEN = 16;

/** ulid's `monotonicFactory(prng)` (see `MonotonicUlids`). */
export function monotonicUlids(prng: () => number): ULIDFactory {
  const ids = new MonotonicUlids({ next: prng });
  return (seedTime?: number) => ids.next(seedTime);
}

/**
 * ulid's `monotonicFactory(prng)`, the same ids from the same draws: a new
 * millisecond draws a new random part (its last character first), an id in
 * the same millisecond or an earlier one increments the last random part; a
 * missing or zero time means `Date.now()`. Built as one flat string from
 * the digits kept as numbers, where ulid builds each id a character at a
 * time (some forty string allocations per id, two ids per workflow step).
 * A class, so generators of several queues share their code (see `PooledRandom`).
 */
export class MonotonicUlids {
  readonly #codes: number[] = new Array<number>(TIME_LEN + RANDOM_LEN).fill(DIGITS[0]!);
  readonly #random = new Uint8Array(RANDOM_LEN);
  #lastTime = 0;

  constructor(private readonly source: RandomSource) {}

  next(seedTime?: number): string {
    const codes = this.#codes;
    const random = this.#random;
    const seed = !seedTime || Number.isNaN(seedTime) ? Date.now() : seedTime;
    if (seed <= this.#lastTime) {
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
      this.#lastTime = seed;
      for (let i = RANDOM_LEN - 1; i >= 0; i--) {
        const d = Math.floor(this.source.next() * 32) % 32;
        random[i] = d;
        codes[TIME_LEN + i] = DIGITS[d]!;
      }
    }
    return String.fromCharCode.apply(null, codes);
  }
}
