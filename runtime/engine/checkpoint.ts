/**
 * @module Checkpoints: write sorted segments (the whole state, or only the
 * keys changed since the previous checkpoint as a new run), publish a
 * manifest that lists them and the WAL sequence they cover, then delete what
 * that manifest made obsolete.
 *
 * Order matters for crash safety: segments first (unreferenced until the
 * manifest exists), then the manifest (put-if-absent, so a fenced writer can
 * never publish one), then deletions. A crash between steps leaves only
 * unreferenced objects, which a later checkpoint's listing removes.
 */
import { ClosedError, FencedError, StoreCorruptedError } from "../errors.js";
import { manifestKey, parseNumberedKey, parseSegmentEpoch, segmentKey } from "./layout.js";
import { decodeManifest, encodeManifest, type Manifest, type SegmentRef } from "./manifest.js";
import type { StoreContext } from "./recovery.js";
import { SegmentBuilder, type SegmentBlockInfo } from "./segment-format.js";
import type { ByteWriter } from "./byte-io.js";
import { heldValue, isPaged, type StoredValue } from "./paged-value.js";
import { keepsAsItIs, lendBody, putBodyReleased } from "../store/put-body.js";
import { SpareBuffers } from "./spare-buffers.js";
import { SnapshotMerge } from "./snapshot-merge.js";
import { SPAN_HELD, SPAN_PAGED, type ValueSpan } from "./key-run.js";
import { TurnPacer } from "./checkpoint-pace.js";
import { withRetries } from "./retry.js";
import { createOnce, forEachLimit, getWithRetries, listKeys, type CreateResult } from "./store-ops.js";

/** Manifests kept behind the newest, so readers mid-load can still finish. */
const KEEP_MANIFESTS = 2;
/**
 * Entries encoded between reads of the clock; the slices of encoding
 * between yields to the event loop are a `TurnPacer`'s (checkpoint-pace.ts).
 */
const CHECK_EVERY = 64;

/**
 * Buffers of segments already stored, for the next segment to write into:
 * a segment buffer (a whole segment and its index, 4.25 MiB by default) is
 * otherwise allocated per segment and, having lived through the segment's
 * encoding and its put, dies in the old generation, where it waits for a
 * mark-compact (a 1M-job fill wrote about 150 of them). Kept are buffers
 * put to a store done with a put's body once it settles (see
 * store/put-body.ts), and those of segments too small to hand over as they
 * are (copied for the put instead); any other store was handed the
 * segment's buffer for good, and may keep it as the object (`MemoryStore`
 * does). Shared by the engines of the process; at most two are kept.
 */
const spareBodies = new SpareBuffers<ByteWriter>(2, (w) => w.capacity);
/** Key section buffers, which never reach a put (`finish` copies the section into the segment): kept whatever the store. */
const spareKeys = new SpareBuffers<ByteWriter>(2, (w) => w.capacity);

/** What a checkpoint needs from the engine writing it. */
export interface CheckpointWriter extends StoreContext {
  epoch: number;
  maxSegmentBytes: number;
  blockBytes: number;
  /** A fresh segment number for this writer epoch. */
  nextSegmentNumber(): number;
  /** True once the engine failed; the checkpoint then stops early. */
  stopped(): boolean;
}

/**
 * Reads a value the writer paged out to segment run `run` (see value-pager.ts). The bytes it
 * answers may be a view of a buffer the reader reads into again later: copy them before the call after the next one.
 */
export type PagedReader = (key: string, run: number) => Uint8Array | Promise<Uint8Array>;

/**
 * Writes `entries` (ascending keys, never mutated meanwhile; `null` writes a
 * tombstone; a number is a value paged out to that run, read through
 * `readPaged`; a packed value is unpacked) as segments of run `run` and returns their references;
 * `onSegment` hears each segment's block index once it is stored.
 */
