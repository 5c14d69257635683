/**
 * @module ULID generators whose randomness comes from a pool.
 *
 * ulid's default source asks the OS for one random byte per character (16
 * calls per id); this draws the same kind of bytes from a refilled pool so
 * one system call serves hundreds of ids. Each byte is used once. Job ids,
 * payload names, run ids and client request ids all come from here.
 */
import { randomFillSync } from "node:crypto";
import { monotonicFactory, type ULIDFactory } from "ulid";

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
  return monotonicFactory(pooledRandom());
}
