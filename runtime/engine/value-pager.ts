/**
 * @module Paged values: the writer keeps every key in memory, but a value
 * under one of the policy's key prefixes, once a checkpoint stored it in a
 * segment and no commit changed it since, is replaced in memory by the id
 * of the segment run that holds it (a small integer). Reading it goes
 * through a bounded cache of decoded segments (segment-cache.ts).
 *
 * Reads stay synchronous: `get` of a paged value that is not cached throws
 * `ColdReadError`. A transaction first calls `warm(keys)`, awaits it while
 * it returns a promise, and then reads and commits in the same turn; the
 * cache keeps what a warm-up loaded until the next macrotask, so the reads
 * that follow the await find it. Paging never changes what is stored: it
 * only changes what the writer holds in memory.
 */
import { StoreCorruptedError } from "../errors.js";
import { compareKeys } from "../store/keys.js";
import type { Manifest, SegmentRef } from "./manifest.js";
import { segmentRuns } from "./manifest.js";
import type { StoreContext } from "./recovery.js";
import { getWithRetries } from "./store-ops.js";
import { type CachedSegment, SegmentCache, segmentCharge } from "./segment-cache.js";
import { readSegment } from "./segment-format.js";
import { ColdReadError, isPageable, type PagePolicy } from "./paged-value.js";

/** Index of `key` in ascending `keys`, or -1. */
function findKey(keys: readonly string[], key: string): number {
  let lo = 0;
  let hi = keys.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const c = compareKeys(keys[mid]!, key);
    if (c === 0) return mid;
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** The segment of `run` whose key range holds `key`, or undefined. */
function segmentOf(run: readonly SegmentRef[], key: string): SegmentRef | undefined {
  let lo = 0;
  let hi = run.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const s = run[mid]!;
    if (compareKeys(key, s.firstKey) < 0) hi = mid - 1;
    else if (compareKeys(key, s.lastKey) > 0) lo = mid + 1;
    else return s;
  }
  return undefined;
}

/** Reads paged values of one writer: the runs they may name, the cache, and the loads under way. */
export class ValuePager {
  readonly cache: SegmentCache;
  readonly #ctx: StoreContext;
  readonly #policy: PagePolicy;
  /** Runs that paged values may name, by run id. */
  #runs = new Map<number, readonly SegmentRef[]>();
  readonly #loading = new Map<string, Promise<CachedSegment | null>>();
  /** Segment objects fetched since open (cache misses and compaction reads). */
  fetches = 0;

