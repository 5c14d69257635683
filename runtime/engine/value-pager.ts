/**
 * @module Paged values: the writer keeps every key in memory, but a value
 * under one of the policy's key prefixes, once a checkpoint stored it in a
 * segment and no commit changed it since, is replaced in memory by the id
 * of the segment run that holds it (a small integer). Reading it goes
 * through a bounded cache of decoded segment blocks (segment-cache.ts): the
 * segment's block index (from the checkpoint that wrote it, or read by the
 * open) locates the block, and one ranged read fetches it.
 * Misses that walk a segment in order read ahead several blocks per read.
 *
 * Reads stay synchronous: `get` of a paged value that is not cached throws
 * `ValueNotWarmedError`. A transaction first calls `warm(keys)`, awaits it while
 * it returns a promise, and then reads and commits in the same turn; the
 * cache keeps what a warm-up loaded until the next macrotask, so the reads
 * that follow the await find it. Paging never changes what is stored: it
 * only changes what the writer holds in memory.
 */
import { copyBytes } from "../bytes.js";
import { StoreCorruptedError, ValueNotWarmedError } from "../errors.js";
import { compareKeys } from "../store/keys.js";
import type { Manifest, SegmentRef } from "./manifest.js";
import { segmentRuns } from "./manifest.js";
import type { StoreContext } from "./recovery.js";
import { type CachedSegment, SegmentCache, segmentCharge } from "./segment-cache.js";
import { readBlockEntries, type SegmentBlockInfo } from "./segment-format.js";
import { blockWindow, readSegmentRange } from "./segment-reads.js";
import { asBuffer } from "./byte-io.js";
import { isPageable, type PagePolicy } from "./paged-value.js";
import { SpareBuffers } from "./spare-buffers.js";

/**
 * The entry of `cached` whose key has the UTF-8 bytes `t` (see `KeyTarget`):
 * its number (index into `cached.at` over 4), or -1.
 */
function findKey(cached: CachedSegment, t: KeyTarget): number {
  const { block, at } = cached;
  let lo = 0;
  let hi = at.length / 4 - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const c = compareBytes(block, at[4 * mid]!, at[4 * mid + 1]!, t.bytes, t.length);
    if (c === 0) return mid;
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** The element of `ranges` (disjoint, ascending by key) whose key range holds `key`, or -1. */
function rangeOf(ranges: readonly { firstKey: string; lastKey: string }[], key: string): number {
  let lo = 0;
  let hi = ranges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const s = ranges[mid]!;
    if (compareKeys(key, s.firstKey) < 0) hi = mid - 1;
    else if (compareKeys(key, s.lastKey) > 0) lo = mid + 1;
    else return mid;
  }
  return -1;
}

/**
 * Where a compaction reads one run: a window of consecutive blocks of one
 * segment (`first`..`last`), read with one ranged read and verified, the
 * positions of its entries (key offset, key length, value offset, value
 * length, -1 for a tombstone, four numbers per entry) and the next entry to
 * look at (keys come in ascending order).
 */
interface RunWindow {
  seg: SegmentRef;
  blocks: readonly SegmentBlockInfo[];
  last: number;
  bytes: Buffer;
  /** The reader's own buffer `bytes` views (undefined: the store made it), handed back when the window is replaced. */
  own: Buffer | undefined;
  entries: number[];
  next: number;
}

/**
 * Most bytes of one read of a compaction (at least one block): the memory a
 * compaction holds per run it reads paged values from. Reading a segment
 * whole held all of it at once (plus a key string and a view per entry).
 */
const COMPACTION_WINDOW_BYTES = 1024 * 1024;
/**
 * Most bytes of the windows of one compaction together: with many runs to
 * read, each gets a smaller window (down to `MIN_COMPACTION_WINDOW_BYTES`),
 * so what a compaction holds is set here, not by the runs it meets.
 */
