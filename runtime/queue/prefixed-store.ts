/**
 * @module A view of an object store confined to one key prefix, so that
 * several queues (each with its own engine) can share one bucket.
 */
import { listedUnder } from "../store/listing-pages.js";
import { passPutMarks } from "../store/pass-put-marks.js";
import type { ListOptions, ListedObject, ObjectStore, PutOptions, StoredObject } from "../store/object-store.js";

/** Keys given to the view are stored at `prefix + key`; `prefix` ends with '/'. */
export class PrefixedStore implements ObjectStore {
  constructor(
    readonly inner: ObjectStore,
    readonly prefix: string,
  ) {
    passPutMarks(inner, this);
  }

  get(key: string): Promise<StoredObject | null> {
    return this.inner.get(this.prefix + key);
  }

  get getBorrowed(): ((key: string) => Promise<StoredObject | null>) | undefined {
    const inner = this.inner;
    if (inner.getBorrowed === undefined) return undefined;
    return (key) => inner.getBorrowed!(this.prefix + key);
  }

  get getRange(): ((key: string, offset: number, length: number) => Promise<Uint8Array | null>) | undefined {
    const inner = this.inner;
    if (inner.getRange === undefined) return undefined;
    return (key, offset, length) => inner.getRange!(this.prefix + key, offset, length);
  }

  get getRangeInto(): ((key: string, offset: number, into: Uint8Array) => Promise<number | null>) | undefined {
    const inner = this.inner;
    if (inner.getRangeInto === undefined) return undefined;
    return (key, offset, into) => inner.getRangeInto!(this.prefix + key, offset, into);
  }

  put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    return this.inner.put(this.prefix + key, body, opts);
  }

  delete(key: string): Promise<void> {
    return this.inner.delete(this.prefix + key);
  }

  removeLeftovers(prefix: string): Promise<number> {
    return this.inner.removeLeftovers?.(this.prefix + prefix) ?? Promise.resolve(0);
  }

  async *list(prefix: string, opts: ListOptions = {}): AsyncIterable<ListedObject> {
    const inner = opts.startAfter === undefined ? {} : { startAfter: this.prefix + opts.startAfter };
    for await (const o of listedUnder(this.inner, this.prefix + prefix, inner)) {
      yield { key: o.key.slice(this.prefix.length), size: o.size };
    }
  }
}
