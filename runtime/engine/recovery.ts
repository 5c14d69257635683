/**
 * @module Loading state from a store: the newest manifest, its segments and
 * the WAL replay after it. Shared by the writer's open and by readers.
 *
 * WAL replay walks sequence numbers from the manifest's `walNext` and stops
 * at the first missing one: a commit is acknowledged only once its object
 * and every earlier one are stored, so nothing past a gap was acknowledged.
 * A fence marker sends the walk to its resume sequence; objects in between
 * are late puts of a fenced writer and are never replayed. An object whose
 * epoch is below one already replayed is also skipped, defensively.
 */
import { StoreCorruptedError, StoreUnavailableError } from "../errors.js";
import { compareKeys } from "../store/keys.js";
import type { ObjectStore } from "../store/object-store.js";
import { manifestKey, parseNumberedKey, walKey } from "./layout.js";
import { decodeManifest, emptyManifest, segmentRuns, type Manifest, type SegmentRef } from "./manifest.js";
import type { RetryPolicy } from "./retry.js";
import { readSegment } from "./segment-format.js";
import { newSortedMap, sortedMapFromSorted, type DeltaMap, type SortedMap } from "./sorted-map.js";
import { forEachLimit, getWithRetries, listKeys } from "./store-ops.js";
import { decodeWal, type WalObject } from "./wal-format.js";
import type { BatchOp } from "./write-batch.js";

/** The store an engine reads and writes, where in it, and how it retries. */
export interface StoreContext {
  store: ObjectStore;
  /** Key prefix of every engine object ("" or ending in "/"). */
  prefix: string;
  retry: RetryPolicy;
}

const PREFETCH = 64;

/** The newest manifest, or the empty manifest of a fresh store. */
export async function readNewestManifest(ctx: StoreContext, after = -1): Promise<Manifest | undefined> {
  for (let attempt = 0; attempt < 8; attempt++) {
    const head = `${ctx.prefix}manifest/`;
    const keys = await listKeys(ctx.store, head, ctx.retry, after >= 0 ? manifestKey(ctx.prefix, after) : undefined);
    let newest = -1;
    for (const k of keys) newest = Math.max(newest, parseNumberedKey(ctx.prefix, "manifest", k) ?? -1);
    if (newest < 0) return after >= 0 ? undefined : emptyManifest();
    const key = manifestKey(ctx.prefix, newest);
    const bytes = await getWithRetries(ctx.store, key, ctx.retry);
    // Deleted between list and get: a newer manifest exists, list again.
    if (bytes === null) continue;
    return decodeManifest(key, bytes, newest);
  }
  throw new StoreUnavailableError("read", `${ctx.prefix}manifest/`, new Error("the newest manifest kept disappearing between list and get"));
}

/** One segment's entries in key order; `undefined` values are tombstones. */
interface SegmentPart {
  keys: string[];
  values: (Uint8Array | undefined)[];
}

/**
 * Loads every segment of `manifest` into a new map: the oldest run in bulk,
 * then each newer run on top of it (its puts and tombstones win). Resolves to
 * undefined when a segment is missing: for a reader that means a checkpoint
 * replaced the manifest. Within a run, key ranges must be disjoint and
 * ascending (see manifest.ts).
 */
export async function loadSegments(ctx: StoreContext, manifest: Manifest, onMissing?: (segmentKey: string) => void): Promise<SortedMap | undefined> {
  let missing = false;
  const parts: SegmentPart[] = [];
  await forEachLimit(manifest.segments, 4, async (seg, i) => {
    if (missing) return;
    const key = ctx.prefix + seg.name;
    const bytes = await getWithRetries(ctx.store, key, ctx.retry);
    if (bytes === null) {
      if (!missing) onMissing?.(key);
      missing = true;
      return;
    }
    const part: SegmentPart = { keys: [], values: [] };
    // The oldest run is a snapshot: a tombstone there only says the key is absent.
    const inOldestRun = seg.run === manifest.segments[0]!.run;
    const n = readSegment(key, bytes, (k, v) => {
      if (v === undefined && inOldestRun) return;
      part.keys.push(k);
      part.values.push(v);
    });
    if (n !== seg.entries) throw new StoreCorruptedError(key, `segment holds ${n} entries, the manifest says ${seg.entries}`);
    parts[i] = part;
  });
  if (missing) return undefined;
  let tree: SortedMap | undefined;
  let i = 0;
  for (const run of segmentRuns(manifest)) {
    const { keys, values } = run.length === 1 ? parts[i++]! : concatRun(ctx, run, parts.slice(i, (i += run.length)));
    if (tree === undefined) {
      // Tombstones of the oldest run were dropped while reading.
      tree = sortedMapFromSorted(keys, values as Uint8Array[]);
    } else {
      for (let j = 0; j < keys.length; j++) {
        const v = values[j];
        if (v === undefined) tree.delete(keys[j]!);
        else tree.set(keys[j]!, v);
      }
    }
  }
  return tree ?? newSortedMap();
}

