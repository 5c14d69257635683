/**
 * @module A bounded, least-recently-used cache of decoded segment blocks,
 * for the values the engine paged out of memory (see value-pager.ts).
 *
 * Entries are charged their object bytes plus the positions of their
 * entries (see `CachedSegment`). Inserting never evicts at once: trimming to the
 * budget runs on the next macrotask (`setImmediate`), and segments a warm-up
 * just loaded stay pinned until then, so the promise continuation that
 * awaited them (always a microtask, which runs first) finds them cached.
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
}

/** Counters of a `SegmentCache`. */
export interface SegmentCacheStats {
  hits: number;
  misses: number;
  bytes: number;
  segments: number;
}

/** What a cached block of `objectBytes` bytes holding `entries` entries is charged. */
export function segmentCharge(objectBytes: number, entries: number): number {
  return objectBytes + entries * ENTRY_OVERHEAD + BLOCK_OVERHEAD;
}

/** The bounded cache; see the module documentation. */
export class SegmentCache {
  readonly #slots = new Map<string, Slot>();
  readonly #budget: number;
  #bytes = 0;
  #trimScheduled = false;
  hits = 0;
  misses = 0;

  constructor(budgetBytes: number) {
    this.#budget = budgetBytes;
  }

  get stats(): SegmentCacheStats {
    return { hits: this.hits, misses: this.misses, bytes: this.#bytes, segments: this.#slots.size };
  }

  /** The cached segment `name`, marked most recently used; undefined when not cached. */
  get(name: string): CachedSegment | undefined {
    const slot = this.#slots.get(name);
    if (slot === undefined) return undefined;
    this.#slots.delete(name);
    this.#slots.set(name, slot);
    return slot.seg;
  }

  /** Whether `name` is cached, without touching its recency. */
  has(name: string): boolean {
    return this.#slots.has(name);
  }

  /** Caches `seg` pinned once; `unpin` releases it. Replaces an entry of the same name. */
  insertPinned(name: string, seg: CachedSegment): void {
    const old = this.#slots.get(name);
    if (old !== undefined) {
      this.#bytes -= old.seg.bytes;
      this.#slots.delete(name);
    }
    this.#slots.set(name, { seg, pins: (old?.pins ?? 0) + 1 });
    this.#bytes += seg.bytes;
  }

  /** Caches `seg` unpinned unless `name` is cached already; trimming to the budget follows on a later macrotask. */
  insert(name: string, seg: CachedSegment): void {
    if (this.#slots.has(name)) return;
    this.#slots.set(name, { seg, pins: 0 });
    this.#bytes += seg.bytes;
    this.#scheduleTrim();
  }

  /** Pins `name` once more if cached; returns whether it was. */
  pin(name: string): boolean {
    const slot = this.#slots.get(name);
    if (slot !== undefined) slot.pins++;
    return slot !== undefined;
  }

  /** Releases one pin of each name on the next macrotask, then trims to the budget. */
  unpinLater(names: readonly string[]): void {
    setImmediate(() => {
      for (const n of names) {
        const slot = this.#slots.get(n);
        if (slot !== undefined && slot.pins > 0) slot.pins--;
      }
      this.#scheduleTrim();
    });
  }

  /** Drops every entry (pins included). */
  clear(): void {
    this.#slots.clear();
    this.#bytes = 0;
  }

  #scheduleTrim(): void {
    if (this.#trimScheduled || this.#bytes <= this.#budget) return;
    this.#trimScheduled = true;
    setImmediate(() => {
      this.#trimScheduled = false;
      this.#trim();
    });
  }

  #trim(): void {
    for (const [name, slot] of this.#slots) {
      if (this.#bytes <= this.#budget) return;
      if (slot.pins > 0) continue;
      this.#slots.delete(name);
      this.#bytes -= slot.seg.bytes;
    }
  }
}
