/**
 * @module An object store in process memory, for tests, benchmarks and
 * throwaway runs. Objects are copied on the way in and out so callers cannot
 * alter stored bytes.
 */
import { PreconditionFailedError } from "../errors.js";
import { compareKeys, validateObjectKey } from "./keys.js";
import type { ListOptions, ListedObject, ObjectStore, PutOptions, StoredObject } from "./object-store.js";

export class MemoryStore implements ObjectStore {
  #objects = new Map<string, StoredObject>();
  #version = 0;

  async get(key: string): Promise<StoredObject | null> {
    validateObjectKey(key);
    const found = this.#objects.get(key);
    return found ? { body: found.body.slice(), etag: found.etag } : null;
  }

  async put(key: string, body: Uint8Array, opts: PutOptions = {}): Promise<{ etag: string }> {
    validateObjectKey(key);
    if (opts.ifNoneMatch === "*" && this.#objects.has(key)) throw new PreconditionFailedError(key);
    const etag = `"m${++this.#version}"`;
    this.#objects.set(key, { body: body.slice(), etag });
    return { etag };
  }

  async delete(key: string): Promise<void> {
    validateObjectKey(key);
    this.#objects.delete(key);
  }

  async *list(prefix: string, opts: ListOptions = {}): AsyncIterable<ListedObject> {
    const keys = [...this.#objects.keys()]
      .filter((k) => k.startsWith(prefix) && (opts.startAfter === undefined || compareKeys(k, opts.startAfter) > 0))
      .sort(compareKeys);
    for (const key of keys) {
      const found = this.#objects.get(key);
      if (found) yield { key, size: found.body.byteLength };
    }
  }

  /** Number of objects held; tests use it to check that cleanup keeps the store bounded. */
  get size(): number {
    return this.#objects.size;
  }
}
