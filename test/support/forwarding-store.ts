/**
 * @module A store that hands every call to another: the tests' wrapping
 * stores extend it and override only the calls they change.
 */
import type { ListOptions, ListedObject, ObjectStore, PutOptions, StoredObject } from "taquba";

/** Every call goes to `inner` as it is; the optional ranged reads are left out, so readers take whole objects. */
export class ForwardingStore implements ObjectStore {
  constructor(readonly inner: ObjectStore) {}

  put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    return this.inner.put(key, body, opts);
  }

  get(key: string): Promise<StoredObject | null> {
    return this.inner.get(key);
  }

  delete(key: string): Promise<void> {
    return this.inner.delete(key);
  }

  list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    return this.inner.list(prefix, opts);
  }
}
