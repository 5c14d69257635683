/**
 * @module A transaction over the engine: synchronous reads that see the
 * transaction's own writes, a write batch, and per-queue stats deltas
 * folded into the batch at the end.
 *
 * The engine applies a commit in memory synchronously, so a transaction is
 * serializable as long as it is built and committed within one turn of the
 * event loop: never `await` between creating a `Txn` and committing it.
 */
import type { ScanOptions } from "../engine/engine.js";
import { bytesEqual } from "../store/bytes-equal.js";
import { WriteBatch } from "../engine/write-batch.js";
import { statsKey } from "./keys.js";
import { decodeStats, encodeStats, type JobState, type QueueStats } from "./record.js";
import type { OwnedBytes } from "./owned-bytes.js";

/** The read surface the queue needs; `Engine` and `EngineReader` provide it. */
export interface ReadSource {
  get(key: string): Uint8Array | undefined;
  /** Whether `key` has a value, without reading it (a paged value need not be warm). */
  has?(key: string): boolean;
  scan(opts?: ScanOptions): Iterable<[string, Uint8Array]>;
  /** Makes paged values readable (`Engine.warm`); absent where every value is in memory. */
  warm?(keys: Iterable<string>): Promise<void> | undefined;
  /** True when a commit keeps none of the arrays it is given (`Engine.copiesValues`). */
  readonly copiesValues?: boolean;
}

type StatField = keyof QueueStats;

/** The stats a transaction last wrote per stats key, with their bytes. */
type WrittenStats = Map<string, { bytes: Uint8Array; stats: Readonly<QueueStats> }>;

/**
 * The stats records transactions over a source last wrote: the next
 * transaction of the queue that finds the same bytes stored skips decoding
 * them. Compared by content, since the engine may hold a value packed and
 * hand out a fresh array per read. One entry per queue, dropped with the
 * source.
 */
const written = new WeakMap<ReadSource, WrittenStats>();

function writtenStats(src: ReadSource): WrittenStats {
  let w = written.get(src);
  if (w === undefined) {
    w = new Map();
    written.set(src, w);
  }
  return w;
}

/** One transaction: reads see its own writes; `finish` yields the batch to commit. */
export class Txn {
  /** Never handed out of the queue: the engine takes its ops as they are (`commitOwned`). */
  readonly batch = new WriteBatch();
  readonly #overlay = new Map<string, Uint8Array | null>();
  readonly #deltas = new Map<string, QueueStats>();
  readonly #stored = new Map<string, Readonly<QueueStats>>();
  /** The seq high-water mark this transaction stores, if any (see `SeqHighWater`). */
  seqHighWater: string | undefined = undefined;
  /**
   * Whether values put may be views of memory shared with other values: the
   * engine committing the batch copies each (see `Engine.copiesValues`), so
   * none is kept. Otherwise every value must be an array of its own.
   */
  readonly valuesCopied: boolean;

  constructor(readonly src: ReadSource) {
    this.valuesCopied = src.copiesValues === true;
  }

  get(key: string): Uint8Array | undefined {
    const o = this.#overlay.get(key);
    if (o !== undefined) return o ?? undefined;
    return this.src.get(key);
  }

  has(key: string): boolean {
    const o = this.#overlay.get(key);
    if (o !== undefined) return o !== null;
    return this.src.has === undefined ? this.src.get(key) !== undefined : this.src.has(key);
  }

  /**
   * Puts an array the queue or the workflow made for this write: the
   * commit takes it unchecked (`commitOwned`). A caller's value becomes one
   * only through `copyCallerValue`.
   */
  put(key: string, value: OwnedBytes): void {
    this.#overlay.set(key, value);
    this.batch.put(key, value);
  }

  delete(key: string): void {
    this.#overlay.set(key, null);
    this.batch.delete(key);
  }

  /** Adds `delta` to one counter of `queue`. */
  bump(queue: string, field: StatField, delta: number): void {
    let d = this.#deltas.get(queue);
    if (d === undefined) {
      d = { pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 0 };
      this.#deltas.set(queue, d);
    }
    d[field] += delta;
  }

  /** Moves one job of `queue` between state counters (`done` only grows). */
  move(queue: string, from: JobState | null, to: JobState | null): void {
    if (from !== null && from !== "done") this.bump(queue, from, -1);
    if (to !== null) this.bump(queue, to, 1);
  }

  /**
   * The pending count of `queue` as this transaction leaves it so far: the
   * stored count plus this transaction's moves. Zero means no job of the
   * queue is pending (every pending job is counted with its index entry).
   */
  pendingCount(queue: string): number {
    return this.#storedStats(queue).pending + (this.#deltas.get(queue)?.pending ?? 0);
  }

  /** The stored stats of `queue`, read once per transaction (the stats key is written only by `finish`). */
  #storedStats(queue: string): Readonly<QueueStats> {
    let was = this.#stored.get(queue);
    if (was === undefined) {
      const key = statsKey(queue);
      const stored = this.get(key);
      const known = stored === undefined ? undefined : writtenStats(this.src).get(key);
      was = known !== undefined && bytesEqual(known.bytes, stored!) ? known.stats : decodeStats(key, stored);
      this.#stored.set(queue, was);
    }
    return was;
  }

  /** Folds the stats deltas into the batch and returns it. Call once, right before commit. */
  finish(): WriteBatch {
    if (this.#deltas.size === 0) return this.batch;
    const last = writtenStats(this.src);
    for (const [queue, d] of this.#deltas) {
      if (d.pending === 0 && d.scheduled === 0 && d.claimed === 0 && d.done === 0 && d.dead === 0) continue;
      const key = statsKey(queue);
      const was = this.#storedStats(queue);
      const s: QueueStats = {
        pending: was.pending + d.pending,
        scheduled: was.scheduled + d.scheduled,
        claimed: was.claimed + d.claimed,
        done: was.done + d.done,
        dead: was.dead + d.dead,
      };
      const bytes = encodeStats(s);
      last.set(key, { bytes, stats: s });
      this.batch.put(key, bytes);
    }
    this.#deltas.clear();
    return this.batch;
  }
}
