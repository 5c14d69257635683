/**
 * @module The engine keys of the caller KV keys in use (`u/<key>`),
 * validated and built once (see kept-strings.ts).
 *
 * The workflow runtime reads and writes the same caller keys of a run on
 * every step (its run record, its step pointer). Only keys read in the
 * caller's turn (`Queue.kvGetNow`: the records a run reads on every step)
 * are kept; other uses look them up. A key written once (a step's history
 * entry) would only make the kept keys outlive the young generation of the
 * collector for nothing.
 */
import { type HeadedKey, KeyFamily } from "../engine/key-family.js";
import { ValidationError } from "../errors.js";
import { userKey } from "./keys.js";
import { KeptStrings } from "./kept-strings.js";
import { isWellFormed, MAX_KV_KEY_BYTES, utf8Exceeds, utf8Length, validateKvKey, validateKvPrefix } from "./names.js";

/** Keys per generation: some 100 KB each at the workflow's key lengths. */
const kept = new KeptStrings(1024);

/** The engine key of caller key `key` when it is kept (it was valid then), else undefined. */
export function keptEngineKey(key: string): string | undefined {
  return kept.get(key);
}

/** The engine key of caller key `key`, kept from now on; throws as `validateKvKey` does for a key that is not valid. */
export function keptUserEngineKey(key: string): string {
  const k = kept.get(key);
  if (k !== undefined) return k;
  validateKvKey(key);
  return kept.keep(key, userKey(key));
}

/** What only this module hands `KvKeyRef`'s constructor. */
const KEY_REF_MINT = Symbol("KV key reference");

/**
 * A caller key checked once, with its engine key: held instead of
 * the key by a caller that reads and writes it on every step (the
 * workflow's run record and step pointer), so no use looks it up among the
 * kept keys again. Made only by `KvKeyRef.of`: its engine key is always the
 * caller key's. Not exported by the package's entries; declared in its
 * types because the workflow's step records name it.
 */
export class KvKeyRef {
  readonly key: string;
  readonly #engineKey: string;
  /** The engine key as a family of its own made it: the engine's memtable finds its tree once per set of heads, not by a search per use (engine/key-family.ts). */
  readonly #headed: HeadedKey;

  private constructor(mint: symbol, key: string, engineKey: string) {
    // The constructor is reachable from any reference (`ref.constructor`): without the mint, a caller could pair a key it shows with any engine key.
    if (mint !== KEY_REF_MINT) throw new ValidationError("a KV key reference is made by the queue from a key, not by calling the constructor of one");
    this.key = key;
    this.#headed = new KeyFamily(engineKey).key("");
    this.#engineKey = this.#headed.key;
  }

  /** The reference of caller key `key`; throws as `validateKvKey` does for a key that is not valid. */
  static of(key: string): KvKeyRef {
    return new KvKeyRef(KEY_REF_MINT, key, keptUserEngineKey(key));
  }

  /** The engine key of reference `ref`, carrying its head (engine/key-family.ts). */
  static headedKeyOf(ref: KvKeyRef): HeadedKey {
    return ref.#headed;
  }

  /** The engine key of `key`, a caller key (looked up, kept from now on, validated when new) or a reference. */
  static engineKeyOf(key: string | KvKeyRef): string {
    if (typeof key === "string") return keptUserEngineKey(key);
    if (key instanceof KvKeyRef) return key.#engineKey;
    // An untyped caller's value (a number, null): refused as a key, not read as a reference.
    validateKvKey(key);
    return keptUserEngineKey(key);
  }
}

/**
 * A caller key prefix checked once, with its engine form: held by a caller
 * that writes a new key under it on every step (a workflow run's history
 * entries), so a key under it is its suffix checked alone and joined to the
 * engine prefix, with no caller key built, prefixed, checked whole or
 * looked up among the kept keys. Made only by `KvKeyPrefixRef.of`.
 */
export class KvKeyPrefixRef {
  readonly prefix: string;
  /** The engine prefix, whose keys the engine's memtable places by its head worked out once (engine/key-family.ts). */
  readonly #family: KeyFamily;
  /** The prefix's UTF-8 length: a suffix may add up to `MAX_KV_KEY_BYTES` less this. */
  readonly #bytes: number;

  private constructor(mint: symbol, prefix: string, enginePrefix: string, bytes: number) {
    if (mint !== KEY_REF_MINT) throw new ValidationError("a KV key prefix reference is made by the queue from a prefix, not by calling the constructor of one");
    this.prefix = prefix;
    this.#family = new KeyFamily(enginePrefix);
    this.#bytes = bytes;
  }

  /** The reference of caller key prefix `prefix`; throws as `validateKvPrefix` does for a prefix that is not valid. */
  static of(prefix: string): KvKeyPrefixRef {
    validateKvPrefix(prefix);
    return new KvKeyPrefixRef(KEY_REF_MINT, prefix, userKey(prefix), utf8Length(prefix));
  }

  /**
   * The engine key of caller key `prefix + suffix`; throws as `validateKvKey`
   * does for a key that is not valid. Two well-formed strings join into a
   * well-formed one, so only the suffix is read.
   */
  static engineKeyUnder(ref: KvKeyPrefixRef, suffix: string): HeadedKey {
    if (
      typeof suffix !== "string" ||
      (ref.#bytes === 0 && suffix.length === 0) ||
      !isWellFormed(suffix) ||
      utf8Exceeds(suffix, MAX_KV_KEY_BYTES - ref.#bytes)
    ) {
      validateKvKey(typeof suffix === "string" ? ref.prefix + suffix : suffix);
    }
    return ref.#family.key(suffix);
  }
}
