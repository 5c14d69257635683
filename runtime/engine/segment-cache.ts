/**
 * @module A bounded, least-recently-used cache of decoded segment blocks,
 * for the values the engine paged out of memory (see value-pager.ts).
 *
 * Entries are charged their object bytes plus the positions of their
 * entries (see `CachedSegment`). Inserting never evicts at once: trimming to the
 * budget runs on the next macrotask (`setImmediate`), and segments a warm-up
 * just loaded stay pinned until then, so the promise continuation that
 * awaited them (always a microtask, which runs first) finds them cached.
 *
 * Blocks read through are set aside: once every entry of a block was read
 * since it was cached, it moves out of the recency order to a small set of
 * spent blocks (an eighth of the budget), trimmed first. An ordered walk,
 * such as a queue drained in order, reads each record once and then
 * rewrites it, so its blocks are never read again: without this they
 * filled the whole budget with dead blocks (32 MiB of a 1M drain's peak).
 * A spent block that is read again goes back to the recency order for good
 * (it is one that readers come back to), so random reads keep their hits.
 */

/** Bytes charged per entry beyond the object bytes: its four positions (see `CachedSegment.at`). */
const ENTRY_OVERHEAD = 16;
/** Bytes charged per cached block beyond its entries: the slot, the object and its two typed arrays. */
const BLOCK_OVERHEAD = 256;

/**
 * One verified segment block: its bytes (a copy of its own) and, per entry
 * with a value, in key order, four numbers: where its key starts in `block`,
 * the key's length, where its value starts, the value's length. No key
 * string and no view is made per entry: a block lives in the cache long
 * enough to reach the old generation, and a string and a view per entry
 * (about 160 B) then died there on eviction, a garbage a drain made for
 * every record it read (see docs/engine.md, "The drain's peak at 1M").
 */
export interface CachedSegment {
  readonly block: Buffer;
  readonly at: Int32Array;
  readonly bytes: number;
}

interface Slot {
  seg: CachedSegment;
  pins: number;
  /** Entries not read since the block was cached; -1 once it was read again after all had been (never set aside again). */
  unread: number;
  /** One bit per entry read since the block was cached; made at the first read. */
  read: Uint8Array | undefined;
}

/** The share of the budget that spent blocks may keep. */
const SPENT_SHARE = 1 / 8;

/** Counters of a `SegmentCache`. */
export interface SegmentCacheStats {
  hits: number;
  misses: number;
  bytes: number;
  segments: number;
  /** Bytes of the blocks set aside as read through (within `bytes`). */
  spentBytes: number;
  /** Blocks set aside as read through since the cache was made. */
  setAside: number;
}

/** What a cached block of `objectBytes` bytes holding `entries` entries is charged. */
export function segmentCharge(objectBytes: number, entries: number): number {
  return objectBytes + entries * ENTRY_OVERHEAD + BLOCK_OVERHEAD;
}

/** The bounded cache; see the module documentation. */
export class SegmentCache {
  /** Blocks in recency order, least recent first. */
  readonly #slots = new Map<string, Slot>();
  /** Blocks read through (see the module documentation), oldest first. */
  readonly #spent = new Map<string, Slot>();
  readonly #budget: number;
  readonly #spentBudget: number;
  #bytes = 0;
  #spentBytes = 0;
  #setAside = 0;
  #trimScheduled = false;
  hits = 0;
  misses = 0;

  constructor(budgetBytes: number) {
    this.#budget = budgetBytes;
    this.#spentBudget = Math.floor(budgetBytes * SPENT_SHARE);
  }

  get stats(): SegmentCacheStats {
    return {
      hits: this.hits,
      misses: this.misses,
      bytes: this.#bytes,
      segments: this.#slots.size + this.#spent.size,
      spentBytes: this.#spentBytes,
      setAside: this.#setAside,
    };
  }

  /** The cached segment `name`, marked most recently used; undefined when not cached. A spent block read again goes back to the recency order for good. */
  get(name: string): CachedSegment | undefined {
    let slot = this.#slots.get(name);
    if (slot !== undefined) {
      this.#slots.delete(name);
    } else {
      slot = this.#spent.get(name);
      if (slot === undefined) return undefined;
      this.#spent.delete(name);
      this.#spentBytes -= slot.seg.bytes;
      slot.unread = -1;
      slot.read = undefined;
    }
    this.#slots.set(name, slot);
    return slot.seg;
  }