const COMPACTION_READ_BYTES = 8 * 1024 * 1024;
const MIN_COMPACTION_WINDOW_BYTES = 64 * 1024;
/**
 * Windows kept between reads while a compaction runs: as many as one
 * compaction holds at once (its windows, one replaced and one being read),
 * so a store that reads into a caller's buffer is read into these instead
 * of a fresh buffer per read, each of which died old (about 240 MB per 1M fill).
 * They go when the last compaction reader is released: kept from one
 * compaction to the next they were about 10 MB held all the time, while a
 * compaction comes every few hundred thousand changes and makes its ten or
 * so windows again in its first reads.
 */
const SPARE_WINDOW_BYTES = COMPACTION_READ_BYTES + 2 * COMPACTION_WINDOW_BYTES;

/**
 * Reads paged values for one compaction (see `ValuePager.compactionReader`).
 * A value `read` answers is a view of a window and stays as it is until the
 * call after the next one (the caller copies it before asking again);
 * `release` hands the windows back once the compaction is done with them.
 */
export interface CompactionReader {
  read: (key: string, run: number) => Uint8Array | Promise<Uint8Array>;
  release: () => void;
}

/** The cache name of block `i` of segment `seg`. */
const blockName = (seg: SegmentRef, i: number) => `${seg.name}#${i}`;

/** Reads paged values of one writer: the runs they may name, the block indexes, the cache, and the loads under way. */
export class ValuePager {
  readonly cache: SegmentCache;
  readonly #ctx: StoreContext;
  readonly #policy: PagePolicy;
  readonly #readahead: number;
  /** The policy's key prefixes as UTF-8 bytes, to tell paged entries while decoding a block. */
  readonly #prefixBytes: readonly Buffer[];
  /** Runs that paged values may name, by run id. */
  #runs = new Map<number, readonly SegmentRef[]>();
  /** Block indexes of the segments of those runs, by segment name (those known so far). */
  readonly #indexes = new Map<string, readonly SegmentBlockInfo[]>();
  /** Block loads under way, by cache name. */
  readonly #loading = new Map<string, Promise<CachedSegment | null>>();
  /** Per segment, the last block a read fetched, to tell an in-order walk from random reads. */
  readonly #lastFetched = new Map<string, number>();
  /** Store reads made for paged values since open: block ranges, and compactions' windows of blocks. */
  fetches = 0;
  /** The UTF-8 bytes of the key a read looks for, in a buffer reused from read to read. */
  readonly #target = new KeyTarget();
  /** The run of the newest compaction this writer published (see `compacted`), if any. */
  #compaction: number | undefined;
  /** Compaction windows no reader holds, to read the next windows into (none while no reader is open). */
  readonly #spareWindows = new SpareBuffers<Buffer>(64, (b) => b.length, SPARE_WINDOW_BYTES);
  /** Compaction readers made and not yet released. */
  #openReaders = 0;
  /** Window buffers made since open, when a spare did not fit (the rest were reused). */
  windowsMade = 0;

  /**
   * `readaheadBytes`: most bytes one read fetches when misses walk a segment
   * in order; at most a quarter of `cacheBytes`, so what it brings in stays
   * cached long enough to be used.
   */
  constructor(ctx: StoreContext, policy: PagePolicy, cacheBytes: number, manifest: Manifest, readaheadBytes = 0) {
    this.#ctx = ctx;
    this.#policy = policy;
    this.#prefixBytes = policy.keyPrefixes.map((p) => Buffer.from(p, "utf8"));
    this.#readahead = Math.min(readaheadBytes, Math.floor(cacheBytes / 4));
    this.cache = new SegmentCache(cacheBytes);
    this.addRuns(manifest);
  }

  get policy(): PagePolicy {
    return this.#policy;
  }

  /** Makes the runs of `manifest` readable (beside those already known). */
  addRuns(manifest: Manifest): void {
    for (const run of segmentRuns(manifest)) this.#runs.set(run[0]!.run, run);
  }

