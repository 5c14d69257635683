/**
 * @module The run result records this process just read or wrote, each
 * handed over once, so the end of a run costs one store read where it is
 * asked for twice in a row (`wait`, then `outcome`; or a wait in the process
 * whose worker wrote it). A record is immutable under its key (each
 * terminating settlement writes under its own token), so a hit is the
 * stored value; an entry answers once, so a later read goes to the store
 * again and sees a record removed or damaged since. Entries are bounded in
 * count, bytes and age, and a clear of the run's memo drops them.
 */
import { copyBytes } from "../../bytes.js";

/** Records kept at once. */
export const OUTCOME_CACHE_ENTRIES = 256;
/** Encoded bytes kept at once; a larger record is not kept. */
export const OUTCOME_CACHE_BYTES = 4 * 1024 * 1024;
/** How long an entry answers: bounds how long a removal by another process can go unseen here. */
export const OUTCOME_CACHE_TTL_MS = 10_000;

interface Entry {
  readonly bytes: Uint8Array;
  readonly atMs: number;
}

/** @internal A bounded map from a run result record's object key to its encoded bytes, least recently used out first. */
export class OutcomeCache {
  readonly #entries = new Map<string, Entry>();
  #bytes = 0;
  readonly #now: () => number;

  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  /** The bytes kept for `key`, handed over once (the entry is dropped), or `undefined`. */
  take(key: string): Uint8Array | undefined {
    const e = this.#entries.get(key);
    if (e === undefined) return undefined;
    this.#drop(key, e);
    return this.#now() - e.atMs > OUTCOME_CACHE_TTL_MS ? undefined : e.bytes;
  }

  /** Keeps a copy of `bytes` for `key` (not when larger than the byte bound). */
  set(key: string, bytes: Uint8Array): void {
    const old = this.#entries.get(key);
    if (old !== undefined) this.#drop(key, old);
    if (bytes.byteLength > OUTCOME_CACHE_BYTES) return;
    this.#entries.set(key, { bytes: copyBytes(bytes), atMs: this.#now() });
    this.#bytes += bytes.byteLength;
    for (const [k, e] of this.#entries) {
      if (this.#entries.size <= OUTCOME_CACHE_ENTRIES && this.#bytes <= OUTCOME_CACHE_BYTES) break;
      this.#drop(k, e);
    }
  }

  /** Drops every entry whose key starts with `prefix` (a run's memo root, when it is cleared). */
  dropUnder(prefix: string): void {
    for (const [k, e] of this.#entries) if (k.startsWith(prefix)) this.#drop(k, e);
  }

  /** How many entries are kept (for tests). */
  get size(): number {
    return this.#entries.size;
  }

  #drop(key: string, e: Entry): void {
    this.#entries.delete(key);
    this.#bytes -= e.bytes.byteLength;
  }
}
