/**
 * @module A store whose listings answer their keys out of key order, or
 * repeat them (a proxy merging pages, a replica answering from two
 * snapshots): for the tests of what the engine does with what it lists.
 */
import type { ListedObject, ListOptions, ObjectStore, PutOptions, StoredObject } from "taquba";

export type Disorder = "reversed" | "each key twice" | "the first two swapped" | "reversed, each key twice";

/** `inner` whose every listing answers its keys in the given disorder. */
export class DisorderedListings implements ObjectStore {
  constructor(
    readonly inner: ObjectStore,
    readonly disorder: Disorder,
  ) {}
  get(key: string): Promise<StoredObject | null> {
    return this.inner.get(key);
  }
  put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    return this.inner.put(key, body, opts);
  }
  delete(key: string): Promise<void> {
    return this.inner.delete(key);
  }
  list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    const { inner, disorder } = this;
    return (async function* () {
      const all: ListedObject[] = [];
      for await (const o of inner.list(prefix, opts)) all.push(o);
      if (disorder.startsWith("reversed")) all.reverse();
      if (disorder === "the first two swapped" && all.length >= 2) [all[0], all[1]] = [all[1]!, all[0]!];
      for (const o of all) {
        yield o;
        if (disorder.endsWith("each key twice")) yield o;
      }
    })();
  }
}
