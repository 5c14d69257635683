/**
 * @module A queue over a store whose listings ignore the prefix (list every
 * key of the store, other store names' among them): the queue's view of
 * its own folder leaves the others out, so it opens, reopens and keeps its
 * jobs instead of taking another store name's objects for its own and
 * refusing the store as corrupt.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue, type ListedObject, type ListOptions, type ObjectStore } from "taquba";

/** `inner` whose listings start at the store's first key, whatever the prefix. */
function ignoringPrefix(inner: MemoryStore): ObjectStore {
  return {
    get: (k) => inner.get(k),
    put: (...args) => inner.put(...args),
    delete: (k) => inner.delete(k),
    list: (_prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> => inner.list("", opts),
  };
}

describe("a queue over a store whose listings ignore the prefix", () => {
  it("opens beside other store names' queues, reopens and keeps its jobs", async () => {
    const inner = new MemoryStore();
    const store = ignoringPrefix(inner);
    // Store names sorting before and after this one's, each with a queue written.
    for (const name of ["a", "z"]) {
      const other = await Queue.open(inner, name, { flushIntervalMs: 0 });
      await other.enqueue("jobs", new Uint8Array([1]));
      await other.close();
    }
    const queue = await Queue.open(store, "m", { flushIntervalMs: 0 });
    await queue.enqueue("jobs", new Uint8Array([7]));
    await queue.close();
    const reopened = await Queue.open(store, "m", { flushIntervalMs: 0 });
    expect(await reopened.view().stats("jobs")).toMatchObject({ pending: 1 });
    const job = await reopened.claim("jobs");
    expect(job?.payload).toEqual(new Uint8Array([7]));
    await reopened.close();
  });
});