export async function writeSegments(
  w: CheckpointWriter,
  entries: Iterable<[string, StoredValue | null]> | AsyncIterable<[string, StoredValue | null]>,
  run: number,
  readPaged?: PagedReader,
  onSegment?: (name: string, blocks: readonly SegmentBlockInfo[]) => void,
): Promise<SegmentRef[]> {
  const refs: SegmentRef[] = [];
  // Room for a full segment plus its index up front: growing a buffer of
  // many MiB by doubling copies it in one go, a pause no slice bounds.
  const capacity = w.maxSegmentBytes + Math.max(256 * 1024, w.blockBytes * 2);
  const newBuilder = () => new SegmentBuilder(w.blockBytes, capacity, {}, { body: spareBodies.take(capacity), keys: spareKeys.take(0) });
  // Made at the first entry of each segment, so none is made after the last one.
  let builder: SegmentBuilder | undefined;
  const flush = async () => {
    const b = builder;
    if (b === undefined || b.entries === 0) return;
    const n = w.nextSegmentNumber();
    const key = segmentKey(w.prefix, w.epoch, n);
    const { body, keys } = b.buffers;
    const released = putBodyReleased(w.store);
    let bytes = b.finish();
    if (keys !== undefined) spareKeys.give(keys);
    // A store that keeps what it is given gets a small segment as a copy of its own: the builder's buffer, sized for
    // a whole segment, then never reaches a put and is kept for the next segment.
    const copied = !released && !keepsAsItIs(bytes);
    if (copied) bytes = Buffer.from(bytes);
    // Never written over before its put settled, then only for a store done with it (see store/put-body.ts).
    lendBody(bytes);
    const res = await createOnce(w.store, key, bytes, w.retry, w.stopped);
    if (!res.created) throw new FencedError(`segment "${key}" already exists; another process is writing with this epoch`);
    if (released || copied) spareBodies.give(body);
    refs.push({
      name: key.slice(w.prefix.length),
      bytes: bytes.length,
      entries: b.entries,
      firstKey: b.firstKey!,
      lastKey: b.lastKey!,
      run,
      sum: b.sum,
    });
    onSegment?.(key.slice(w.prefix.length), b.blocks);
    builder = undefined;
  };
  let sinceCheck = 0;
  const pace = new TurnPacer();
  // One entry: a promise only when it had to wait (a paged value read back, a segment put, a yield).
  const add = (k: string, stored: StoredValue | null): Promise<void> | undefined => {
    let v = stored;
    if (v !== null && !(v instanceof Uint8Array) && !isPaged(v)) v = heldValue(k, v);
    else if (v !== null && isPaged(v)) {
      if (readPaged === undefined) throw new Error(`a checkpoint met a paged value without a reader for it (key ${JSON.stringify(k)})`);
      const read = readPaged(k, v);
      if (!(read instanceof Uint8Array)) return read.then((bytes) => added(k, bytes));
      v = read;
    }
    return added(k, v);
  };
  const added = (k: string, v: Uint8Array | null): Promise<void> | undefined => {
    builder ??= newBuilder();
    builder.add(k, v ?? undefined);
    return afterAdd();
  };
  // After an entry went into the builder: the segment put when it is full, then the pace.
  const afterAdd = (): Promise<void> | undefined => (builder!.byteLength >= w.maxSegmentBytes ? flush().then(() => paced()) : paced());
  const paced = (): Promise<void> | undefined => {
    if (++sinceCheck < CHECK_EVERY) return undefined;
    sinceCheck = 0;
    if (!pace.due()) return undefined;
    return pace.turn().then(() => {
      if (w.stopped()) throw new ClosedError("the engine (the checkpoint stopped before publishing)");
    });
  };
  if (entries instanceof SnapshotMerge) {
    // A full checkpoint: a run's entries go from the run's bytes straight into the segment (see snapshot-merge.ts).
    const span: ValueSpan = { kind: SPAN_HELD, bytes: undefined, at: 0, len: 0 };
    for (let at = entries.step(); at !== SnapshotMerge.END; at = entries.step()) {
      let wait: Promise<void> | undefined;
      if (at === SnapshotMerge.MEMTABLE) wait = add(entries.key, entries.value);
      else {
        const c = entries.cursor!;
        const kind = c.run.valueSpan(c.valueAt, span);
        // The key shares `c.shared` bytes at least with the entry before, from whichever source: that one lies
        // between the cursor's previous key and this one.
        if (kind === SPAN_PAGED) wait = add(c.keyString(), span.len);
        else {
          builder ??= newBuilder();
          if (kind === SPAN_HELD) builder.addBytes(c.keyBuf, 0, c.keyLen, span.bytes, span.at, span.len, c.shared);
          else builder.addBytes(c.keyBuf, 0, c.keyLen, c.keyBuf, c.keyLen - span.len, span.len, c.shared);
          wait = afterAdd();
        }
      }
      if (wait !== undefined) await wait;
    }
  } else if (Symbol.asyncIterator in entries) {
    for await (const [k, stored] of entries) await add(k, stored);
  } else {
    for (const [k, stored] of entries) {
      const wait = add(k, stored);
      if (wait !== undefined) await wait;
    }
  }
  await flush();
  return refs;
}

