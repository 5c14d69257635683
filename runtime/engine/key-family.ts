/**
 * @module Keys built under a prefix that carry it to the memtable, so the
 * map's head of such a key (key-heads.ts) is read from the prefix's answer,
 * worked out once per set of heads, instead of a binary search comparing
 * the key with the declared bounds on every look-up. A caller that builds
 * its keys from a prefix it holds (the queue's kept KV keys and its key
 * prefixes) makes a `KeyFamily` once and its keys through it.
 *
 * A wrong hint cannot place a key: a `HeadedKey` is made only by its
 * family, from the family's prefix and a suffix, and is frozen, so its key
 * starts with the prefix; the map takes the hint only for the key string
 * it was made with (`hintedHead`), and otherwise searches as without one.
 * A family whose keys the heads split (a declared prefix longer than the
 * family's, starting with it) has no head: its keys are searched. Nothing
 * stored depends on hints.
 */
import type { KeyHeads } from "./key-heads.js";

/** What only this module hands `HeadedKey`'s constructor. */
const MINT = Symbol("headed key");

/** A key prefix whose keys' head is worked out once per set of heads. */
export class KeyFamily {
  readonly prefix: string;
  /** The heads `#head` was worked out for: the last asked (a family shared by two engines works it out again on each switch, still exact). */
  #heads: KeyHeads | undefined = undefined;
  #head = -1;

  constructor(prefix: string) {
    this.prefix = prefix;
  }

  /** The head of every key starting with the prefix under `heads`, or -1 when `heads` split them (see `KeyHeads.familyHead`). */
  headUnder(heads: KeyHeads): number {
    if (this.#heads !== heads) {
      this.#head = heads.familyHead(this.prefix);
      this.#heads = heads;
    }
    return this.#head;
  }

  /**
   * The key `prefix + suffix`, carrying this family. Joined, so the key is
   * one flat string: `+` makes a pair of strings that the map's first
   * comparison flattens through the engine's runtime and every later one
   * reads through (flat-string.ts).
   */
  key(suffix: string): HeadedKey {
    return new HeadedKey(MINT, [this.prefix, suffix].join(""), this);
  }
}

/** A key made by a `KeyFamily` (`KeyFamily.key`): it starts with its family's prefix. Frozen. */
export class HeadedKey {
  readonly key: string;
  readonly family: KeyFamily;

  constructor(mint: symbol, key: string, family: KeyFamily) {
    // The constructor is reachable from any key (`k.constructor`): without the mint, a caller could pair any key with any family.
    if (mint !== MINT) throw new TypeError("a headed key is made by its KeyFamily (family.key(suffix)), not by calling the constructor");
    this.key = key;
    this.family = family;
    Object.freeze(this);
  }
}

/**
 * The head of `key` under `heads` that `hint` gives: its family's head when
 * `hint` was made for this very key string and the family is not split,
 * else -1 (the caller searches as without a hint).
 */
export function hintedHead(heads: KeyHeads, key: string, hint: HeadedKey | undefined): number {
  // The same string object in the common case: `===` is then one pointer compare.
  return hint !== undefined && hint.key === key ? hint.family.headUnder(heads) : -1;
}
