/**
 * @module Change notification for a key prefix of a local directory store
 * (`fs.watch`), so the inbox owner and waiting clients react to a new
 * object at once instead of at their next listing. Other stores (S3, or a
 * store behind a wrapper) have no notification: callers poll.
 */
import { mkdirSync, watch, type FSWatcher } from "node:fs";
import { LocalStore } from "../store/local-store.js";
import type { ObjectStore } from "../store/object-store.js";
import { PrefixedStore } from "../queue/prefixed-store.js";

/** The directory of `prefix` when `store` is a local directory (seen through prefixes), else undefined. */
export function localDirectory(store: ObjectStore, prefix: string): string | undefined {
  let s: ObjectStore = store;
  let p = prefix;
  while (s instanceof PrefixedStore) {
    p = s.prefix + p;
    s = s.inner;
  }
  return s instanceof LocalStore ? s.directoryOf(p) : undefined;
}

/**
 * Calls `onChange` whenever something under `prefix` changes, when the
 * platform can tell; returns the function that stops watching, or
 * undefined when there is no notification (the caller then polls). Events
 * may be coalesced or, rarely, missed: callers keep a slow poll as well.
 */
export function watchPrefix(store: ObjectStore, prefix: string, onChange: () => void): (() => void) | undefined {
  const dir = localDirectory(store, prefix);
  if (dir === undefined) return undefined;
  let watcher: FSWatcher;
  try {
    // The directory must exist to be watched; an empty one is harmless to the store.
    mkdirSync(dir, { recursive: true });
    watcher = watch(dir, { recursive: true, persistent: false }, () => onChange());
  } catch {
    return undefined;
  }
  // A watch that breaks (the directory removed, too many watches) leaves the caller's poll.
  watcher.on("error", () => watcher.close());
  return () => watcher.close();
}
