/**
 * @module The ULID after a given one. Ids a queue draws within one
 * millisecond count up by one (a MockClock that is not advanced keeps them
 * in one), so a test can name the id the queue draws next and take it.
 */
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** The ULID one more than `id` (its random part counted up by one, with carry). */
export function nextUlid(id: string): string {
  const chars = id.split("");
  for (let i = chars.length - 1; i >= 0; i--) {
    const d = CROCKFORD.indexOf(chars[i]!);
    if (d < CROCKFORD.length - 1) {
      chars[i] = CROCKFORD[d + 1]!;
      return chars.join("");
    }
    chars[i] = "0";
  }
  throw new Error(`${id} has no successor`);
}

/** The ULID `n` more than `id`. */
export function ulidAfter(id: string, n: number): string {
  let out = id;
  for (let i = 0; i < n; i++) out = nextUlid(out);
  return out;
}
