/**
 * @module A transaction over the engine: synchronous reads that see the
 * transaction's own writes, a write batch, and per-queue stats deltas
 * folded into the batch at the end.
 *
 * The engine applies a commit in memory synchronously, so a transaction is
 * serializable as long as it is built and committed within one turn of the
 * event loop: never `await` between creating a `Txn` and committing it.
 */
import type { HeadedKey } from "../engine/key-family.js";
import type { ScanOptions, ValueToken } from "../engine/engine.js";
import { bytesEqual } from "../store/bytes-equal.js";
import { WriteBatch, type BatchOp } from "../engine/write-batch.js";
import { statsKey } from "./keys.js";
import { decodeStats, encodeCarriedDone, encodeStats, type JobState, type QueueStats } from "./record.js";
import type { DeadLetteredEvent } from "./config.js";
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
  /** A token for the value `key` holds (`Engine.valueToken`): equal tokens of one key mean equal bytes. */
  valueToken?(key: string): ValueToken | undefined;
}

/**
 * The stats a transaction last wrote per stats key, with their bytes, and
 * the token of those bytes as stored once a read found them (undefined
 * until then): a later read whose token is the same takes the stats
 * without the value copied out of the engine's packed form and compared.
 */
type WrittenStats = Map<string, { bytes: Uint8Array; stats: Readonly<QueueStats>; token: ValueToken | undefined }>;

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

/**
 * Ops a transaction searches from its end for its own writes before it
 * indexes them by key: a step's settlement writes about seven, and a map
 * filled per transaction cost more (its table, growth and every key
 * hashed) than the few comparisons a read makes.
 */
const SCANNED_OPS = 16;

/** What a claim remembers of the done count its claimed index entry carries (see `Txn.finish`). */
export interface CarriedDone {
  carried: number;
}

/** A claimed index entry this transaction puts that may carry its queue's done count instead of the stats record. */
interface Carrier {
  readonly queue: string;
  readonly op: Extract<BatchOp, { kind: "put" }>;
  readonly claim: CarriedDone;
}

/** One queue's stats in a transaction: the moves so far and the stored counts, once read. */
interface StatsSlot {
  queue: string;
  key: string;
  readonly delta: QueueStats;
  stored: Readonly<QueueStats> | undefined;
}

/**
 * Slots of finished transactions, taken again by later ones: a step's
 * commit moves one queue's counts, and its slot and deltas made afresh
 * cost about 120 B of the heap. A transaction holds none of its slots once
 * `finish` folded them; one dropped without `finish` keeps its own.
 */
const spareSlots: StatsSlot[] = [];
/** The most slots kept spare: one per queue a commit moves, rarely more than two. */
const SPARE_SLOTS = 4;

function takeSlot(queue: string): StatsSlot {
  const s = spareSlots.pop();
  if (s === undefined) return { queue, key: statsKey(queue), delta: { pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 0 }, stored: undefined };
  s.queue = queue;
  s.key = statsKey(queue);
  const d = s.delta;
  d.pending = d.scheduled = d.claimed = d.done = d.dead = 0;
  s.stored = undefined;
  return s;
}

function releaseSlot(s: StatsSlot): void {
  // The stored counts are a decoded record another transaction may still hold: let go of it, not reset.
  s.stored = undefined;
  if (spareSlots.length < SPARE_SLOTS) spareSlots.push(s);
}

