/**
 * @module Writes recorded in the order they landed, and the store a crash
 * after the first n of them leaves: the crash-image tests replay each
 * prefix over a copy of the store they started from.
 */
import { MemoryStore, type PutOptions } from "taquba";
import { ForwardingStore } from "./forwarding-store.js";

/** One write that landed: a put's bytes, or undefined for a delete. */
export type LandedWrite = { key: string; body: Uint8Array | undefined };

/** Records every write that landed, in landing order; `beforePut` may delay or fail a put before it lands. */
export class LandedWritesStore extends ForwardingStore {
  readonly writes: LandedWrite[] = [];

  protected async beforePut(_key: string): Promise<void> {}

  override async put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    await this.beforePut(key);
    const out = await this.inner.put(key, body, opts);
    this.writes.push({ key, body: body.slice() });
    return out;
  }

  override async delete(key: string): Promise<void> {
    await this.inner.delete(key);
    this.writes.push({ key, body: undefined });
  }
}

/** A new store holding `base`'s objects (none when not given) with `writes` applied after, in order. */
export async function storeAfter(writes: readonly LandedWrite[], base?: MemoryStore): Promise<MemoryStore> {
  const copy = new MemoryStore();
  if (base !== undefined) for await (const { key } of base.list("")) await copy.put(key, (await base.get(key))!.body.slice());
  for (const w of writes) {
    if (w.body === undefined) await copy.delete(w.key);
    else await copy.put(w.key, w.body);
  }
  return copy;
}
