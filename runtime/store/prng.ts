/**
 * @module A small seeded pseudo-random generator for the store wrappers.
 *
 * Fault injection and latency jitter must replay identically for a given
 * seed, which `Math.random` cannot do. mulberry32 is enough: 32 bits of state,
 * a full period of 2^32, and good spread for rates and jitter. Not for
 * anything cryptographic.
 */

/** Returns a function yielding uniform numbers in [0, 1), determined by `seed`. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
