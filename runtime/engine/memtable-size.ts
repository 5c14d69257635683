/**
 * @module How many keys the writer's memtable takes before it freezes when
 * the engine chooses (no `memtableKeys` given): see docs/engine.md, "The
 * memtable's size".
 *
 * A write of a key that lives in a key run searches the runs and kills its
 * entry there. When the keys written are a working set rewritten over and
 * over that outgrows the memtable, nearly every write pays that search, and
 * the runs the freezes make die entry by entry before they are merged. When
 * keys are written once (a queue's pending jobs), a larger memtable buys
 * nothing and costs memory. So at each freeze the memtable looks at how
 * many entries frozen within the last few freezes (young ones, which a
 * larger memtable would still have held) the writes since the last freeze
 * killed, against the keys those writes added: many, and it takes eight
 * times its keys; few, and it halves them; never outside its range. It
 * grows in one step because until the working set fits, every write still
 * searches a run: doubling from 32,768 took three more freezes, about
 * 360,000 writes of engine-commit's, at the cost of the size before. And it
 * may grow before the freeze, as soon as an eighth of the memtable's keys
 * were added with twice that share of young kills (a part of the interval
 * must show it plainly): the first pass over a working set looks like keys
 * written once, so only the writes after it can tell, and waiting for the
 * freeze made a whole memtable of them search and kill run entries at the
 * old cost, then froze it. Its bytes are bounded apart
 * from this, by the state (`memtableBytes`).
 *
 * Pure logic: no IO, no clock.
 */

/** The keys a memtable sized by the engine may take before it freezes. */
export interface MemtableRange {
  minKeys: number;
  maxKeys: number;
}

/** The range when not given: from the size before the choice to eight times it (bench/RESULTS.md, "A memtable that sizes itself"). */
export const DEFAULT_MEMTABLE_RANGE: Readonly<MemtableRange> = { minKeys: 32_768, maxKeys: 262_144 };

/**
 * Estimated bytes the memtable holds, past the entries a freeze kept, at
 * which it freezes whatever its keys (the estimate is `entryBytes`'s, about
 * what the heap holds). 64 MiB: a working set of 262,144 keys with values of
 * 64 B takes about 50 MiB.
 */
export const DEFAULT_MEMTABLE_BYTES = 64 * 1024 * 1024;

/** How many times its keys the memtable takes when it grows (the default range's top from its bottom). */
export const GROW_FACTOR = 8;
/** Young entries killed per key added at or above which the memtable grows (a rewritten working set). */
export const GROW_SHARE = 1 / 4;
/** Young entries killed per key added below which the memtable halves (keys written once). */
export const SHRINK_SHARE = 1 / 16;

/** What the writes between two freezes did, as `nextMemtableKeys` weighs it. */
export interface FreezeInterval {
  /** Keys the writes added to the memtable (not in it before). */
  added: number;
  /** Young entries (frozen within the last few freezes) that the writes killed, rewriting or deleting their keys. */
  youngKills: number;
  /** Whether the freeze came from the keys reaching the target (not from the bytes, nor asked for). */
  full: boolean;
}

/**
 * The keys the memtable takes after a freeze, from `keys` before it:
 * `GROW_FACTOR` times as many when a full memtable's writes killed at least `GROW_SHARE` of a
 * young entry per key they added, half when fewer than `SHRINK_SHARE`,
 * within `range`. A freeze by bytes never grows it (more keys would not fit).
 */
export function nextMemtableKeys(keys: number, interval: FreezeInterval, range: MemtableRange): number {
  const within = Number.isNaN(keys) ? range.minKeys : Math.min(range.maxKeys, Math.max(range.minKeys, Math.floor(keys)));
  if (!(interval.added > 0)) return within;
  const share = interval.youngKills / interval.added;
  if (share >= GROW_SHARE && interval.full) return Math.min(range.maxKeys, within * GROW_FACTOR);
  if (share < SHRINK_SHARE) return Math.max(range.minKeys, Math.floor(within / 2));
  return within;
}

/** The share of the memtable's keys added since the last freeze after which the writes' young kills may grow it before the freeze. */
export const EARLY_SHARE = 1 / 8;
/** Young entries killed per key added at or above which the memtable grows before the freeze: twice `GROW_SHARE`, as it weighs part of an interval. */
export const EARLY_GROW_SHARE = 2 * GROW_SHARE;

