/** @module A store that runs a caller's hook ahead of each read, to act at the moment a layer above reads a key. */
import type { StoredObject } from "taquba";
import { ForwardingStore } from "./forwarding-store.js";

/** Runs `before(key)` ahead of a read of `key` while it is set. */
export class HookedReads extends ForwardingStore {
  before: ((key: string) => Promise<void>) | undefined;

  override async get(key: string): Promise<StoredObject | null> {
    await this.before?.(key);
    return this.inner.get(key);
  }
}