/**
 * Publishes `next` with put-if-absent. Finding another manifest under that
 * number means a newer writer opened the store: this writer is fenced.
 *
 * So does a manifest numbered above `next` once it landed. Either the put
 * was held (a slow store) while a newer writer claimed the number,
 * published past it and deleted it in its garbage collection (put-if-absent
 * alone misses that): then `next` and the segments `fresh` (store keys this
 * writer wrote for it) are listed by no other manifest and are deleted
 * again before `FencedError`; what those deletes leave, the newer writer's
 * next garbage collection removes (a manifest more than `KEEP_MANIFESTS`
 * behind its own, segments of an older epoch that it does not list). Or
 * `next` landed in time and a newer writer opened on it (this writer was
 * paused between the put landing and its answer): the newer manifests list
 * `fresh`, and deleting them would leave the newest manifest listing
 * missing segments, so nothing is deleted. A manifest with no segments of
 * its own (an open's claim) is deleted only when the newest is more than
 * `KEEP_MANIFESTS` past it: nothing else tells the two cases apart, a
 * claim a newer writer opened on stays (the base of the newer writer's
 * manifests), and that far behind the newer writer's garbage collection
 * deletes it anyway. The listing costs one request
 * per publish, and finds the newer manifest whenever one was deleted to
 * make room: a writer never deletes its newest.
 */
export async function publishManifest(ctx: StoreContext, next: Manifest, stopped?: () => boolean, fresh: readonly string[] = []): Promise<void> {
  await confirmManifest(ctx, next, await putManifest(ctx, next, stopped), fresh);
}

/**
 * The put of `publishManifest`: whether `next` landed, or what holds its
 * number. An error of the store's own put (after retries) is thrown as it
 * is: an open's claim tells a store refusing its writes (`FencedError` from
 * an owner's lease guard) from a number another writer took by it.
 */
export async function putManifest(ctx: StoreContext, next: Manifest, stopped?: () => boolean): Promise<CreateResult> {
  const bytes = encodeManifest(next);
  // Written into by nothing after the put: a store may keep it (see store/put-body.ts).
  lendBody(bytes);
  return createOnce(ctx.store, manifestKey(ctx.prefix, next.id), bytes, ctx.retry, stopped);
}

/** The rest of `publishManifest` after its put `res`: `FencedError` when another writer took the number or published past it. */
export async function confirmManifest(ctx: StoreContext, next: Manifest, res: CreateResult, fresh: readonly string[] = []): Promise<void> {
  const key = manifestKey(ctx.prefix, next.id);
  if (res.created) {
    const later = manifestsPast(ctx.prefix, next.id, await listKeys(ctx.store, `${ctx.prefix}manifest/`, ctx.retry, key));
    // By the length: an empty list's [0] is whatever a prototype holds there.
    if (later.length === 0) return;
    const newer = later[0]!;
    // With no segments of its own (an open's claim), a late landing looks like a newer writer having opened on it: kept
    // until the newest is past what that writer's garbage collection keeps (below the newest, it is never read as such).
    const newest = parseNumberedKey(ctx.prefix, "manifest", later[later.length - 1]!)!;
    if (fresh.length === 0 && newest <= next.id + KEEP_MANIFESTS) {
      throw new FencedError(`another process published "${newer}" after manifest "${key}": a newer writer opened the store`);
    }
    if (await takenOver(ctx, later, fresh)) {
      throw new FencedError(`another process opened the store on manifest "${key}" and published "${newer}": a newer writer opened the store`);
    }
    await withdraw(ctx, key, fresh);
    throw new FencedError(`manifest "${key}" landed after another process had published "${newer}": a newer writer opened the store`);
  }
  let detail = "it vanished when read";
  if (res.existing !== null) {
    try {
      detail = `it has writer epoch ${decodeManifest(key, res.existing, next.id).epoch}, this writer has ${next.epoch}`;
    } catch (err) {
      if (!(err instanceof StoreCorruptedError)) throw err;
      detail = "it is unreadable";
    }
  }
  throw new FencedError(`manifest "${key}" was written by another process (${detail})`);
}

/**
 * The manifest keys among `keys` numbered past `id`, by number. A listing is
 * meant to be in key order, but one that is not (a proxy merging pages, a
 * replica) must not make its last key pass for the newest manifest: a late
 * claim far behind it would then stay instead of being withdrawn. Reached
 * only when a manifest landed after a newer one, so the sort costs nothing
 * on a checkpoint's usual path.
 */
function manifestsPast(prefix: string, id: number, keys: readonly string[]): string[] {
  const numbered = new Map<number, string>();
  for (const k of keys) {
    const n = parseNumberedKey(prefix, "manifest", k);
    if (n !== undefined && n > id) numbered.set(n, k);
  }
  return [...numbered.keys()].sort((a, b) => a - b).map((n) => numbered.get(n)!);
}

