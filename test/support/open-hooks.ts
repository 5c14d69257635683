/**
 * @module Store wrappers that let a test act at one point of an engine's
 * open: before its first listing of a prefix, and once its claim (a manifest
 * put of its own) has landed.
 */
import type { ListedObject, ListOptions, ObjectStore, PutOptions } from "taquba";
import { ForwardingStore } from "./forwarding-store.js";

/** `inner`, whose first listing under `prefix` once `armed()` holds first awaits `before`. */
export class ListHook extends ForwardingStore {
  fired = false;
  constructor(
    inner: ObjectStore,
    readonly prefix: string,
    readonly armed: () => boolean,
    readonly before: () => Promise<void>,
  ) {
    super(inner);
  }

  override async *list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    if (!this.fired && prefix === this.prefix && this.armed()) {
      this.fired = true;
      await this.before();
    }
    yield* this.inner.list(prefix, opts);
  }
}

/** `inner`, noting when a manifest put of its own (an open's claim) has landed. */
export class ClaimNoted extends ForwardingStore {
  claimed = false;
  override async put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    const res = await this.inner.put(key, body, opts);
    if (key.startsWith("manifest/")) this.claimed = true;
    return res;
  }
}