  constructor(ctx: StoreContext, policy: PagePolicy, cacheBytes: number, manifest: Manifest) {
    this.#ctx = ctx;
    this.#policy = policy;
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

  /** Forgets every run `manifest` does not list; call once no paged value names them. */
  keepOnly(manifest: Manifest): void {
    const live = new Set(manifest.segments.map((s) => s.run));
    for (const id of [...this.#runs.keys()]) if (!live.has(id)) this.#runs.delete(id);
  }

  #segment(key: string, run: number): SegmentRef {
    const segs = this.#runs.get(run);
    const seg = segs === undefined ? undefined : segmentOf(segs, key);
    if (seg === undefined) {
      throw new StoreCorruptedError(`${this.#ctx.prefix}seg/`, `no segment of run ${run} covers a key the engine paged out to it (${JSON.stringify(key)})`);
    }
    return seg;
  }

  /** The value of `key` paged to `run` when its segment is cached (a copy); `ColdReadError` otherwise. */
  read(key: string, run: number): Uint8Array {
    const seg = this.#segment(key, run);
    const cached = this.cache.get(seg.name);
    if (cached === undefined) throw new ColdReadError(key);
    this.cache.hits++;
    return this.#pick(cached, seg, key).slice();
  }

  /** Whether a run the writer still reads from lists `seg`. */
  #stillListed(seg: SegmentRef): boolean {
    return this.#runs.get(seg.run)?.some((s) => s.name === seg.name) ?? false;
  }

  /** Whether the value of `key` paged to `run` can be read synchronously now. */
  isCached(key: string, run: number): boolean {
    return this.cache.has(this.#segment(key, run).name);
  }

  #pick(cached: CachedSegment, seg: SegmentRef, key: string): Uint8Array {
    const i = findKey(cached.keys, key);
    if (i < 0) throw new StoreCorruptedError(this.#ctx.prefix + seg.name, `it holds no value for a key the engine paged out to it (${JSON.stringify(key)})`);
    return cached.values[i]!;
  }

  /**
   * Loads the segments holding the given paged values into the cache,
   * pinned until the next macrotask. Resolves once all are in; a segment
   * deleted meanwhile (a compaction replaced it) is skipped: the caller
   * checks again and finds the value paged to the new run.
   */
  async warm(entries: ReadonlyArray<readonly [string, number]>): Promise<void> {
    const names = new Map<string, SegmentRef>();
    for (const [key, run] of entries) {
      const seg = this.#segment(key, run);
      names.set(seg.name, seg);
    }
    const pinned: string[] = [];
    await Promise.all(
      [...names.values()].map(async (seg) => {
        if (this.cache.pin(seg.name)) {
          pinned.push(seg.name);
          return;
        }
        this.cache.misses++;
        const loaded = await this.#load(seg);
        if (loaded === null) {
          // Gone while a live run still lists it: no compaction moved its values, so the
          // next check would ask for it again forever.
          if (this.#stillListed(seg)) throw new StoreCorruptedError(this.#ctx.prefix + seg.name, "it is missing, but the writer's own manifest lists it");
          return;
        }
        if (this.cache.pin(seg.name)) pinned.push(seg.name);
        else {
          this.cache.insertPinned(seg.name, loaded);
          pinned.push(seg.name);
        }
      }),
    );
    this.cache.unpinLater(pinned);
  }

  /** Reads and decodes one segment (one fetch per name at a time); null when it is gone. */
  #load(seg: SegmentRef): Promise<CachedSegment | null> {
    let p = this.#loading.get(seg.name);
    if (p === undefined) {
      p = this.#fetch(seg).finally(() => this.#loading.delete(seg.name));
      this.#loading.set(seg.name, p);
    }
    return p;
  }

  async #fetch(seg: SegmentRef): Promise<CachedSegment | null> {
    const objectKey = this.#ctx.prefix + seg.name;
    this.fetches++;
    const bytes = await getWithRetries(this.#ctx.store, objectKey, this.#ctx.retry);
    if (bytes === null) return null;
    const keys: string[] = [];
    const values: Uint8Array[] = [];
    const n = readSegment(objectKey, bytes, (k, v) => {
      if (v === undefined || !isPageable(this.#policy, k, v)) return;
      keys.push(k);
      values.push(v);
    });
    if (n !== seg.entries) throw new StoreCorruptedError(objectKey, `segment holds ${n} entries, the manifest says ${seg.entries}`);
    return { keys, values, bytes: segmentCharge(bytes.byteLength, keys.length) };
  }

  /**
   * A reader of paged values for a compaction that visits keys in ascending
   * order: it holds one decoded segment per run and never fills the cache.
   */
  compactionReader(): (key: string, run: number) => Uint8Array | Promise<Uint8Array> {
    const current = new Map<number, { seg: SegmentRef; data: CachedSegment }>();
    return (key, run) => {
      const seg = this.#segment(key, run);
      const held = current.get(run);
      if (held !== undefined && held.seg.name === seg.name) return this.#pick(held.data, seg, key);
      const cached = this.cache.get(seg.name);
      if (cached !== undefined) {
        current.set(run, { seg, data: cached });
        return this.#pick(cached, seg, key);
      }
      return this.#load(seg).then((data) => {
        if (data === null) throw new StoreCorruptedError(this.#ctx.prefix + seg.name, "it is missing, but the writer's own manifest lists it");
        current.set(run, { seg, data });
        return this.#pick(data, seg, key);
      });
    };
  }
}