/** One transaction: reads see its own writes; `finish` yields the batch to commit. */
export class Txn {
  /** Never handed out of the queue: the engine takes its ops as they are (`commitOwned`). */
  readonly batch = new WriteBatch();
  /** The batch's latest value per key (null: deleted), made once the batch passes `SCANNED_OPS`. */
  #index: Map<string, Uint8Array | null> | undefined = undefined;
  /** The first queue whose stats move (most transactions move one), then any others by name. */
  #stats: StatsSlot | undefined = undefined;
  #moreStats: Map<string, StatsSlot> | undefined = undefined;
  /** The first claimed index entry put by this transaction that may carry a done count (see `offerCarrier`), then any others: most offer one, and a list per step cost its table. */
  #carrier: Carrier | undefined = undefined;
  #moreCarriers: Carrier[] | undefined = undefined;
  /** The seq high-water mark this transaction stores, if any (see `SeqHighWater`). */
  seqHighWater: string | undefined = undefined;
  /** Jobs this transaction sets aside as dead for damaged records on the way, told to their listeners once it is durable. */
  setAside: DeadLetteredEvent[] | undefined = undefined;
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
    const o = this.#written(key);
    if (o !== undefined) return o ?? undefined;
    return this.src.get(key);
  }

  has(key: string): boolean {
    const o = this.#written(key);
    if (o !== undefined) return o !== null;
    return this.src.has === undefined ? this.src.get(key) !== undefined : this.src.has(key);
  }

  /** What this transaction last wrote to `key`: its value, null when it deleted it, undefined when it did not write it. */
  #written(key: string): Uint8Array | null | undefined {
    if (this.#index !== undefined) return this.#index.get(key);
    const ops = this.batch.ops;
    if (ops.length > SCANNED_OPS) return this.#indexOps().get(key);
    for (let i = ops.length - 1; i >= 0; i--) {
      const op = ops[i]!;
      if (op.key === key) return op.kind === "put" ? op.value : null;
    }
    return undefined;
  }

  /** Indexes the batch's ops by key (a later op wins); kept up to date by `put` and `delete` from then on. */
  #indexOps(): Map<string, Uint8Array | null> {
    const index = new Map<string, Uint8Array | null>();
    for (const op of this.batch.ops) index.set(op.key, op.kind === "put" ? op.value : null);
    this.#index = index;
    return index;
  }

  /**
   * Puts an array the queue or the workflow made for this write: the
   * commit takes it unchecked (`commitOwned`). A caller's value becomes one
   * only through `copyCallerValue`.
   */
  put(key: string | HeadedKey, value: OwnedBytes): void {
    if (typeof key === "string") {
      this.#index?.set(key, value);
      this.batch.put(key, value);
      return;
    }
    // A key made under a prefix: the engine's memtable places it by its family's head, without a search.
    this.#index?.set(key.key, value);
    this.batch.putHeaded(key, value);
  }

  delete(key: string): void {
    this.#index?.set(key, null);
    this.batch.delete(key);
  }

  /**
   * Offers the claimed index entry `key` of `queue`, just put for a job
   * inserted claimed, to carry the queue's done count of this transaction
   * (see `finish`); `claim` learns what it carries.
   */
  offerCarrier(queue: string, key: string, claim: CarriedDone): void {
    const op = this.#lastOp(key);
    if (op?.kind !== "put") return;
    const c: Carrier = { queue, op, claim };
    if (this.#carrier === undefined) this.#carrier = c;
    else (this.#moreCarriers ??= []).push(c);
  }

  /** The batch's last op on `key`, if any. */
  #lastOp(key: string): BatchOp | undefined {
    const ops = this.batch.ops;
    for (let i = ops.length - 1; i >= 0; i--) if (ops[i]!.key === key) return ops[i];
    return undefined;
  }

  /** Adds `delta` to the done count of `queue`. */
  bumpDone(queue: string, delta: number): void {
    this.#slot(queue).delta.done += delta;
  }

  /** Moves one job of `queue` between state counters (`done` only grows). */
  move(queue: string, from: JobState | null, to: JobState | null): void {
    const leaves = from !== null && from !== "done";
    if (!leaves && to === null) return;
    const d = this.#slot(queue).delta;
    if (leaves) addToCount(d, from, -1);
    if (to !== null) addToCount(d, to, 1);
  }

  /** The stats slot of `queue`, made on its first move: the stats are put in the order the queues first moved. */
  #slot(queue: string): StatsSlot {
    let s = this.#slotOf(queue);
    if (s === undefined) {
      s = takeSlot(queue);
      if (this.#stats === undefined) this.#stats = s;
      else (this.#moreStats ??= new Map()).set(queue, s);
    }
    return s;
  }

  #slotOf(queue: string): StatsSlot | undefined {
    const first = this.#stats;
    return first === undefined || first.queue === queue ? first : this.#moreStats?.get(queue);
  }

  /**
   * The pending count of `queue` as this transaction leaves it so far: the
   * stored count plus this transaction's moves. Zero means no job of the
   * queue is pending (every pending job is counted with its index entry).
   */
  pendingCount(queue: string): number {
    const s = this.#slotOf(queue);
    if (s === undefined) return this.#readStats(statsKey(queue)).pending;
    return this.#storedStats(s).pending + s.delta.pending;
  }

  /** The count of `queue`'s jobs in `state` as this transaction leaves it so far (see `pendingCount`). */
  countOf(queue: string, state: Exclude<JobState, "done">): number {
    const s = this.#slotOf(queue);
    if (s === undefined) return countIn(this.#readStats(statsKey(queue)), state);
    return countIn(this.#storedStats(s), state) + countIn(s.delta, state);
  }

  /** The stored stats of a slot's queue, read once per transaction (the stats key is written only by `finish`). */
  #storedStats(s: StatsSlot): Readonly<QueueStats> {
    s.stored ??= this.#readStats(s.key);
    return s.stored;
  }

  /**
   * The stats stored at `key`, decoded unless a transaction over this source
   * wrote the same bytes: known by the stored value's token when a read
   * found those bytes before (most steps read a count no commit changed
   * since), else by comparing the bytes read.
   */
  #readStats(key: string): Readonly<QueueStats> {
    const own = this.#written(key);
    const src = this.src;
    const token = own === undefined && src.valueToken !== undefined ? src.valueToken(key) : undefined;
    const known = written.get(src)?.get(key);
    if (token !== undefined && known !== undefined && known.token === token) return known.stats;
    const stored = own === undefined ? src.get(key) : (own ?? undefined);
    if (stored === undefined || known === undefined || !bytesEqual(known.bytes, stored)) return decodeStats(key, stored);
    known.token = token;
    return known.stats;
  }

  /** Folds the stats deltas into the batch and returns it. Call once, right before commit. */
  finish(): WriteBatch {
    const first = this.#stats;
    if (first === undefined) return this.batch;
    this.#stats = undefined;
    const more = this.#moreStats;
    this.#moreStats = undefined;
    const last = writtenStats(this.src);
    this.#fold(first, last);
    releaseSlot(first);
    if (more !== undefined) {
      for (const s of more.values()) {
        this.#fold(s, last);
        releaseSlot(s);
      }
    }
    return this.batch;
  }

  /**
   * Puts a slot's new counts, unless its moves cancel out. When they are
   * done jobs only (an ack whose follow-up job is inserted claimed: the
   * claimed count is level), a claimed index entry of the queue that this
   * transaction put carries the count instead, and the stats record is not
   * written: readers add what the queue's claimed entries carry, and the
   * settlement that deletes the entry adds it to the stats.
   */
  #fold(s: StatsSlot, last: WrittenStats): void {
    const d = s.delta;
    if (d.pending === 0 && d.scheduled === 0 && d.claimed === 0 && d.dead === 0) {
      if (d.done === 0 || this.#carry(s.queue, d.done)) return;
    }
    const was = this.#storedStats(s);
    const next: QueueStats = {
      pending: was.pending + d.pending,
      scheduled: was.scheduled + d.scheduled,
      claimed: was.claimed + d.claimed,
      done: was.done + d.done,
      dead: was.dead + d.dead,
    };
    const bytes = encodeStats(next);
    last.set(s.key, { bytes, stats: next, token: undefined });
    this.batch.put(s.key, bytes);
  }

  /** Whether an offered entry of `queue`, still the batch's last op on its key, now carries `done`. */
  #carry(queue: string, done: number): boolean {
    const first = this.#carrier;
    if (first === undefined) return false;
    if (this.#carried(first, queue, done)) return true;
    const more = this.#moreCarriers;
    if (more !== undefined) for (const c of more) if (this.#carried(c, queue, done)) return true;
    return false;
  }

  /** Whether `c` is an entry of `queue` still the batch's last op on its key; it then carries `done`. */
  #carried(c: Carrier, queue: string, done: number): boolean {
    // An entry put again or deleted later in the batch would drop the count: only the last op carries.
    if (c.queue !== queue || this.#lastOp(c.op.key) !== c.op) return false;
    const value = encodeCarriedDone(c.claim.carried + done);
    c.op.value = value;
    this.#index?.set(c.op.key, value);
    c.claim.carried += done;
    return true;
  }
}

/**
 * Adds `n` to the count of `state` in `stats`. A store to each named field:
 * one store by computed name serves every field and every stats object, and
 * its inline cache ends megamorphic (three moves per step).
 */
function addToCount(stats: QueueStats, state: JobState, n: number): void {
  switch (state) {
    case "pending":
      stats.pending += n;
      return;
    case "scheduled":
      stats.scheduled += n;
      return;
    case "claimed":
      stats.claimed += n;
      return;
    case "done":
      stats.done += n;
      return;
    case "dead":
      stats.dead += n;
      return;
  }
}

/** The count of `state` in `stats`, read by named field (see `addToCount`). */
function countIn(stats: Readonly<QueueStats>, state: JobState): number {
  switch (state) {
    case "pending":
      return stats.pending;
    case "scheduled":
      return stats.scheduled;
    case "claimed":
      return stats.claimed;
    case "done":
      return stats.done;
    case "dead":
      return stats.dead;
  }
}