  /**
   * Entry `entry` of the cached block `name` was read. The first read of
   * its last unread entry sets the block aside as spent (see the module
   * documentation); trimming follows on a later macrotask.
   */
  noteRead(name: string, entry: number): void {
    const slot = this.#slots.get(name);
    if (slot === undefined || slot.unread <= 0) return;
    slot.read ??= new Uint8Array((slot.unread + 7) >>> 3);
    const bit = 1 << (entry & 7);
    const at = entry >>> 3;
    if ((slot.read[at]! & bit) !== 0) return;
    slot.read[at]! |= bit;
    if (--slot.unread > 0) return;
    slot.read = undefined;
    this.#slots.delete(name);
    this.#spent.set(name, slot);
    this.#spentBytes += slot.seg.bytes;
    this.#setAside++;
    this.#scheduleTrim();
  }

  /** Whether `name` is cached, without touching its recency. */
  has(name: string): boolean {
    return this.#slots.has(name) || this.#spent.has(name);
  }

  /** Caches `seg` pinned once; `unpin` releases it. Replaces an entry of the same name. */
  insertPinned(name: string, seg: CachedSegment): void {
    const old = this.#slots.get(name) ?? this.#spent.get(name);
    if (old !== undefined) this.#drop(name, old);
    this.#slots.set(name, { seg, pins: (old?.pins ?? 0) + 1, unread: entriesOf(seg), read: undefined });
    this.#bytes += seg.bytes;
  }

  /** Caches `seg` unpinned unless `name` is cached already; trimming to the budget follows on a later macrotask. */
  insert(name: string, seg: CachedSegment): void {
    if (this.has(name)) return;
    this.#slots.set(name, { seg, pins: 0, unread: entriesOf(seg), read: undefined });
    this.#bytes += seg.bytes;
    this.#scheduleTrim();
  }

  /** Pins `name` once more if cached; returns whether it was. */
  pin(name: string): boolean {
    const slot = this.#slots.get(name) ?? this.#spent.get(name);
    if (slot !== undefined) slot.pins++;
    return slot !== undefined;
  }

  /** Releases one pin of each name on the next macrotask, then trims to the budget. */
  unpinLater(names: readonly string[]): void {
    setImmediate(() => {
      for (const n of names) {
        const slot = this.#slots.get(n) ?? this.#spent.get(n);
        if (slot !== undefined && slot.pins > 0) slot.pins--;
      }
      this.#scheduleTrim();
    });
  }

  /** Drops every entry (pins included). */
  clear(): void {
    this.#slots.clear();
    this.#spent.clear();
    this.#bytes = 0;
    this.#spentBytes = 0;
  }

  /** Removes `name` (held in `slot`) from whichever part holds it. */
  #drop(name: string, slot: Slot): void {
    this.#bytes -= slot.seg.bytes;
    if (this.#spent.delete(name)) this.#spentBytes -= slot.seg.bytes;
    else this.#slots.delete(name);
  }

  #scheduleTrim(): void {
    if (this.#trimScheduled || (this.#bytes <= this.#budget && this.#spentBytes <= this.#spentBudget)) return;
    this.#trimScheduled = true;
    setImmediate(() => {
      this.#trimScheduled = false;
      this.#trim();
    });
  }

  #trim(): void {
    // Spent blocks go first: beyond their share, and while the whole is over the budget.
    for (const [name, slot] of this.#spent) {
      if (this.#spentBytes <= this.#spentBudget && this.#bytes <= this.#budget) break;
      if (slot.pins === 0) this.#drop(name, slot);
    }
    for (const [name, slot] of this.#slots) {
      if (this.#bytes <= this.#budget) return;
      if (slot.pins === 0) this.#drop(name, slot);
    }
  }
}

/** The entries of a cached block that hold a value (see `CachedSegment.at`). */
const entriesOf = (seg: CachedSegment): number => seg.at.length / 4;
