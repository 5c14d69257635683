/**
 * @module Drops the leading entries of an ordered listing up to and
 * including a key, for services whose list calls have no start-after.
 */
import type { ListedObject } from "./object-store.js";

/** Yields the entries of `listing` (in UTF-8 order) whose keys sort after `startAfter`'s UTF-8 bytes. */
export async function* skipThrough(listing: AsyncIterable<ListedObject>, startAfter: Uint8Array): AsyncIterable<ListedObject> {
  let past = false;
  for await (const entry of listing) {
    if (!past && Buffer.compare(Buffer.from(entry.key, "utf8"), startAfter) <= 0) continue;
    past = true;
    yield entry;
  }
}