  /** Records the block index of a segment this writer wrote, so reading it needs no index read. */
  addIndex(segmentName: string, blocks: readonly SegmentBlockInfo[]): void {
    this.#indexes.set(segmentName, blocks);
  }

  /** The block index of `seg` this writer holds, if any (a fold reads it instead of the segment's tail). */
  heldIndex(seg: SegmentRef): readonly SegmentBlockInfo[] | undefined {
    return this.#indexes.get(seg.name);
  }

  /**
   * `manifest` is a compaction's, published: it lists one run, which holds
   * every key live at its cut. Forgets every other run, and from now on
   * reads a value paged to an older run from it instead. That is where the
   * value is: a key still paged to a run older than the compaction's went
   * unchanged since that run was paged out, which was before the
   * compaction's cut (a compaction starts only once no checkpoint runs; the
   * incremental ones that run beside it page out to newer runs, which its
   * manifest still lists), so the compaction read that value and wrote it. Re-pointing
   * each such value instead cost a lookup per paged key, about as much CPU
   * as the compaction itself, while commits waited for it.
   */
  compacted(manifest: Manifest): void {
    const runs = segmentRuns(manifest);
    const live = new Set(manifest.segments.map((s) => s.run));
    const names = new Set(manifest.segments.map((s) => s.name));
    // A run folded into one the compaction kept (see `folded`) still reads from that one.
    for (const [id, segs] of [...this.#runs]) if (!live.has(id) && !segs.every((seg) => names.has(seg.name))) this.#runs.delete(id);
    for (const map of [this.#indexes, this.#lastFetched]) for (const name of [...map.keys()]) if (!names.has(name)) map.delete(name);
    this.#compaction = runs.length === 0 ? undefined : runs[0]![0]!.run;
  }

  /**
   * `runs` (oldest first) were folded into one run that took the id of the
   * first and that `manifest` lists: a value still paged to any of them
   * (or to a run folded into one of them before) is read from it from now
   * on. It is there: such a value went unchanged since its run was paged
   * out, so the fold, which read every one of those runs and wrote the
   * newest value of each key, wrote that one.
   */
  folded(runs: readonly number[], manifest: Manifest): void {
    const into = segmentRuns(manifest).find((run) => run[0]!.run === runs[0]);
    if (into === undefined) return;
    const gone = new Set(runs);
    const names = new Set(into.map((seg) => seg.name));
    for (const [id, segs] of this.#runs) {
      if (!gone.has(segs[0]!.run)) continue;
      for (const seg of segs) if (!names.has(seg.name)) for (const map of [this.#indexes, this.#lastFetched]) map.delete(seg.name);
      this.#runs.set(id, into);
    }
    for (const id of runs) this.#runs.set(id, into);
  }

  /** The segments of `run`; a run older than the newest compaction this writer published is read from that compaction. */
  #runSegments(run: number): readonly SegmentRef[] | undefined {
    const segs = this.#runs.get(run);
    if (segs !== undefined || this.#compaction === undefined || run >= this.#compaction) return segs;
    return this.#runs.get(this.#compaction);
  }

  #segment(key: string, run: number): SegmentRef {
    const segs = this.#runSegments(run);
    const i = segs === undefined ? -1 : rangeOf(segs, key);
    if (i < 0) {
      throw new StoreCorruptedError(`${this.#ctx.prefix}seg/`, `no segment of run ${run} covers a key the engine paged out to it (${JSON.stringify(key)})`);
    }
    return segs![i]!;
  }

  #blockOf(seg: SegmentRef, blocks: readonly SegmentBlockInfo[], key: string): number {
    const i = rangeOf(blocks, key);
    if (i < 0)
      throw new StoreCorruptedError(this.#ctx.prefix + seg.name, `no block of its index covers a key the engine paged out to it (${JSON.stringify(key)})`);
    return i;
  }

  /** The cache name of the block holding `key` paged to `run` (undefined for a segment whose index was never handed over: `#index` says why). */
  #cachedName(key: string, run: number): string | undefined {
    const seg = this.#segment(key, run);
    const blocks = this.#indexes.get(seg.name);
    return blocks === undefined ? undefined : blockName(seg, this.#blockOf(seg, blocks, key));
  }

  /** The value of `key` paged to `run` when its block is cached (a copy); `ValueNotWarmedError` otherwise. */
  read(key: string, run: number): Uint8Array {
    const name = this.#cachedName(key, run);
    const cached = name === undefined ? undefined : this.cache.get(name);
    if (cached === undefined) throw new ValueNotWarmedError(key);
    this.cache.hits++;
    const i = findKey(cached, this.#target.set(key));
    const value = copyBytes(this.#pick(cached, name!, i, key));
    this.cache.noteRead(name!, i);
    return value;
  }

  /** Whether a run the writer still reads from lists `seg`. */
  #stillListed(seg: SegmentRef): boolean {
    return this.#runs.get(seg.run)?.some((s) => s.name === seg.name) ?? false;
  }

  /** Whether the value of `key` paged to `run` can be read synchronously now. */
  isCached(key: string, run: number): boolean {
    const name = this.#cachedName(key, run);
    return name !== undefined && this.cache.has(name);
  }

  /** The value of entry `i` (found for `key`) in `cached` (a view into its block); a key it does not hold, or holds unpageable, is corrupt. */
  #pick(cached: CachedSegment, where: string, i: number, key: string): Uint8Array {
    const { block, at } = cached;
    const value = i < 0 ? undefined : new Uint8Array(block.buffer, block.byteOffset + at[4 * i + 2]!, at[4 * i + 3]!);
    if (value === undefined || !isPageable(this.#policy, key, value)) {
      throw new StoreCorruptedError(this.#ctx.prefix + where, `it holds no value for a key the engine paged out to it (${JSON.stringify(key)})`);
    }
    return value;
  }

  /** Whether the key at `block[at..at+len)` starts with one of the policy's prefixes (see `isPageable`). */
  #pagedPrefix(block: Buffer, at: number, len: number): boolean {
    for (const p of this.#prefixBytes) if (p.length <= len && block.compare(p, 0, p.length, at, at + p.length) === 0) return true;
    return false;
  }

  #gone(seg: SegmentRef): StoreCorruptedError {
    return new StoreCorruptedError(this.#ctx.prefix + seg.name, "it is missing, but the writer's own manifest lists it");
  }

  /**
   * Loads the blocks holding the given paged values into the cache, pinned
   * until the next macrotask. Resolves once all are in; a segment deleted
   * meanwhile (a compaction replaced it) is skipped: the caller checks again
   * and finds the value paged to the new run. Rejects with the first failed
   * read once every read has settled (what did load is released all the same).
   */
  async warm(entries: ReadonlyArray<readonly [string, number]>): Promise<void> {
    const bySegment = new Map<string, { seg: SegmentRef; keys: string[] }>();
    for (const [key, run] of entries) {
      const seg = this.#segment(key, run);
      const slot = bySegment.get(seg.name);
      if (slot === undefined) bySegment.set(seg.name, { seg, keys: [key] });
      else slot.keys.push(key);
    }
    const pinned: string[] = [];
    const loadBlock = async (seg: SegmentRef, blocks: readonly SegmentBlockInfo[], i: number) => {
      const name = blockName(seg, i);
      if (this.cache.pin(name)) {
        pinned.push(name);
        return;
      }
      this.cache.misses++;
      const loaded = await this.#loadBlock(seg, blocks, i);
      if (loaded === null) {
        // Gone while a live run still lists it: no compaction moved its values, so the
        // next check would ask for it again forever.
        if (this.#stillListed(seg)) throw this.#gone(seg);
        return;
      }
      if (!this.cache.pin(name)) this.cache.insertPinned(name, loaded);
      pinned.push(name);
    };
    const results = await Promise.allSettled(
      [...bySegment.values()].map(async ({ seg, keys }) => {
        const blocks = this.#index(seg);
        const wanted = new Set(keys.map((k) => this.#blockOf(seg, blocks, k)));
        const loads = await Promise.allSettled([...wanted].map((i) => loadBlock(seg, blocks, i)));
        for (const r of loads) if (r.status === "rejected") throw r.reason;
      }),
    );
    this.cache.unpinLater(pinned);
    for (const r of results) if (r.status === "rejected") throw r.reason;
  }

  /**
   * The block index of `seg`. The writer is handed every one: the open reads
   * each segment's index (from its tail, or from the segment read whole) and
   * each checkpoint and compaction hands over those it wrote. The only
   * segments it is not handed are those of a manifest adopted after an
   * unsure publish (see `Engine`'s `#adoptLandedManifest`), and no value is
   * paged to them: the next checkpoint is a full one, which drops their runs.
   * So an unknown index is a writer that lost track of its own segments.
   */
  #index(seg: SegmentRef): readonly SegmentBlockInfo[] {
    const known = this.#indexes.get(seg.name);
    if (known !== undefined) return known;
    throw new StoreCorruptedError(
      this.#ctx.prefix + seg.name,
      "this writer holds values paged to the segment but was never handed its block index",
      "the stored data may be sound: close the engine and open it again (the open reads every segment's index)",
    );
  }

  /** `length` bytes of `seg` from `offset` (see `readSegmentRange`), counted in `fetches`. */
  #readRange(seg: SegmentRef, offset: number, length: number): Promise<Uint8Array | null> {
    this.fetches++;
    return readSegmentRange(this.#ctx, seg, offset, length);
  }

  /**
   * Block `i` of `seg`, decoded (one read per block at a time); null when the
   * segment is gone. When the last read of this segment ended at block i-1,
   * the read also fetches the blocks after it (up to the readahead budget,
   * stopping at one already cached or loading) and caches them unpinned.
   */
  #loadBlock(seg: SegmentRef, blocks: readonly SegmentBlockInfo[], i: number): Promise<CachedSegment | null> {
    const under = this.#loading.get(blockName(seg, i));
    if (under !== undefined) return under;
    let last = i;
    if (this.#readahead > 0 && this.#lastFetched.get(seg.name) === i - 1) {
      let bytes = blocks[i]!.length;
      while (last + 1 < blocks.length) {
        const next = blockName(seg, last + 1);
        if (bytes + blocks[last + 1]!.length > this.#readahead || this.cache.has(next) || this.#loading.has(next)) break;
        last++;
        bytes += blocks[last]!.length;
      }
    }
    this.#lastFetched.set(seg.name, last);
    const all = this.#fetchBlocks(seg, blocks, i, last);
    for (let b = i; b <= last; b++) {
      const name = blockName(seg, b);
      const one: Promise<CachedSegment | null> = all
        .then((decoded) => (decoded === null ? null : decoded[b - i]!))
        .finally(() => {
          if (this.#loading.get(name) === one) this.#loading.delete(name);
        });
      // A failed read is reported to whoever waits for block i; the others are only read ahead.
      if (b > i) one.catch(() => {});
      this.#loading.set(name, one);
    }
    return this.#loading.get(blockName(seg, i))!;
  }

  async #fetchBlocks(seg: SegmentRef, blocks: readonly SegmentBlockInfo[], first: number, last: number): Promise<CachedSegment[] | null> {
    const start = blocks[first]!.offset;
    const end = blocks[last]!.offset + blocks[last]!.length;
    const bytes = await this.#readRange(seg, start, end - start);
    if (bytes === null) return null;
    const key = this.#ctx.prefix + seg.name;
    const out: CachedSegment[] = [];
    for (let b = first; b <= last; b++) {
      const info = blocks[b]!;
      // Each block gets its own copy, so a cached block never holds its neighbours' bytes alive.
      const own = asBuffer(copyBytes(bytes, info.offset - start, info.offset - start + info.length));
      const at = new Int32Array(4 * info.entries);
      let n = 0;
      readBlockEntries(key, b, info, own, (_buf, keyAt, keyLen, valueAt, valueLen) => {
        // Only entries the policy pages are ever read here: the cache counts them to tell a block read through.
        if (valueLen < this.#policy.minBytes || !this.#pagedPrefix(own, keyAt, keyLen)) return;
        at[n++] = keyAt;
        at[n++] = keyLen;
        at[n++] = valueAt;
        at[n++] = valueLen;
      });
      const decoded = { block: own, at: n === at.length ? at : at.slice(0, n), bytes: segmentCharge(info.length, n / 4) };
      out.push(decoded);
      if (b > first) this.cache.insert(blockName(seg, b), decoded);
    }
    return out;
  }

  /**
   * A reader of paged values for a compaction that visits keys in ascending
   * order, outside the cache: per run it holds one window of blocks (at most
   * `COMPACTION_WINDOW_BYTES`, less when many runs share `COMPACTION_READ_BYTES`; read with one ranged read from the block that
   * holds the key asked for, each block verified against its checksum) and
   * finds each key by comparing its UTF-8 bytes, walking on from the key
   * before. Nothing is decoded into a string or a view per entry. Over a
   * store without ranged reads (each read fetches the whole object) a window
   * runs to the segment's end, so each segment is read once as before.
   */
  compactionReader(): CompactionReader {
    const current = new Map<number, RunWindow>();
    const target = new KeyTarget();
    const runs = new Set([...this.#runs.values()].map((segs) => segs[0]!.run)).size;
    const windowBytes = Math.max(MIN_COMPACTION_WINDOW_BYTES, Math.min(COMPACTION_WINDOW_BYTES, Math.floor(COMPACTION_READ_BYTES / Math.max(1, runs))));
    // The window replaced last: the value the previous call answered may be a view of it, so it is
    // read into again only after one more window was read (never while the caller may still read it).
    let replaced: Buffer | undefined;
    let released = false;
    this.#openReaders++;
    const retire = (own: Buffer | undefined) => {
      if (replaced !== undefined) this.#giveWindow(replaced);
      replaced = own;
    };
    const read = (key: string, run: number): Uint8Array | Promise<Uint8Array> => {
      if (released) throw new Error("a compaction reader was used after its release");
      // Runs a compaction dropped are read from it: one window for all of them.
      const from = this.#runSegments(run)?.[0]?.run ?? run;
      const held = current.get(from);
      if (held !== undefined && compareKeys(key, held.blocks[held.last]!.lastKey) <= 0) return this.#pickNext(held, key, target);
      const seg = held !== undefined && compareKeys(key, held.seg.lastKey) <= 0 ? held.seg : this.#segment(key, run);
      current.delete(from);
      return this.#readWindow(seg, key, windowBytes).then(
        (next) => {
          retire(held?.own);
          if (released) {
            retire(next.own);
            throw new Error("a compaction reader was released while it read");
          }
          current.set(from, next);
          return this.#pickNext(next, key, target);
        },
        (err: unknown) => {
          retire(held?.own);
          throw err;
        },
      );
    };
    const release = () => {
      if (released) return;
      released = true;
      if (--this.#openReaders === 0) this.#spareWindows.clear();
      for (const w of current.values()) retire(w.own);
      current.clear();
      retire(undefined);
    };
    return { read, release };
  }

  /** Keeps a window no reader holds for the next read, while a compaction reader is open (see `SPARE_WINDOW_BYTES`). */
  #giveWindow(window: Buffer): void {
    if (this.#openReaders > 0) this.#spareWindows.give(window);
  }

  /** A buffer of at least `size` bytes to read a window into: a spare when one fits. */
  #takeWindow(size: number, windowBytes: number): Buffer {
    const spare = this.#spareWindows.take(size);
    if (spare !== undefined) return spare;
    this.windowsMade++;
    return Buffer.allocUnsafeSlow(Math.max(size, windowBytes));
  }

  /** The window of `seg` that starts at the block holding `key`; a segment gone is corrupt (the writer's manifest lists it). */
  async #readWindow(seg: SegmentRef, key: string, windowBytes: number): Promise<RunWindow> {
    const blocks = this.#index(seg);
    const first = this.#blockOf(seg, blocks, key);
    const { last, bytes: size } = blockWindow(this.#ctx.store, blocks, first, windowBytes);
    const start = blocks[first]!.offset;
    // Only a store that reads into a caller's buffer is given one; the others make their own.
    const into = this.#ctx.store.getRangeInto === undefined ? undefined : this.#takeWindow(size, windowBytes);
    let read: Uint8Array | null;
    try {
      this.fetches++;
      read = await readSegmentRange(this.#ctx, seg, start, size, into);
    } catch (err) {
      // A failed read wrote nothing into it since it settled; what it wrote before is never read.
      if (into !== undefined) this.#giveWindow(into);
      throw err;
    }
    if (read === null) {
      if (into !== undefined) this.#giveWindow(into);
      throw this.#gone(seg);
    }
    const own = into !== undefined && read.buffer === into.buffer ? into : undefined;
    const bytes = asBuffer(read);
    const objectKey = this.#ctx.prefix + seg.name;
    const entries: number[] = [];
    let base = 0;
    const onEntry = (_buf: Buffer, keyAt: number, keyLen: number, valueAt: number, valueLen: number) => {
      entries.push(base + keyAt, keyLen, valueLen < 0 ? -1 : base + valueAt, valueLen);
    };
    for (let b = first; b <= last; b++) {
      const info = blocks[b]!;
      base = info.offset - start;
      readBlockEntries(objectKey, b, info, bytes.subarray(base, base + info.length), onEntry);
    }
    return { seg, blocks, last, bytes, own, entries, next: 0 };
  }

  /** The value of `key` in `w`, searched from where the previous key was found; not there is corrupt. */
  #pickNext(w: RunWindow, key: string, target: KeyTarget): Uint8Array {
    const t = target.set(key);
    const { bytes, entries } = w;
    for (let i = w.next; i < entries.length; i += 4) {
      const c = compareBytes(bytes, entries[i]!, entries[i + 1]!, t.bytes, t.length);
      if (c < 0) continue;
      if (c > 0) break;
      w.next = i + 4;
      const valueLen = entries[i + 3]!;
      if (valueLen < 0) break;
      const value = new Uint8Array(bytes.buffer, bytes.byteOffset + entries[i + 2]!, valueLen);
      if (!isPageable(this.#policy, key, value)) break;
      return value;
    }
    throw new StoreCorruptedError(this.#ctx.prefix + w.seg.name, `it holds no value for a key the engine paged out to it (${JSON.stringify(key)})`);
  }
}

/** The UTF-8 bytes of the key a compaction looks for, in a buffer reused from key to key. */
class KeyTarget {
  bytes = Buffer.allocUnsafe(256);
  length = 0;

  set(key: string): this {
    const need = Buffer.byteLength(key, "utf8");
    if (need > this.bytes.length) this.bytes = Buffer.allocUnsafe(need * 2);
    this.length = this.bytes.write(key, 0, "utf8");
    return this;
  }
}

/** Bytewise order (the order of `compareKeys` for UTF-8) of `a[at..at+len)` against `b[0..blen)`. */
function compareBytes(a: Buffer, at: number, len: number, b: Buffer, blen: number): number {
  const n = Math.min(len, blen);
  for (let i = 0; i < n; i++) {
    const d = a[at + i]! - b[i]!;
    if (d !== 0) return d;
  }
  return len - blen;
}
