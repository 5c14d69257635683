/**
 * @module An object store in process memory, for tests, benchmarks and
 * throwaway runs. Objects are copied on the way in and out so callers cannot
 * alter stored bytes, except a lent body (store/put-body.ts), which its
 * caller never writes again: it is kept as it is when it fills most of its
 * buffer (a full checkpoint of the engine puts about 34 MB of segments, a
 * copy it no longer pays); and a borrowed read (`getBorrowed`), whose caller
 * never writes into it, answers the kept bytes themselves (the engine's
 * reopen reads its segments so, and no longer copies each).
 *
 * Objects sit in a B+tree ordered like S3 (UTF-8 byte order), so a listing
 * seeks to its start and walks only the keys it yields. Each step looks up
 * the next key after the last one yielded, so puts and deletes during a
 * listing are safe: the listing sees each key at most once, in order.
 */
import { copyBytes } from "../bytes.js";
import { PreconditionFailedError } from "../errors.js";
import { BTree } from "./btree.js";
import { compareKeys, validateObjectKey } from "./keys.js";
import { isLentBody, keepsAsItIs } from "./put-body.js";
import { checkRange, checkRangeInto, type ListOptions, type ListedObject, type ObjectStore, type PutOptions, type StoredObject } from "./object-store.js";
import { declareBuiltInStore } from "./own-state.js";

/**
 * A store held in memory; everything is lost with the process.
 *
 * @example
 * const queue = await Queue.open(new MemoryStore(), "test");
 */
export class MemoryStore implements ObjectStore {
  // Its methods read private fields, so they work only on the store itself: store checks refuse a wrapper that would call them on itself.
  static {
    declareBuiltInStore(MemoryStore.prototype, "MemoryStore", (value) => #objects in value);
  }

  #objects: BTree<string, StoredObject> = new BTree<string, StoredObject>(undefined, compareKeys);
  #version = 0;

  async get(key: string): Promise<StoredObject | null> {
    validateObjectKey(key);
    const found = this.#objects.get(key);
    return found ? { body: copyBytes(found.body), etag: found.etag } : null;
  }

  /** The kept bytes themselves: the caller promised never to write into them (see `ObjectStore.getBorrowed`). */
  async getBorrowed(key: string): Promise<StoredObject | null> {
    validateObjectKey(key);
    const found = this.#objects.get(key);
    return found ? { body: found.body, etag: found.etag } : null;
  }

  async getRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
    validateObjectKey(key);
    checkRange(offset, length);
    const found = this.#objects.get(key);
    return found ? copyBytes(found.body, offset, offset + length) : null;
  }

  async getRangeInto(key: string, offset: number, into: Uint8Array): Promise<number | null> {
    validateObjectKey(key);
    checkRangeInto(offset, into);
    const found = this.#objects.get(key);
    if (!found) return null;
    const part = found.body.subarray(Math.min(offset, found.body.byteLength), Math.min(offset + into.byteLength, found.body.byteLength));
    into.set(part, 0);
    return part.byteLength;
  }

  async put(key: string, body: Uint8Array, opts: PutOptions = {}): Promise<{ etag: string }> {
    validateObjectKey(key);
    if (opts.ifNoneMatch === "*" && this.#objects.has(key)) throw new PreconditionFailedError(key);
    const etag = `"m${++this.#version}"`;
    this.#objects.set(key, { body: keptBody(body), etag });
    return { etag };
  }

  async delete(key: string): Promise<void> {
    validateObjectKey(key);
    this.#objects.delete(key);
  }

  async *list(prefix: string, opts: ListOptions = {}): AsyncIterable<ListedObject> {
    const startAfter = opts.startAfter;
    let pair =
      startAfter !== undefined && compareKeys(startAfter, prefix) >= 0 ? this.#objects.nextHigherPair(startAfter) : this.#objects.getPairOrNextHigher(prefix);
    // Keys sharing a prefix are contiguous in byte order: stop at the first that does not.
    while (pair?.[0].startsWith(prefix)) {
      const [key, object] = pair;
      yield { key, size: object.body.byteLength };
      pair = this.#objects.nextHigherPair(key);
    }
  }

  /** Number of objects held; tests use it to check that cleanup keeps the store bounded. */
  get size(): number {
    return this.#objects.size;
  }
}

/**
 * What a put keeps of `body`: a lent one as it is (its caller, seeing this
 * store not declared done with bodies, never writes it again) when it fills
 * most of its buffer (`keepsAsItIs`), else a copy.
 */
function keptBody(body: Uint8Array): Uint8Array {
  return isLentBody(body) && keepsAsItIs(body) ? body : copyBytes(body);
}
