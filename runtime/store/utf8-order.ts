/**
 * @module Puts a listing that arrives in UTF-16 code unit order (what
 * JavaScript's `<` gives, and how Azurite sorts blob names) into UTF-8 byte
 * order, the order `ObjectStore.list` promises, while streaming.
 *
 * The two orders disagree only where two keys first differ at a position
 * holding, in both, a code unit at or above U+D800: a surrogate (a code point
 * above U+FFFF) sorts before U+E000..U+FFFF in UTF-16 and after it in UTF-8.
 * So a key is held back only while a later key could still sort before it:
 * after reading key `c`, whose first unit at or above U+D800 is at position
 * `q`, every later key is at least `c[0..q) + U+E000` in UTF-8 order, and
 * held keys below that bound are released. A listing already in UTF-8 order
 * passes through the same way. Keys with no such unit are never held.
 */
import { StoreRequestError } from "../errors.js";
import { compareKeys } from "./keys.js";

/** Keys held back at once before the listing is refused, which bounds memory. */
export const MAX_HELD_KEYS = 10_000;

/** The least key, in UTF-8 order, that any key at or after `key` in UTF-16 order can be; `null` when it is `key` itself. */
function lowerBoundOfLater(key: string): string | null {
  for (let i = 0; i < key.length; i++) {
    if (key.charCodeAt(i) >= 0xd800) return `${key.slice(0, i)}\ue000`;
  }
  return null;
}

/** Inserts `item` into `held`, kept in UTF-8 order of `key`. */
function insertSorted<T extends { key: string }>(held: T[], item: T): void {
  let lo = 0;
  let hi = held.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareKeys(held[mid]!.key, item.key) <= 0) lo = mid + 1;
    else hi = mid;
  }
  held.splice(lo, 0, item);
}

/**
 * Yields the items of `source` in UTF-8 order of their keys, given that
 * `source` yields them in UTF-16 or UTF-8 order. More than `maxHeld` keys
 * waiting at once fails the listing with `StoreRequestError` naming `where`
 * (the store) and `prefix` (the listing).
 */
export async function* inUtf8Order<T extends { key: string }>(
  source: AsyncIterable<T>,
  where: string,
  prefix: string,
  maxHeld = MAX_HELD_KEYS,
): AsyncIterable<T> {
  const held: T[] = [];
  for await (const item of source) {
    const bound = lowerBoundOfLater(item.key);
    if (bound === null) {
      // Every held key sorts before this one in both orders.
      yield* held.splice(0);
      yield item;
      continue;
    }
    insertSorted(held, item);
    let release = 0;
    while (release < held.length && compareKeys(held[release]!.key, bound) < 0) release++;
    if (release > 0) yield* held.splice(0, release);
    if (held.length > maxHeld) {
      throw new StoreRequestError(
        "list",
        prefix,
        `${where} lists in UTF-16 order and more than ${maxHeld} consecutive keys contain characters at or above U+D800, too many to put in UTF-8 order in memory; keep such characters out of keys`,
      );
    }
  }
  yield* held;
}
