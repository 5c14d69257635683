/**
 * @module Change notification for key prefixes of a local directory store
 * (`fs.watch`), so the inbox owner and waiting clients react to a new
 * object at once instead of at their next listing. Other stores (S3) have
 * no notification: callers poll.
 *
 * Each prefix is watched alone, not with its subfolders: Node's recursive
 * watch on Linux walks the whole tree and watches every file on each
 * change, which cost waiting clients most of their CPU. A prefix's folder
 * that the store removes once empty (and creates again on the next put) is
 * watched again when its parent folder, also watched, sees it go or come.
 */
import { mkdirSync, watch, type FSWatcher } from "node:fs";
import * as path from "node:path";
import { isTemporaryFile, LocalStore } from "../store/local-store.js";
import { decodeSegment } from "../store/file-names.js";
import type { ObjectStore } from "../store/object-store.js";
import { PrefixedStore } from "../queue/prefixed-store.js";

/** Wrappers that pass every change of their inner store through (a lease guard, a write log): watched as that store. */
const passThrough = new WeakMap<ObjectStore, ObjectStore>();

/**
 * Declares that `wrapper` shows the objects of `inner` unchanged (it may
 * refuse or log writes), so change notification of `inner` serves it.
 * @internal
 */
export function watchThrough(wrapper: ObjectStore, inner: ObjectStore): void {
  passThrough.set(wrapper, inner);
}

/** The directory of `prefix` when `store` is a local directory (seen through prefixes and pass-through wrappers), else undefined. */
export function localDirectory(store: ObjectStore, prefix: string): string | undefined {
  let s: ObjectStore = store;
  let p = prefix;
  for (;;) {
    if (s instanceof PrefixedStore) {
      p = s.prefix + p;
      s = s.inner;
      continue;
    }
    const inner = passThrough.get(s);
    if (inner === undefined) break;
    s = inner;
  }
  return s instanceof LocalStore ? s.directoryOf(p) : undefined;
}

interface Watched {
  readonly dir: string;
  watcher: FSWatcher | undefined;
}

/**
 * Calls `onChange` whenever an object is added, replaced or removed
 * directly under one of `prefixes` (each ending in "/"), when the platform
 * can tell, with the last part of the object's key when known; returns the
 * function that stops watching, or undefined when there is no notification
 * (the caller then polls). Events may be coalesced or, rarely, missed:
 * callers keep a slow poll as well.
 */
export function watchPrefixes(store: ObjectStore, prefixes: readonly string[], onChange: (name: string | undefined) => void): (() => void) | undefined {
  const dirs = prefixes.map((p) => localDirectory(store, p));
  if (dirs.length === 0 || dirs.some((d) => d === undefined)) return undefined;
  const notify = (_event: string, name: string | Buffer | null) => {
    // A put writes a temporary file first: only its rename to the object's name is a change.
    if (typeof name === "string" && isTemporaryFile(name)) return;
    onChange(typeof name === "string" ? (decodeSegment(name) ?? undefined) : undefined);
  };
  const arm = (w: Watched, listener: (event: string, name: string | Buffer | null) => void) => {
    w.watcher?.close();
    w.watcher = undefined;
    try {
      const watcher = watch(w.dir, { persistent: false }, listener);
      // A watch that breaks (too many watches) leaves the caller's poll.
      watcher.on("error", () => {
        watcher.close();
        if (w.watcher === watcher) w.watcher = undefined;
      });
      w.watcher = watcher;
    } catch {
      // The folder is gone: its parent's watch arms it again when it comes back.
    }
  };
  const leaves: Watched[] = [];
  const parents = new Map<string, Watched>();
  const onParent = (_event: string, name: string | Buffer | null) => {
    if (typeof name === "string" && isTemporaryFile(name)) return;
    // A watched folder removed or made again: watch what is there now (a removed one's watch is dead).
    for (const w of leaves) if (name === null || typeof name !== "string" || name === path.basename(w.dir)) arm(w, notify);
    onChange(undefined);
  };
  try {
    // The folders must exist to be watched; empty ones are harmless to the store.
    for (const d of dirs) mkdirSync(d!, { recursive: true });
  } catch {
    return undefined;
  }
  for (const d of new Set(dirs as string[])) {
    const leaf: Watched = { dir: d, watcher: undefined };
    leaves.push(leaf);
    arm(leaf, notify);
    const parent = path.dirname(d);
    if (!parents.has(parent) && !dirs.includes(parent)) {
      const w: Watched = { dir: parent, watcher: undefined };
      parents.set(parent, w);
      arm(w, onParent);
    }
  }
  if (leaves.some((w) => w.watcher === undefined)) {
    for (const w of [...leaves, ...parents.values()]) w.watcher?.close();
    return undefined;
  }
  return () => {
    for (const w of [...leaves, ...parents.values()]) w.watcher?.close();
  };
}
