/**
 * @module A test store wrapper whose segment puts take several turns of the
 * event loop (no timers): a checkpoint that writes many segments, a
 * compaction above all, stays in flight while WAL puts land and later
 * checkpoints start, so compactions and incremental checkpoints overlap.
 */
import type { ListOptions, ListedObject, ObjectStore, PutOptions, StoredObject } from "taquba";

export class SlowSegments implements ObjectStore {
  /** Segment puts made through this wrapper. */
  segmentPuts = 0;

  constructor(
    readonly inner: ObjectStore,
    readonly turnsPerPut = 8,
  ) {}

  get(key: string): Promise<StoredObject | null> {
    return this.inner.get(key);
  }

  getRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
    if (this.inner.getRange !== undefined) return this.inner.getRange(key, offset, length);
    return this.inner.get(key).then((o) => (o === null ? null : o.body.subarray(offset, offset + length)));
  }

  async put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    if (key.includes("seg/")) {
      this.segmentPuts++;
      for (let i = 0; i < this.turnsPerPut; i++) await new Promise<void>((r) => setImmediate(r));
    }
    return this.inner.put(key, body, opts);
  }

  delete(key: string): Promise<void> {
    return this.inner.delete(key);
  }

  list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    return this.inner.list(prefix, opts);
  }
}
