/**
 * Keys crafted to share one 32-bit hash from one start (FNV-1a from its usual
 * start, the hash the changed-keys map used before it took a random start,
 * unless another hash is given): each stage
 * a birthday search finds two 6-letter blocks leading to one state, so every
 * choice of one block per stage ends in the same state. The key-run filters
 * hashed from that start too before they took a random one. Used by the
 * changed-keys and key-run tests and their benchmarks.
 */

/** The usual FNV-1a start. */
export const FNV_START = 0x811c9dc5;

/** FNV-1a over the UTF-16 code units of `s`, from `h`. */
export function fnvFrom(h: number, s: string): number {
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * 2^stages keys starting with `prefix`, all with one hash from `start` under
 * `hashFrom` (FNV-1a from `FNV_START` unless given; the engine's own key hash
 * is runtime/engine/key-hash.ts's `hashFrom`). `hashFrom` must carry on from a
 * state: `hashFrom(hashFrom(s, a), b) === hashFrom(s, a + b)`.
 */
export function collidingKeys(
  stages: number,
  prefix: string,
  hashFrom: (h: number, s: string) => number = fnvFrom,
  start = FNV_START,
  blockLength = 6,
): string[] {
  let keys = [prefix];
  let state = hashFrom(start, prefix);
  let seed = 1;
  const block = () => {
    let b = "";
    for (let i = 0; i < blockLength; i++) {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      b += String.fromCharCode(97 + ((seed >>> 16) % 26));
    }
    return b;
  };
  for (let s = 0; s < stages; s++) {
    const seen = new Map<number, string>();
    for (;;) {
      const b = block();
      const h = hashFrom(state, b);
      const other = seen.get(h);
      if (other !== undefined && other !== b) {
        keys = keys.flatMap((k) => [k + other, k + b]);
        state = h;
        break;
      }
      seen.set(h, b);
    }
  }
  return keys;
}
