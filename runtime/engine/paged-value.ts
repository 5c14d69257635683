/**
 * @module What the writer holds per key when values may be paged out of
 * memory (see value-pager.ts): the types, the policy of which values may
 * leave, and the arena that compacts the small values that stay.
 */
import type { BTree } from "../store/btree.js";

/** A value the writer does not hold: the id of the segment run that stores it. */
export type PagedValue = number;
/** What the writer's state holds per key. */
export type StoredValue = Uint8Array | PagedValue;
/** The writer's state: a value, or where it is paged, by key. */
export type StateMap = BTree<string, StoredValue>;

/** Which values may leave memory once checkpointed. */
export interface PagePolicy {
  /** Only keys starting with one of these. */
  readonly keyPrefixes: readonly string[];
  /** Only values of at least this many bytes (smaller ones cost less than the bookkeeping). */
  readonly minBytes: number;
}

/** Whether `value` of `key` may be paged out under `policy`. */
export function isPageable(policy: PagePolicy, key: string, value: Uint8Array): boolean {
  if (value.byteLength < policy.minBytes) return false;
  for (const p of policy.keyPrefixes) if (key.startsWith(p)) return true;
  return false;
}

/**
 * Thrown by a synchronous read of a paged value that is not cached: the
 * caller did not `warm` the key first. A defect of the caller, never a
 * state of the store; the read changed nothing.
 */
export class ColdReadError extends Error {
  constructor(readonly key: string) {
    super(`the value of an engine key was read without warming it first (key ${JSON.stringify(key)}); this is a defect in taquba, please report it`);
    this.name = "ColdReadError";
  }
}

/**
 * Copies small values into shared chunks, so that they stop holding the
 * large objects (WAL objects, segments) they were views into.
 */
export class ValueArena {
  #chunk = new Uint8Array(0);
  #pos = 0;
  constructor(readonly chunkBytes = 64 * 1024) {}

  copy(v: Uint8Array): Uint8Array {
    if (v.byteLength === 0) return v;
    if (v.byteLength > this.chunkBytes / 4) return v.slice();
    if (this.#pos + v.byteLength > this.#chunk.byteLength) {
      this.#chunk = new Uint8Array(this.chunkBytes);
      this.#pos = 0;
    }
    const out = this.#chunk.subarray(this.#pos, this.#pos + v.byteLength);
    out.set(v);
    this.#pos += v.byteLength;
    return out;
  }
}