/**
 * The keys the memtable takes now, before it is full, from `keys`: the
 * grown size of `nextMemtableKeys` once the writes since the last freeze
 * added at least `EARLY_SHARE` of `keys` and killed `EARLY_GROW_SHARE` of a
 * young entry per key they added; otherwise `keys` (within `range`). Never
 * shrinks: that waits for the freeze, which sees the whole interval.
 */
export function earlyMemtableKeys(keys: number, interval: Omit<FreezeInterval, "full">, range: MemtableRange): number {
  const within = nextMemtableKeys(keys, { added: 0, youngKills: 0, full: false }, range);
  if (!(interval.added >= Math.max(1, within * EARLY_SHARE)) || !(interval.youngKills >= interval.added * EARLY_GROW_SHARE)) return within;
  return Math.min(range.maxKeys, within * GROW_FACTOR);
}

/**
 * The share of the grown memtable's keys that runs taken back into it may
 * fill, with the keys it holds (see docs/engine.md, "A grown memtable takes
 * its young runs back"): the rest stays for new keys, so taking a run back
 * does not bring the next freeze near.
 */
export const TAKE_BACK_SHARE = 3 / 4;

/**
 * The share of the grown memtable's keys within whose writes a young run
 * must die, at the rate the writes since the last freeze killed its
 * entries, for the grow to take the young runs back (see docs/engine.md,
 * "A grown memtable takes its young runs back").
 */
export const TAKE_BACK_HORIZON_SHARE = 1 / 4;
/** The least share of the writes since a run was there whose kills fell in it, and the fewest kills, for its kill rate to count (a few kills in a small run say nothing). */
export const TAKE_BACK_KILL_SHARE = 1 / 4;
export const TAKE_BACK_MIN_KILLS = 16;

/**
 * Whether a run with `live` live entries, of which the `writes` keys added
 * to the memtable since it was looked at killed `kills`, dies soon: those
 * kills are at least `TAKE_BACK_KILL_SHARE` of the writes (and
 * `TAKE_BACK_MIN_KILLS`), and at their
 * rate its live entries die within `TAKE_BACK_HORIZON_SHARE` of
 * `memtableKeys` more writes. A pass over a rewritten working set kills
 * its runs one after the other, each within a run's size of writes;
 * sparse rewrites of a large state kill every run slowly, each within
 * about the state's size of writes.
 */
export function runDiesSoon(live: number, kills: number, writes: number, memtableKeys: number): boolean {
  if (!(kills >= TAKE_BACK_MIN_KILLS) || kills < writes * TAKE_BACK_KILL_SHARE) return false;
  return live * writes <= kills * memtableKeys * TAKE_BACK_HORIZON_SHARE;
}

/**
 * About what `entries` live entries of a run of `runEntries` entries in
 * `runBytes` bytes take in the memtable once taken back: `entryBytes` of
 * an entry of the run's average size, its value a string of its bytes
 * (`packed`) or a fresh array.
 */
export function takenBackBytes(entries: number, runEntries: number, runBytes: number, packed: boolean): number {
  return entries * (ENTRY_OVERHEAD + (packed ? STRING_OVERHEAD : ARRAY_OVERHEAD) + runBytes / Math.max(1, runEntries));
}

/** What a memtable value is, for `entryBytes` (the state's `StoredValue`). */
type HeldValue = Uint8Array | { readonly byteLength: number } | string | number;

/** A key's slot in the tree and its string's header, estimated. */
const ENTRY_OVERHEAD = 48;
/** A `Uint8Array`'s object and its backing store's record, beside its bytes. */
const ARRAY_OVERHEAD = 96;
/** An `ArenaValue` object (its bytes sit in a chunk shared with others). */
const ARENA_OVERHEAD = 40;
/** A string's header. */
const STRING_OVERHEAD = 16;

/**
 * About what one memtable entry holds in the heap: its key (one byte per
 * unit, as ASCII keys are held), its value's bytes and objects. An estimate
 * for bounding the memtable, not a measure.
 */
export function entryBytes(key: string, value: HeldValue): number {
  const base = ENTRY_OVERHEAD + key.length;
  if (typeof value === "number") return base;
  if (typeof value === "string") return base + STRING_OVERHEAD + value.length;
  return base + (value instanceof Uint8Array ? ARRAY_OVERHEAD : ARENA_OVERHEAD) + value.byteLength;
}