/**
 * Whether a manifest among `later` (keys of manifests numbered after this
 * writer's) lists one of the segments `fresh` it wrote for its own: then a
 * newer writer opened on that manifest. One that cannot be read, or that
 * vanished since the listing, counts as listing them: leaving objects
 * behind is what the newer writer's garbage collection mends, deleting ones
 * it needs is not.
 */
async function takenOver(ctx: StoreContext, later: readonly string[], fresh: readonly string[]): Promise<boolean> {
  if (fresh.length === 0) return false;
  const mine = new Set(fresh);
  for (const key of later) {
    let bytes: Uint8Array | null;
    try {
      bytes = await getWithRetries(ctx.store, key, ctx.retry);
    } catch {
      return true;
    }
    // Deleted since the listing: newer ones were published since, which the listing does not show.
    if (bytes === null) return true;
    let listed: readonly SegmentRef[];
    try {
      listed = decodeManifest(key, bytes, parseNumberedKey(ctx.prefix, "manifest", key)!).segments;
    } catch {
      return true;
    }
    if (listed.some((seg) => mine.has(ctx.prefix + seg.name))) return true;
  }
  return false;
}

/**
 * Deletes a manifest that landed after this writer was fenced, then (once
 * it is gone, so no manifest lists a missing segment) the segments written
 * for it. Failures are left to the newer writer's garbage collection.
 */
async function withdraw(ctx: StoreContext, manifest: string, segments: readonly string[]): Promise<void> {
  try {
    await withRetries(ctx.retry, "delete", manifest, () => ctx.store.delete(manifest));
  } catch {
    return;
  }
  await forEachLimit(segments, 8, async (key) => {
    await withRetries(ctx.retry, "delete", key, () => ctx.store.delete(key)).catch(() => {});
  });
}

/**
 * Deletes what `current` made obsolete: segments of this or older epochs it
 * does not list and `keep` does not claim (the writer's newest manifest and
 * checkpoints still writing; asked when listing and before each delete), WAL objects below its `walNext` except fence markers, and
 * manifests more than `KEEP_MANIFESTS` behind it. Failures are left for the
 * next checkpoint, whose listing finds the same objects again.
 *
 * The first WAL object `previous` replays from goes first, alone, and the
 * rest only once it is gone: should `current` ever be deleted, recovery from
 * `previous` then either replays the whole WAL again (nothing deleted yet)
 * or finds that object missing next to segments no manifest lists, and
 * refuses (see `findUnexplained`) instead of stopping early in silence.
 */
export async function collectGarbage(
  w: CheckpointWriter,
  current: Manifest,
  previous?: Manifest,
  keep?: (segmentKey: string) => boolean,
): Promise<{ deleted: number; failed: number }> {
  const doomed: string[] = [];
  const live = new Set(current.segments.map((s) => w.prefix + s.name));
  for (const key of await listKeys(w.store, `${w.prefix}seg/`, w.retry)) {
    const epoch = parseSegmentEpoch(w.prefix, key);
    // Segments of newer epochs belong to a writer that fenced this one.
    if (epoch !== undefined && epoch <= w.epoch && !live.has(key) && keep?.(key) !== true) doomed.push(key);
  }
  const fences = new Set(current.fences);
  let first: string | undefined;
  for (const key of await listKeys(w.store, `${w.prefix}wal/`, w.retry)) {
    const seq = parseNumberedKey(w.prefix, "wal", key);
    // Not a break at the first one past: a listing out of key order may list older objects after it.
    if (seq === undefined || seq >= current.walNext) continue;
    if (fences.has(seq)) continue;
    if (first === undefined && previous !== undefined && seq >= previous.walNext) first = key;
    else doomed.push(key);
  }
  for (const key of await listKeys(w.store, `${w.prefix}manifest/`, w.retry)) {
    const id = parseNumberedKey(w.prefix, "manifest", key);
    if (id !== undefined && id < current.id - KEEP_MANIFESTS) doomed.push(key);
  }
  if (first !== undefined) {
    if (w.stopped()) return { deleted: 0, failed: 0 };
    try {
      await withRetries(w.retry, "delete", first, () => w.store.delete(first), w.stopped);
    } catch {
      // Nothing else goes either: the next checkpoint tries again in the same order.
      return { deleted: 0, failed: doomed.length + 1 };
    }
  }
  let failed = 0;
  await forEachLimit(doomed, 8, async (key) => {
    if (w.stopped()) return;
    // Asked again just before the delete: a manifest published since the listing may list the segment.
    if (keep?.(key) === true) return;
    try {
      await withRetries(w.retry, "delete", key, () => w.store.delete(key), w.stopped);
    } catch {
      failed++;
    }
  });
  return { deleted: doomed.length - failed + (first === undefined ? 0 : 1), failed };
}
