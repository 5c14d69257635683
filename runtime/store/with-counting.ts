/**
 * @module A wrapper that counts store requests and bytes by operation, so
 * tests and benchmarks can report what a workload costs in S3 requests.
 */
import { checkStore } from "./store-check.js";
import type { ListOptions, ListedObject, ObjectStore, PutOptions, StoredObject } from "./object-store.js";
import { passPutMarks } from "./pass-put-marks.js";

/** Requests and bytes seen by a `withCounting` store since creation or `reset()`. */
export interface StoreCounts {
  gets: number;
  puts: number;
  deletes: number;
  /** Listings started (not pages). */
  lists: number;
  /** Bytes sent by puts, including puts that failed. */
  bytesIn: number;
  /** Bytes returned by gets. */
  bytesOut: number;
}

/** A store that counts its traffic; see `withCounting`. */
export interface CountingStore extends ObjectStore {
  /** Live counters; read them at any time. */
  readonly counts: Readonly<StoreCounts>;
  /** Sets every counter back to 0. */
  reset(): void;
}

/**
 * Wraps `store`, counting each call when it is made and each returned byte when it arrives.
 *
 * @example
 * const store = withCounting(new MemoryStore());
 * const queue = await Queue.open(store, "q");
 * store.reset();
 * await queue.enqueue("jobs", new Uint8Array(8));
 * console.log(store.counts.puts); // WAL objects written for the enqueue
 */
export function withCounting(store: ObjectStore): CountingStore {
  checkStore("withCounting", store);
  const counts: StoreCounts = { gets: 0, puts: 0, deletes: 0, lists: 0, bytesIn: 0, bytesOut: 0 };
  const wrapped: CountingStore = {
    counts,
    reset() {
      counts.gets = counts.puts = counts.deletes = counts.lists = counts.bytesIn = counts.bytesOut = 0;
    },
    async get(key: string): Promise<StoredObject | null> {
      counts.gets++;
      const found = await store.get(key);
      if (found) counts.bytesOut += found.body.byteLength;
      return found;
    },
    ...(store.getBorrowed === undefined
      ? {}
      : {
          async getBorrowed(key: string): Promise<StoredObject | null> {
            counts.gets++;
            const found = await store.getBorrowed!(key);
            if (found) counts.bytesOut += found.body.byteLength;
            return found;
          },
        }),
    ...(store.getRange === undefined
      ? {}
      : {
          async getRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
            counts.gets++;
            const found = await store.getRange!(key, offset, length);
            if (found) counts.bytesOut += found.byteLength;
            return found;
          },
        }),
    ...(store.getRangeInto === undefined
      ? {}
      : {
          async getRangeInto(key: string, offset: number, into: Uint8Array): Promise<number | null> {
            counts.gets++;
            const n = await store.getRangeInto!(key, offset, into);
            if (n !== null) counts.bytesOut += n;
            return n;
          },
        }),
    async put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
      counts.puts++;
      counts.bytesIn += body.byteLength;
      return store.put(key, body, opts);
    },
    async delete(key: string): Promise<void> {
      counts.deletes++;
      return store.delete(key);
    },
    list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
      counts.lists++;
      return store.list(prefix, opts);
    },
    removeLeftovers(prefix: string): Promise<number> {
      return store.removeLeftovers?.(prefix) ?? Promise.resolve(0);
    },
  };
  passPutMarks(store, wrapped);
  return wrapped;
}
