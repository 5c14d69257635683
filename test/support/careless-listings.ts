/**
 * @module A store whose listings disregard the prefix, the key to start
 * after, or both, and answer every key from the store's first: for the
 * tests of what a caller does with keys it did not ask for.
 */
import type { ListedObject, ListOptions, ObjectStore } from "taquba";
import { ForwardingStore } from "./forwarding-store.js";

export type Disregard = "prefix" | "startAfter" | "both";

/** `inner` whose every listing disregards what `disregard` names. */
export class CarelessListings extends ForwardingStore {
  constructor(
    inner: ObjectStore,
    readonly disregard: Disregard,
  ) {
    super(inner);
  }

  override list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    const prefixKept = this.disregard === "startAfter";
    const startKept = this.disregard === "prefix";
    return this.inner.list(prefixKept ? prefix : "", startKept ? opts : {});
  }
}

/** `inner` whose every listing answers all its keys in order, whatever prefix and start-after were asked. */
export function listingEverything(inner: ObjectStore): ObjectStore {
  return new CarelessListings(inner, "both");
}