/** The parts of one run's segments as one ascending list, checking that their ranges do not overlap. */
function concatRun(ctx: StoreContext, run: readonly SegmentRef[], parts: readonly SegmentPart[]): SegmentPart {
  const out: SegmentPart = { keys: [], values: [] };
  parts.forEach((part, n) => {
    const { keys, values } = out;
    if (keys.length > 0 && part.keys.length > 0 && compareKeys(keys[keys.length - 1]!, part.keys[0]!) >= 0) {
      throw new StoreCorruptedError(ctx.prefix + run[n]!.name, "segment key range overlaps the previous segment of its run");
    }
    for (let j = 0; j < part.keys.length; j++) {
      keys.push(part.keys[j]!);
      values.push(part.values[j]);
    }
  });
  return out;
}

/** How far a WAL replay got, and what it passed on the way. */
export interface WalWalk {
  /** The next sequence number to read. */
  pos: number;
  /** Highest epoch replayed so far. */
  maxEpoch: number;
  /** Fence markers passed. */
  fences: number[];
  /** Objects and bytes replayed. */
  objects: number;
  bytes: number;
  /** A listed object was gone when read (a checkpoint deleted it). */
  vanished: boolean;
}

/**
 * Replays the WAL from `walk.pos` to the first gap, calling `apply` per batch
 * in order. Every object is verified before any batch of it is applied.
 */
export async function walkWal(ctx: StoreContext, walk: WalWalk, apply: (ops: BatchOp[]) => void): Promise<WalWalk> {
  const keys = await listKeys(ctx.store, `${ctx.prefix}wal/`, ctx.retry, walKey(ctx.prefix, walk.pos - 1));
  const seqs: number[] = [];
  for (const k of keys) {
    const s = parseNumberedKey(ctx.prefix, "wal", k);
    if (s !== undefined) seqs.push(s);
  }
  const fetches: Promise<Uint8Array | null>[] = [];
  const fetch = (i: number): Promise<Uint8Array | null> => {
    while (fetches.length < Math.min(seqs.length, i + PREFETCH)) {
      const p = getWithRetries(ctx.store, walKey(ctx.prefix, seqs[fetches.length]!), ctx.retry);
      p.catch(() => {});
      fetches.push(p);
    }
    return fetches[i]!;
  };
  for (let i = 0; i < seqs.length; i++) {
    const seq = seqs[i]!;
    if (seq < walk.pos) continue; // inside a fence's skipped range
    if (seq > walk.pos) break; // a gap: nothing after it was acknowledged
    const bytes = await fetch(i);
    if (bytes === null) return { ...walk, vanished: true };
    const key = walKey(ctx.prefix, seq);
    const obj = decodeWal(key, bytes, seq);
    walk = applyWalObject(walk, obj, bytes.byteLength, apply);
  }
  return walk;
}

/** Advances a walk over one verified WAL object. */
export function applyWalObject(walk: WalWalk, obj: WalObject, size: number, apply: (ops: BatchOp[]) => void): WalWalk {
  const next = { ...walk, objects: walk.objects + 1, bytes: walk.bytes + size };
  if (obj.kind === "fence") {
    next.fences = [...walk.fences, obj.seq];
    next.maxEpoch = Math.max(walk.maxEpoch, obj.epoch);
    next.pos = obj.resumeAt;
    return next;
  }
  if (obj.epoch >= walk.maxEpoch) {
    for (const ops of obj.batches) apply(ops);
    next.maxEpoch = obj.epoch;
  }
  next.pos = obj.seq + 1;
  return next;
}

/** A walk that has read nothing yet and starts at sequence `pos`. */
export function newWalk(pos: number): WalWalk {
  return { pos, maxEpoch: 0, fences: [], objects: 0, bytes: 0, vanished: false };
}

/**
 * Applies one batch to a tree, in op order, and records each change in
 * `delta` when given (the keys the next incremental checkpoint writes).
 */
export function applyOps(tree: SortedMap, ops: readonly BatchOp[], delta?: DeltaMap): void {
  for (const op of ops) {
    if (op.kind === "put") {
      tree.set(op.key, op.value);
      delta?.set(op.key, op.value);
    } else {
      tree.delete(op.key);
      delta?.set(op.key, null);
    }
  }
}
