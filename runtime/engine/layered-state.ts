/**
 * @module The writer's (and a reader's) in-memory state: a memtable of
 * recently written keys over immutable compact runs (key-run.ts), behind the
 * operations the engine uses (see docs/engine.md, "Stage 2b").
 *
 * Invariant: a key lives in at most one place, the memtable or one run.
 * Writing or deleting a key that lives in a run marks its entry dead, so a
 * read asks the memtable and then each run, and a scan merges the live
 * entries of all of them with no tombstones to resolve.
 *
 * Runs merge a slice at a time (run-merge.ts): each write copies a few
 * entries of the merge in progress, and idle turns (`setImmediate`) copy
 * more; the inputs stay the readable copy of their keys until the merge ends
 * and its output replaces them in one step. When more than `maxRuns` runs
 * exist, a merge of the smallest is started and copied in slices like any
 * other; only when writes add runs so fast that `mergeRatio` more pile up
 * past `maxRuns` does the write that adds one finish merges synchronously
 * (`addRun`, which open calls with no writes to pace a merge, does so past
 * `maxRuns`). Finishing them at `maxRuns` blocked a 10M-job fill's writes
 * for seconds: the runs by then are millions of entries each.
 *
 * A freeze moves the memtable aside as a frozen table (frozen-memtable.ts),
 * read below the new memtable and above the runs, and copies it into a run
 * a slice at a time with the merges' writes and idle turns; the run
 * replaces it when done. A freeze while one is still copied, a snapshot, and
 * the open's calls finish it first.
 *
 * The memtable freezes at `memtableKeys` keys when given; otherwise at a
 * size chosen at each freeze (memtable-size.ts) from how many young run
 * entries the writes killed; and whatever its keys, at an estimated
 * `memtableBytes`. When it grows, and once the writes kill one of its
 * young runs fast enough for it to die soon (`runDiesSoon`), it takes the
 * young runs that fit back (run-take-back.ts), a slice with each write, so
 * the rewrites of their keys find them in the memtable instead of searching
 * and killing them in the runs, and no merge copies entries about to die.
 * While a grow is possible, merges wait after a freeze until the writes
 * have been looked at once (an eighth of the memtable's keys): a first
 * pass's runs are taken back, not merged first.
 *
 * Pure data structure: no IO. Never mutate while iterating a `scan` (a
 * merge step is not a mutation: it changes no entry a scan sees).
 */
import { compareKeys } from "../store/keys.js";
import { FrozenMemtable } from "./frozen-memtable.js";
import { BLOCK_ENTRIES, isWellFormed, KeyBytes, type KeyRun, RunCursor, RunReverseCursor, SPAN_HELD, type ValueSpan } from "./key-run.js";
import { MAX_PACKED_BYTES, packedBytes, type StoredValue } from "./paged-value.js";
import type { HeadedKey } from "./key-family.js";
import type { KeyHeads } from "./key-heads.js";
import { Memtable } from "./memtable.js";
import {
  DEFAULT_MEMTABLE_BYTES,
  DEFAULT_MEMTABLE_RANGE,
  EARLY_SHARE,
  earlyMemtableKeys,
  entryBytes,
  type MemtableRange,
  nextMemtableKeys,
  runDiesSoon,
  TAKE_BACK_SHARE,
  takenBackBytes,
} from "./memtable-size.js";
import { type Layer, layerOf, pickMerge, RunMerge } from "./run-merge.js";
import { RunTakeBack, type TakeEntry } from "./run-take-back.js";
import { SnapshotMerge } from "./snapshot-merge.js";
import { type OrderedEntries, type OrderedSource, scanOrdered, scanTree, type ScanOptions } from "./scan.js";

/** Whether a memtable entry must stay in the memtable when it freezes (a value a checkpoint still has to page by identity). */
export type HoldInMemtable = (key: string, value: StoredValue) => boolean;

/** Options of a `LayeredState`. */
export interface LayeredStateOptions {
  /** Values that stay in the memtable when it freezes. */
  hold?: HoldInMemtable;
  /** Memtable keys that trigger a freeze, always. Default: chosen within `memtableRange` (memtable-size.ts). */
  memtableKeys?: number;
  /** Where the memtable's map splits its trees (key-heads.ts). Default: by first code unit. */
  keyHeads?: KeyHeads;
  /** Without `memtableKeys`, the keys the memtable's size is chosen within. Default 32,768 to 262,144. */
  memtableRange?: MemtableRange;
  /** Estimated memtable bytes (past the entries a freeze kept) that trigger a freeze, whatever its keys. Default 64 MiB. */
  memtableBytes?: number;
  /** Runs of one tier (live entries within a factor of this) merge when this many share it. Default 4. */
  mergeRatio?: number;
  /**
   * Entries of the merge in progress each write copies, at least (more when
   * the merge would otherwise not end before the memtable fills twice).
   * Default 16. Infinity: a merge runs whole inside the write that starts it.
   */
  writeSlice?: number;
  /** Entries copied per idle turn (`setImmediate`) while a merge is in progress; 0: none. Default 16,384. */
  idleSlice?: number;
  /**
   * More runs than this start a merge of the smallest (copied in slices);
   * `mergeRatio` more make the write that adds one finish merges
   * synchronously, and so does `addRun` past this. Default 24.
   */
  maxRuns?: number;
  /**
   * Largest run a tier merge aims to make: runs of more than this over
   * `mergeRatio` live entries take part in none (they are still rewritten
   * alone when more than half dead). Bounds what a merge holds besides the
   * state (its output, about its inputs' bytes) instead of letting the last
   * merge of a large state double it. Default 2,097,152 (tier merges stop
   * at runs of about 2M keys, 40 MB for pending jobs); Infinity: no bound.
   */
  maxMergeEntries?: number;
}

/** The keys of a state at one moment (`LayeredState.keysSnapshot`), read in key order within bounds. */
export interface KeysSnapshot {
  keys(opts?: ScanOptions): IterableIterator<string>;
}

/** A consistent, ordered copy of the state at one moment (for a full checkpoint); iterable more than once. */
export interface StateSnapshot {
  entries(): IterableIterator<[string, StoredValue]>;
  /** The memtable's entries at that moment, in key order: the only place a caller's array is held (runs hold copies). */
  memtableEntries(): IterableIterator<[string, StoredValue]>;
}

/** A whole number of at least `min` (Infinity allowed), or `fallback` when `v` is absent or not a number. */
function countOption(v: number | undefined, fallback: number, min: number): number {
  if (v === undefined || Number.isNaN(v)) return fallback;
  return Math.max(min, Math.floor(v));
}

/**
 * Freezes back within which a run's entries count as young when a write
 * kills them: a memtable this many times larger would have held them.
 */
const YOUNG_FREEZES = 8;

/**
 * Entries of a frozen memtable copied per idle turn, at most (`idleSlice`
 * when smaller): a run's entry costs several times a merge's to copy (its
 * key's filter hash and front coding), and a slice should stay well under
 * 20 ms on a quiet core.
 */
const FREEZE_IDLE_SLICE = 8_192;

/**
 * The fraction of the next memtable's writes within which a frozen
 * memtable is copied into its run, at the least: a quarter, so the merges
 * that wait for its run have the rest of the interval.
 */
const FREEZE_COPY_SHARE = 1 / 4;

/**
 * The fraction of the grown memtable's keys within whose writes the young
 * runs are taken back into it, at the most: each write of a key not yet
 * taken back still searches and kills it in its run, so the sooner the
 * better, as long as one write's share stays small (30 entries for
 * engine-commit's 121,000 taken back into 262,144 keys).
 */
const TAKE_BACK_WRITES_SHARE = 1 / 64;
/** Entries each write takes back, at least, while runs are taken back. */
const TAKE_BACK_WRITE_SLICE = 16;

/** `memtableRange` checked: whole numbers, at least 1, the larger at least the smaller; the default when absent or not numbers. */
function rangeOption(range: MemtableRange | undefined): MemtableRange {
  if (range === undefined) return DEFAULT_MEMTABLE_RANGE;
  const minKeys = countOption(range.minKeys, DEFAULT_MEMTABLE_RANGE.minKeys, 1);
  return { minKeys, maxKeys: Math.max(minKeys, countOption(range.maxKeys, DEFAULT_MEMTABLE_RANGE.maxKeys, 1)) };
}

/** The layered map: see the module documentation. */
export class LayeredState {
  #mem: Memtable<StoredValue>;
  /** The memtable the last freeze moved aside, until its run is made; below `#mem`, above the runs. */
  #frozen: FrozenMemtable | undefined;
  /** Entries of `#frozen` each write copies (it ends within `FREEZE_COPY_SHARE` of the memtable's keys' writes). */
  #frozenPace = 0;
  /** Oldest first; each holds at least one live entry, except inputs of the merge in progress. */
  #layers: Layer[] = [];
  readonly #hold: HoldInMemtable | undefined;
  /** Memtable keys (past those a freeze kept) that trigger a freeze now. */
  #memtableKeys: number;
  /** Where `#memtableKeys` is chosen at each freeze; undefined: it is fixed. */
  readonly #range: MemtableRange | undefined;
  readonly #memtableBytes: number;
  /** At least the memtable's estimated bytes (`entryBytes`): sets add to it, nothing takes away until a recount. */
  #bytes = 0;
  /** The estimated bytes of the entries the last freeze kept. */
  #heldBytes = 0;
  /** New memtable keys since the last freeze, and young entries (of runs made within `YOUNG_FREEZES` freezes) killed since then (see memtable-size.ts). */
  #added = 0;
  #youngKills = 0;
  /** `#added` at which the writes' young kills are weighed before the freeze (`earlyMemtableKeys`); Infinity when the size is fixed. */
  #earlyAt = Infinity;
  /**
   * Writes left before merges may start (while the runs are within
   * `maxRuns`), counted from a freeze after which the memtable may still
   * grow: until the interval's first look at its writes' young kills
   * (`#growEarly`). 0: merges start when due.
   */
  #mergeHold = 0;
  /**
   * The freeze (by `counters.freezes`) that made each run made by freezes,
   * or for a merge of such runs only, the oldest input's; runs read at open
   * and merges with one are not here.
   */
  readonly #frozenBy = new Map<Layer, number>();
  readonly #ratio: number;
  readonly #writeSlice: number;
  readonly #idleSlice: number;
  readonly #maxRuns: number;
  readonly #maxMergeEntries: number;
  /** Runs past which a freeze finishes merges synchronously: `maxRuns` and the runs one merge takes (`mergeRatio`, at most `maxRuns` more). */
  readonly #mostRuns: number;
  #freezeAt: number;
  /** Memtable keys the last freeze kept (held ones). */
  #heldAtFreeze = 0;
  #merge: RunMerge | undefined;
  /** Young runs being taken back into the memtable after it grew; merges leave them alone meanwhile. */
  #takeBack: RunTakeBack | undefined;
  /** Entries of `#takeBack` each write takes back. */
  #takeBackPace = 0;
  /** Set when the memtable grew while a frozen memtable was still copied: the take-back starts once its run is made. */
  #takeBackDue = false;
  /** `#added` at which a grow whose young runs were not dying soon looks at them again; Infinity: not looking (until a grow). */
  #takeBackLookAt = Infinity;
  /**
   * Young entries each young run lost to kills since the last freeze, and
   * `#added` when it came (0: there at the freeze): the kill rate by which
   * a grow tells a rewritten working set's runs (`runDiesSoon`). Kept only
   * when the state sizes the memtable (it grows only then).
   */
  readonly #runKills = new Map<Layer, { kills: number; from: number }>();
  readonly #takeEntry: TakeEntry = (layer, index, key, valueAt) => this.#take(layer, index, key, valueAt);
  /** The least a write copies of the merge in progress (set past `maxRuns`, see `#work`); 0: none. */
  #pace = 0;
  #idle: ReturnType<typeof setImmediate> | undefined;
  /** Set by `stopIdleMerges`: no more idle turns (the state was dropped). */
  #idleStopped = false;
  readonly #kb = new KeyBytes();
  readonly #found = { valueAt: 0 };
  readonly #span: ValueSpan = { kind: SPAN_HELD, bytes: undefined, at: 0, len: 0 };
  #foundIndex = -1;
  /**
   * Counters, for benchmarks and tests: freezes, merges (of two runs or
   * more) and rewrites (of one run) started, synchronous catch-ups, and the
   * entries and bytes written by freezes and by merges.
   */
  /** `heldListed`: held entries freezes listed to rebuild the memtable from them (see `freeze`). */
  /** `grows`, `shrinks`: changes of the memtable's size (`earlyGrows`: grows before a freeze, of `grows`); `byteFreezes`: freezes its bytes made; `recounts`: walks of it to count its bytes. */
  /** `takeBacks`: grows that took young runs back; `takenBack`: entries they moved into the memtable; `droppedMerges`: merges dropped as a take-back emptied all their inputs. */
  readonly counters = {
    freezes: 0,
    merges: 0,
    rewrites: 0,
    catchUps: 0,
    frozenEntries: 0,
    frozenBytes: 0,
    mergedEntries: 0,
    mergedBytes: 0,
    heldListed: 0,
    grows: 0,
    earlyGrows: 0,
    shrinks: 0,
    byteFreezes: 0,
    recounts: 0,
    takeBacks: 0,
    takenBack: 0,
    droppedMerges: 0,
  };

  constructor(opts: LayeredStateOptions = {}) {
    this.#mem = new Memtable<StoredValue>(opts.keyHeads);
    this.#hold = opts.hold;
    const fixed = opts.memtableKeys !== undefined && !Number.isNaN(opts.memtableKeys);
    this.#range = fixed ? undefined : rangeOption(opts.memtableRange);
    this.#memtableKeys = fixed ? countOption(opts.memtableKeys, 0, 1) : this.#range!.minKeys;
    this.#memtableBytes = countOption(opts.memtableBytes, DEFAULT_MEMTABLE_BYTES, 1);
    this.#ratio = countOption(opts.mergeRatio, 4, 2);
    this.#writeSlice = countOption(opts.writeSlice, 16, 1);
    this.#idleSlice = countOption(opts.idleSlice, 16_384, 0);
    this.#maxRuns = countOption(opts.maxRuns, 24, 2);
    this.#maxMergeEntries = countOption(opts.maxMergeEntries, 2_097_152, 2);
    this.#mostRuns = this.#maxRuns + Math.min(this.#ratio, this.#maxRuns);
    this.#freezeAt = this.#memtableKeys;
    this.#earlyAt = this.#nextEarly();
  }

  /** Where the memtable's map splits its trees now: the heads of the tables made from here on. */
  get keyHeads(): KeyHeads {
    return this.#mem.heads;
  }

  /**
   * Splits the memtable's trees at `heads` from now on: the memtable is
   * built again with them at once (O(n) in its keys, once per change of the
   * heads, as a freeze's held entries are), and the tables after it take
   * them from it. A frozen memtable keeps the heads it has: it is only read
   * until its run is made. Nothing stored depends on the heads.
   */
  setKeyHeads(heads: KeyHeads): void {
    if (heads !== this.#mem.heads) this.#mem = this.#mem.withHeads(heads);
  }

  /** Keys with a value. */
  get size(): number {
    let n = this.#mem.size + (this.#frozen?.size ?? 0);
    for (const l of this.#layers) n += l.live.live;
    return n;
  }

  /** Memtable keys (past those the last freeze kept) at which it freezes now. */
  get memtableTarget(): number {
    return this.#memtableKeys;
  }

  /** Runs the state is layered in now (besides the memtable). */
  get runCount(): number {
    return this.#layers.length;
  }

  /**
   * Memtable keys, live entries and bytes per run (oldest first), the runs
   * the merge in progress reads and the entries it has left to copy, and the
   * entries of a frozen memtable left to copy into its run.
   */
  get layout(): { memtableKeys: number; runs: { live: number; entries: number; bytes: number }[]; merging: number; mergeRemaining: number; frozen: number } {
    return {
      frozen: this.#frozen?.remaining ?? 0,
      memtableKeys: this.#mem.size,
      runs: this.#layers.map((l) => ({ live: l.live.live, entries: l.run.count, bytes: l.run.memoryBytes })),
      merging: this.#merge?.inputs.length ?? 0,
      mergeRemaining: this.#merge?.remaining ?? 0,
    };
  }

  /** The index in `#layers` of the run holding `key` live, or -1; sets `#found` and `#foundIndex`. */
  #locate(key: string): number {
    const layers = this.#layers;
    // No stored key has a lone surrogate (UTF-8 cannot hold one), and its bytes would not be its own.
    if (layers.length === 0 || !isWellFormed(key)) return -1;
    // Encoded for the first run whose bounds may hold it: a new key past every run's is never encoded.
    let kb: KeyBytes | undefined;
    for (let i = layers.length - 1; i >= 0; i--) {
      const l = layers[i]!;
      if (l.run.outside(key)) continue;
      kb ??= this.#kb.set(key);
      const index = l.run.findInside(key, kb, this.#found);
      if (index >= 0 && !l.live.isDead(index)) {
        this.#foundIndex = index;
        return i;
      }
    }
    return -1;
  }

  /** `#locate` of the key in `kb` (a key from a segment's bytes, no string made): each run finds it by its bytes alone. */
  #searchBytes(kb: KeyBytes): number {
    const layers = this.#layers;
    for (let i = layers.length - 1; i >= 0; i--) {
      const l = layers[i]!;
      const index = l.run.findBytes(kb, this.#found);
      if (index >= 0 && !l.live.isDead(index)) {
        this.#foundIndex = index;
        return i;
      }
    }
    return -1;
  }

  /** The stored value of `key`, or undefined. Held bytes from a run come back as a fresh array. `hint`: see `Memtable.set`. */
  get(key: string, hint?: HeadedKey): StoredValue | undefined {
    const v = this.#mem.get(key, hint) ?? this.#frozen?.get(key, hint);
    if (v !== undefined) return v;
    const i = this.#locate(key);
    return i < 0 ? undefined : this.#layers[i]!.run.value(this.#found.valueAt);
  }

  /** Whether `key` has a value. */
  has(key: string): boolean {
    // `get`, not the tree's `has` (a range walk): no stored value is undefined.
    return this.#mem.get(key) !== undefined || this.#frozen?.get(key) !== undefined || this.#locate(key) >= 0;
  }

  /** Sets `key` (in the memtable; an entry of it in a run dies); false when it had no value. `ascii`, `hint`: see `Memtable.set`. */
  set(key: string, value: StoredValue, ascii = false, hint?: HeadedKey): boolean {
    this.#bytes += entryBytes(key, value);
    let had = true;
    if (this.#mem.set(key, value, ascii, hint)) {
      this.#added++;
      had = this.#killInRuns(key, hint);
      if (this.#mem.size >= this.#freezeAt) this.#freeze(true);
      else if (this.#added >= this.#earlyAt) this.#growEarly();
      else if (this.#added >= this.#takeBackLookAt) this.#takeBackAfterGrow();
    }
    if (this.#bytes - this.#heldBytes >= this.#memtableBytes) this.#recount();
    this.#work();
    return had;
  }

  /** `#added` at which `#growEarly` next weighs the writes: an eighth of the memtable's keys on. */
  #nextEarly(): number {
    return this.#range === undefined ? Infinity : this.#added + Math.max(1, Math.ceil(this.#memtableKeys * EARLY_SHARE));
  }

  /**
   * Grows the memtable now, without a freeze, when the writes since the
   * last one killed enough young entries (`earlyMemtableKeys`): a rewritten
   * working set is told apart an eighth of a memtable into the pass after
   * its first, not a whole memtable and a freeze later.
   */
  #growEarly(): void {
    const before = this.#memtableKeys;
    const next = earlyMemtableKeys(before, { added: this.#added, youngKills: this.#youngKills }, this.#range!);
    if (next > before) {
      this.#memtableKeys = next;
      this.#freezeAt = this.#heldAtFreeze + next;
      this.counters.grows++;
      this.counters.earlyGrows++;
      this.#takeBackAfterGrow();
    }
    this.#earlyAt = this.#nextEarly();
  }

  /** Takes the young runs back now, or once the frozen memtable's run is made (so it is taken back too). */
  #takeBackAfterGrow(): void {
    if (this.#frozen !== undefined) this.#takeBackDue = true;
    else this.#startTakeBack();
  }

  /**
   * Starts taking back into the memtable the runs made by the last
   * `YOUNG_FREEZES` freezes, newest first, as many as fit with the keys it
   * holds within `TAKE_BACK_SHARE` of its keys and half its bytes (see
   * run-take-back.ts): after a grow for a rewritten working set they hold
   * the rest of it. Only when one of them dies soon; otherwise looks again
   * after `TAKE_BACK_WRITES_SHARE` of the memtable's keys are added, until
   * the next freeze.
   */
  #startTakeBack(): void {
    this.#takeBackDue = false;
    this.#takeBackLookAt = Infinity;
    if (this.#takeBack !== undefined) return;
    // Sparse rewrites of a large young state grow the memtable too, but their entries would sit in it
    // until its next freeze: only a run dying soon says the young runs are a working set rewritten.
    if (!this.#youngRunDying()) {
      this.#takeBackLookAt = this.#added + Math.max(1, Math.ceil(this.#memtableKeys * TAKE_BACK_WRITES_SHARE));
      return;
    }
    let room = this.#heldAtFreeze + Math.floor(this.#memtableKeys * TAKE_BACK_SHARE) - this.#mem.size;
    let bytes = this.#memtableBytes / 2 - (this.#bytes - this.#heldBytes);
    const pick: Layer[] = [];
    let entries = 0;
    for (let i = this.#layers.length - 1; i >= 0; i--) {
      const l = this.#layers[i]!;
      const by = this.#frozenBy.get(l);
      if (by === undefined || this.counters.freezes - by > YOUNG_FREEZES) continue;
      const live = l.live.live;
      const b = takenBackBytes(live, l.run.count, l.run.bytes.length, this.#hold === undefined);
      if (live > room || b > bytes) continue;
      pick.push(l);
      room -= live;
      bytes -= b;
      entries += live;
    }
    if (pick.length === 0) return;
    // The runs the writes kill fastest first: each of their entries not yet taken back costs its rewrite a search.
    pick.sort((a, b) => (this.#runKills.get(b)?.kills ?? 0) - (this.#runKills.get(a)?.kills ?? 0));
    this.counters.takeBacks++;
    this.#takeBack = new RunTakeBack(pick);
    this.#takeBackPace = Math.max(TAKE_BACK_WRITE_SLICE, Math.ceil(entries / Math.max(1, this.#memtableKeys * TAKE_BACK_WRITES_SHARE)));
    if (this.#writeSlice === Infinity) this.#stepTakeBack(Infinity);
  }

  /** Whether a young run dies soon at the rate the writes since the last freeze killed it (`runDiesSoon`). */
  #youngRunDying(): boolean {
    for (const l of this.#layers) {
      const seen = this.#runKills.get(l);
      if (seen === undefined) continue;
      if (runDiesSoon(l.live.live, seen.kills, this.#added - seen.from, this.#memtableKeys)) return true;
    }
    return false;
  }

  /** Counts a kill of a young entry of `layer` for `#youngRunDying`. */
  #countRunKill(layer: Layer): void {
    const seen = this.#runKills.get(layer);
    if (seen !== undefined) seen.kills++;
    else this.#runKills.set(layer, { kills: 1, from: 0 });
  }

  /** Takes back up to `entries` entries; ends the take-back when none is left. */
  #stepTakeBack(entries: number): void {
    const takeBack = this.#takeBack!;
    const done = takeBack.step(entries, this.#takeEntry);
    // A freeze by bytes ends the take-back (`#freeze`): what it moved so far goes with the freeze.
    if (this.#bytes - this.#heldBytes >= this.#memtableBytes) this.#recount();
    if (done && this.#takeBack === takeBack) this.#endTakeBack();
  }

  /**
   * Moves a run entry the take-back walked into the memtable and marks it
   * dead in its run; an entry `hold` would keep in the memtable stays in its
   * run (a value read from a run is a fresh array, which no checkpoint pages out).
   */
  #take(layer: Layer, index: number, key: string, valueAt: number): void {
    const value = this.#hold === undefined ? this.#packedValue(layer.run, valueAt) : layer.run.value(valueAt);
    if (this.#hold?.(key, value)) return;
    this.#mem.set(key, value);
    this.#bytes += entryBytes(key, value);
    layer.live.kill(index, Math.floor(index / BLOCK_ENTRIES));
    this.counters.takenBack++;
    if (layer.input >= 0) this.#merge!.killed(layer.input, index);
    else if (layer.live.live === 0) this.#dropLayer(layer);
  }

  /**
   * The value stored at `valueAt` in `run`, to be held in the memtable of a
   * state that holds no value back (no `hold`): held bytes up to
   * `MAX_PACKED_BYTES` packed into a string, as a paging engine holds its
   * values. A fresh array per entry cost a take-back about a third of its
   * CPU, most of it the collector copying the arrays as they survived.
   */
  #packedValue(run: KeyRun, valueAt: number): StoredValue {
    const span = this.#span;
    if (run.valueSpan(valueAt, span) === SPAN_HELD && span.len <= MAX_PACKED_BYTES) return packedBytes(span.bytes!, span.at, span.len);
    return run.value(valueAt);
  }

  /** Removes `layer`, which has no live entry, from the runs (`at`: its index there, when known). */
  #dropLayer(layer: Layer, at = this.#layers.indexOf(layer)): void {
    if (at >= 0) this.#layers.splice(at, 1);
    this.#frozenBy.delete(layer);
    this.#runKills.delete(layer);
  }

  /** The take-back walked every run: a merge whose inputs it emptied is dropped, and merges go on. */
  #endTakeBack(): void {
    this.#takeBack = undefined;
    const merge = this.#merge;
    if (merge?.inputs.every((l) => l.live.live === 0)) {
      this.#merge = undefined;
      this.#pace = 0;
      this.counters.droppedMerges++;
      for (const l of merge.inputs) this.#dropLayer(l);
    }
    if (this.#merge === undefined) this.#startMerges();
    else this.#scheduleIdle();
  }

  /**
   * The estimate `#bytes` reached the bound: counts the memtable's bytes
   * again (rewrites and deletes only ever added to the estimate), and
   * freezes when they are past half the bound. So a recount comes after at
   * least half the bound's bytes of writes, and its walk, of at most that
   * many entries' bytes, costs each write a bounded share.
   */
  #recount(): void {
    this.counters.recounts++;
    let bytes = 0;
    this.#mem.tree.forEachPair((k, v) => {
      bytes += entryBytes(k, v);
    });
    this.#bytes = bytes;
    if (bytes - this.#heldBytes < this.#memtableBytes / 2) return;
    this.counters.byteFreezes++;
    this.#freeze(false);
  }

  /** Deletes `key`; false when it had no value. `hint`: see `Memtable.set`. */
  delete(key: string, hint?: HeadedKey): boolean {
    const had = this.#mem.delete(key, hint) || this.#killInRuns(key, hint);
    this.#work();
    return had;
  }

  /** Whether the memtable holds exactly `value` (by identity) for `key`; a run never holds a caller's array. */
  holds(key: string, value: StoredValue): boolean {
    return this.#mem.get(key) === value;
  }

  /**
   * Replaces the value of `key` with `next` when the memtable holds exactly
   * `expected` for it (arrays by identity); false otherwise. Runs are never
   * changed in place (a checkpoint pages out what the memtable holds).
   */
  replaceIf(key: string, expected: StoredValue, next: StoredValue): boolean {
    if (this.#mem.get(key) !== expected) return false;
    this.#mem.replace(key, next);
    return true;
  }

  /** Marks the run entry of `key` dead (or takes it from the frozen memtable, whose entries are the youngest); false when no run holds it live. */
  #killInRuns(key: string, hint?: HeadedKey): boolean {
    if (this.#frozen?.kill(key, hint)) {
      this.#youngKills++;
      return true;
    }
    return this.#killLocated(this.#locate(key));
  }

  /** Marks dead the entry `#locate` found in layer `i` (none when -1). */
  #killLocated(i: number): boolean {
    if (i < 0) return false;
    const l = this.#layers[i]!;
    const index = this.#foundIndex;
    l.live.kill(index, Math.floor(index / BLOCK_ENTRIES));
    const by = this.#frozenBy.get(l);
    if (by !== undefined && this.counters.freezes - by <= YOUNG_FREEZES) {
      this.#youngKills++;
      if (this.#range !== undefined) this.#countRunKill(l);
    }
    if (l.input >= 0) this.#merge!.killed(l.input, index);
    else if (l.live.live === 0) this.#dropLayer(l, i);
    else if (this.#merge === undefined && l.live.live * 2 < l.run.count && (l.live.live + 1) * 2 >= l.run.count) this.#startMerges();
    return true;
  }

  /**
   * Moves the memtable's entries into a new run (except those `hold` keeps),
   * whole before it returns, then starts a merge if one is due (see `addRun`).
   */
  freeze(): void {
    this.#freeze(false);
    this.#finishFrozen();
  }

  /**
   * `freeze`, its run copied in later slices (whole when `writeSlice` is
   * Infinity); `full` when the memtable reached its keys (the only freeze
   * after which it may grow).
   */
  #freeze(full: boolean): void {
    this.#finishFrozen();
    // The memtable filled (or its bytes did) before the take-back ended: what is left stays in the runs.
    if (this.#takeBack !== undefined) this.#endTakeBack();
    this.#takeBackDue = false;
    this.#takeBackLookAt = Infinity;
    const mem = this.#mem;
    const hold = this.#hold;
    // The pass lists nothing: it counts, and a second pass lists the smaller side into arrays of
    // their exact size. Listing both sides each time made arrays of every entry (about 150,000 per
    // freeze in a 1M fill), grown by copies in the large-object space, of which one side was never read.
    let held = 0;
    let moved = 0;
    let heldBytes = 0;
    if (hold !== undefined)
      mem.tree.forEachPair((k, v) => {
        if (hold(k, v)) {
          held++;
          heldBytes += entryBytes(k, v);
        } else moved++;
      });
    else moved = mem.size;
    // What moves becomes the frozen table: the old table itself when it keeps nothing or more moved than
    // stayed (the held then go to a new table built at once, and leave the old one); otherwise a table of
    // what moved, built at once, and what moved leaves the old one (a replay can leave far more held than moved).
    let frozen: Memtable<StoredValue>;
    if (held === 0) {
      frozen = mem;
      this.#mem = new Memtable<StoredValue>(mem.heads);
    } else if (held < moved) {
      const [keys, values] = listWhere(mem, hold!, true, held);
      this.#mem = Memtable.fromSorted(keys, values, mem.heads);
      for (const k of keys) mem.delete(k);
      frozen = mem;
      this.counters.heldListed += held;
    } else {
      const [keys, values] = listWhere(mem, hold!, false, moved);
      for (const k of keys) mem.delete(k);
      frozen = Memtable.fromSorted(keys, values, mem.heads);
    }
    this.#heldAtFreeze = this.#mem.size;
    this.#heldBytes = heldBytes;
    this.#bytes = heldBytes;
    const before = this.#memtableKeys;
    this.#resize(full);
    this.#freezeAt = this.#heldAtFreeze + this.#memtableKeys;
    this.#earlyAt = this.#nextEarly();
    // One more than the writes to the look: the write that freezes counts one, and the look comes in the write after them.
    this.#mergeHold = this.#range !== undefined && this.#memtableKeys < this.#range.maxKeys ? this.#earlyAt - this.#added + 1 : 0;
    this.counters.freezes++;
    const grew = this.#memtableKeys > before;
    if (frozen.size === 0) {
      if (grew) this.#startTakeBack();
      return;
    }
    this.#takeBackDue = grew;
    this.#frozen = new FrozenMemtable(frozen, this.counters.freezes);
    this.#frozenPace = Math.max(1, Math.ceil(frozen.size / Math.max(1, this.#memtableKeys * FREEZE_COPY_SHARE)));
    if (this.#writeSlice === Infinity) this.#finishFrozen();
    else this.#scheduleIdle();
  }

  /** Copies what is left of the frozen memtable into its run and installs it. */
  #finishFrozen(): void {
    const frozen = this.#frozen;
    if (frozen === undefined) return;
    frozen.step(Infinity);
    this.#installFrozen();
  }

  /** Replaces the frozen memtable, all copied, with its run (the newest), then merges or catches up as a freeze does. */
  #installFrozen(): void {
    const frozen = this.#frozen!;
    this.#frozen = undefined;
    const layer = frozen.finish();
    this.counters.frozenEntries += layer.run.count;
    this.counters.frozenBytes += layer.run.bytes.length;
    if (layer.live.live > 0) {
      this.#pushLayer(layer, frozen.freezeNumber);
      // Writes pace the merges (`#work`): only runs piling up past that finish them here, one at a time.
      if (this.#layers.length > this.#mostRuns) this.#catchUp(this.#mostRuns);
    }
    if (this.#takeBackDue) {
      this.#startTakeBack();
      if (this.#merge === undefined) this.#startMerges();
    }
  }

  /** Chooses the memtable's keys for the next interval (when the state chooses them) from what the last one's writes did. */
  #resize(full: boolean): void {
    const range = this.#range;
    const added = this.#added;
    const youngKills = this.#youngKills;
    this.#added = 0;
    this.#youngKills = 0;
    this.#runKills.clear();
    if (range === undefined) return;
    const before = this.#memtableKeys;
    this.#memtableKeys = nextMemtableKeys(before, { added, youngKills, full }, range);
    if (this.#memtableKeys > before) this.counters.grows++;
    else if (this.#memtableKeys < before) this.counters.shrinks++;
  }

  /**
   * Adds a run whose keys are in no other run nor the memtable (open builds
   * runs from segments so), then starts a merge when `ratio` runs share a
   * tier; past `maxRuns` runs, finishes merges synchronously.
   */
  addRun(run: KeyRun): void {
    if (run.count === 0) return;
    this.#finishFrozen();
    this.#pushLayer(layerOf(run), undefined);
    if (this.#layers.length > this.#maxRuns) this.#catchUp(this.#maxRuns);
  }

  /** Adds `layer` as the newest (`frozenBy`: the freeze that made it, if one did) and starts a merge if one is due. */
  #pushLayer(layer: Layer, frozenBy: number | undefined): void {
    if (frozenBy !== undefined) {
      this.#frozenBy.set(layer, frozenBy);
      this.#watchRunKills(layer);
    }
    this.#layers.push(layer);
    this.#startMerges();
  }

  /** Starts counting the young kills of `layer`, which came after the last freeze, from now. */
  #watchRunKills(layer: Layer): void {
    if (this.#range !== undefined) this.#runKills.set(layer, { kills: 0, from: this.#added });
  }

  /** Marks `key` dead in the runs (open: a newer segment run's entry or tombstone supersedes it). */
  kill(key: string): boolean {
    return this.#killInRuns(key);
  }

  /** `kill` of the key in `kb` (its UTF-8 and hash), making no string: open, from a segment's bytes. */
  killBytes(kb: KeyBytes): boolean {
    this.#finishFrozen();
    return this.#killLocated(this.#searchBytes(kb));
  }

  /**
   * Copies up to `entries` entries of the frozen memtable, or else of the
   * merge in progress (replacing what they replace when done); returns
   * whether either is still in progress.
   */
  mergeStep(entries: number): boolean {
    if (this.#takeBack !== undefined) this.#stepTakeBack(entries);
    else if (this.#frozen !== undefined) {
      if (this.#frozen.step(entries)) this.#installFrozen();
    } else if (this.#merge !== undefined) this.#advance(entries);
    return this.#takeBack !== undefined || this.#frozen !== undefined || this.#merge !== undefined;
  }

  /** Copies the frozen memtable, takes back what a grow takes back, and runs every due merge to its end, synchronously. */
  finishMerges(): void {
    this.#finishFrozen();
    this.#endMergeHold();
    if (this.#takeBack !== undefined) this.#stepTakeBack(Infinity);
    while (this.#merge !== undefined) this.#advance(Infinity);
  }

  /**
   * A write's share of the merge in progress: enough to end it before the
   * memtable fills twice more; past `maxRuns`, at least its entries over a
   * memtable's keys from the first write that finds it there, so it ends
   * within `memtableKeys` writes, during which at most one freeze adds a run
   * (the share by what is left would halve at each freeze, and runs grew
   * faster than merges past `maxRuns` took them away).
   */
  #work(): void {
    if (this.#mergeHold > 0 && --this.#mergeHold === 0 && this.#merge === undefined) this.#startMerges();
    // A take-back comes first: the merges it would empty wait for it (no frozen memtable is copied meanwhile).
    if (this.#takeBack !== undefined) {
      this.#stepTakeBack(this.#takeBackPace);
      return;
    }
    const frozen = this.#frozen;
    // A frozen memtable's copy comes first: the merges that wait for its run pace themselves by what is left.
    if (frozen !== undefined) {
      // Its own pace, not `writeSlice`'s floor: a batch of thousands of writes in one turn would copy it whole.
      if (frozen.step(this.#frozenPace)) this.#installFrozen();
      return;
    }
    const merge = this.#merge;
    if (merge === undefined) return;
    if (this.#pace === 0 && this.#layers.length > this.#maxRuns) this.#pace = Math.ceil(merge.remaining / this.#memtableKeys);
    const room = this.#freezeAt - this.#mem.size + this.#memtableKeys;
    this.#advance(Math.max(this.#writeSlice, this.#pace, Math.ceil(merge.remaining / Math.max(1, room))));
  }

  #advance(entries: number): void {
    const merge = this.#merge!;
    if (merge.step(entries)) return;
    this.#install(merge);
    this.#startMerges();
  }

  /** Replaces the inputs of `merge`, which is done, with its output (where its newest input was). */
  #install(merge: RunMerge): void {
    const inputs = merge.inputs;
    const out = merge.finish();
    this.#merge = undefined;
    this.#pace = 0;
    if (out !== undefined) {
      this.counters.mergedEntries += out.run.count;
      this.counters.mergedBytes += out.run.bytes.length;
    }
    const next: Layer[] = [];
    let newest = -1;
    let oldest: number | undefined = Infinity;
    for (const l of inputs) {
      const by = this.#frozenBy.get(l);
      oldest = by === undefined || oldest === undefined ? undefined : Math.min(oldest, by);
      this.#frozenBy.delete(l);
      this.#runKills.delete(l);
    }
    if (out !== undefined && oldest !== undefined && oldest !== Infinity) {
      this.#frozenBy.set(out, oldest);
      this.#watchRunKills(out);
    }
    for (const l of this.#layers) {
      if (inputs.includes(l)) newest = next.length;
      else next.push(l);
    }
    if (out !== undefined) next.splice(newest < 0 ? next.length : newest, 0, out);
    this.#layers = next;
  }

  /** Starts the next due merge (a whole one at a time when `writeSlice` is Infinity). */
  #startMerges(): void {
    // The runs of a first pass over a working set were merged only to be taken back and dropped once the
    // next pass grew the memtable: a merge waits for that look (`#mergeHold`), which a write-once load
    // pays with one merge started an eighth of the memtable's writes later, and for a take-back due.
    if ((this.#mergeHold > 0 || this.#takeBackDue) && this.#layers.length <= this.#maxRuns) return;
    while (this.#merge === undefined) {
      const takeBack = this.#takeBack;
      const layers = takeBack === undefined ? this.#layers : this.#layers.filter((l) => !takeBack.includes(l));
      const pick = pickMerge(layers, this.#memtableKeys, this.#ratio, this.#layers.length > this.#maxRuns, this.#maxMergeEntries);
      if (pick === undefined) return;
      if (pick.length >= 2) this.counters.merges++;
      else this.counters.rewrites++;
      const merge = new RunMerge(pick);
      this.#merge = merge;
      if (this.#writeSlice !== Infinity) {
        this.#scheduleIdle();
        return;
      }
      merge.step(Infinity);
      this.#install(merge);
    }
  }

  /** Lets merges start now, not after the writes `#mergeHold` waits for. */
  #endMergeHold(): void {
    if (this.#mergeHold === 0) return;
    this.#mergeHold = 0;
    if (this.#merge === undefined) this.#startMerges();
  }

  /** Merges fell behind: finish them here until at most `limit` runs remain. */
  #catchUp(limit: number): void {
    this.counters.catchUps++;
    while (this.#layers.length > limit) {
      if (this.#merge === undefined) this.#startMerges();
      if (this.#merge === undefined) return;
      this.#advance(Infinity);
    }
  }

  /**
   * Stops copying in idle turns, for good (the owner dropped or closed the
   * state): a merge in progress stays so, its inputs still the readable copy
   * of their keys, and goes on only with writes or `mergeStep`. Without this
   * a dropped state kept merging, and stayed in memory, until its merges ended.
   */
  stopIdleMerges(): void {
    this.#idleStopped = true;
    if (this.#idle !== undefined) clearImmediate(this.#idle);
    this.#idle = undefined;
  }

  /** Copies a slice of the frozen memtable, or else `idleSlice` entries of the merge, in a later turn, and again until both end. */
  #scheduleIdle(): void {
    if (this.#idleSlice <= 0 || this.#idle !== undefined || this.#idleStopped) return;
    this.#idle = setImmediate(() => {
      this.#idle = undefined;
      // A take-back moves entries between the memtable and the runs, which a scan held across turns would
      // see; it goes on with writes only, and the merge with the next write after it.
      if (this.#takeBack !== undefined) return;
      const frozen = this.#frozen;
      if (frozen !== undefined) {
        if (frozen.step(Math.min(this.#idleSlice, FREEZE_IDLE_SLICE))) this.#installFrozen();
      } else if (this.#merge !== undefined) this.#advance(this.#idleSlice);
      if (this.#takeBack === undefined && (this.#frozen !== undefined || this.#merge !== undefined)) this.#scheduleIdle();
    });
    this.#idle.unref();
  }

  /** False when no run holds the key encoded in `kb` (by the runs' filters), so `kill` would find nothing; open skips making its string then. */
  mayHoldInRuns(kb: KeyBytes): boolean {
    this.#finishFrozen();
    for (const l of this.#layers) if (l.run.mayHold(kb)) return true;
    return false;
  }

  /** Entries in key order (or reversed) within the bounds of `opts`. Do not mutate while iterating. */
  scan(opts: ScanOptions = {}): IterableIterator<[string, StoredValue]> {
    const frozen = this.#frozen;
    if (this.#layers.length === 0 && frozen === undefined) return scanTree(this.#mem.tree, opts);
    const mem = frozen === undefined ? this.#mem.tree : frozen.under(this.#mem.tree);
    return scanOrdered(new MergedSource(mem, this.#layers), opts);
  }

  /**
   * A copy of the state as it is now, that later changes do not affect (the
   * memtable is copied on write, dead bits are copied, runs are shared). A
   * frozen memtable is first copied whole into its run.
   */
  snapshot(): StateSnapshot {
    this.#finishFrozen();
    const mem = this.#mem.tree.clone();
    const layers = this.#layers.map((l) => ({ run: l.run, live: l.live.clone(), input: -1 }));
    return { entries: () => new SnapshotMerge(mem, layers), memtableEntries: () => mem.entries() };
  }

  /**
   * The keys of the state as it is now, scanned later within bounds: the
   * memtable (and a frozen one) copied on write, the runs shared and their
   * liveness copied, for a reader that counts entries across turns while
   * commits go on.
   */
  keysSnapshot(): KeysSnapshot {
    // A frozen memtable is copied too, not finished: finishing it is the long turn its slices avoid.
    const live = this.#mem.tree.clone();
    const frozen = this.#frozen;
    const mem = frozen === undefined ? live : frozen.snapshotUnder(live);
    const layers = this.#layers.map((l) => ({ run: l.run, live: l.live.clone(), input: -1 }));
    return {
      *keys(opts: ScanOptions = {}): IterableIterator<string> {
        const entries = layers.length === 0 ? scanTree(mem, opts) : scanOrdered(new MergedSource(mem, layers), opts);
        for (const entry of entries) yield entry[0];
      },
    };
  }
}

/**
 * The comparison a merge of `layers` with the memtable may use. Every
 * comparison in a merge has a run's key on one side (the memtable yields in
 * order by itself); when every run is ASCII, one side is, and against an
 * ASCII string UTF-16 order is code point order, so the built-in comparison
 * is exact and skips `compareKeys`' surrogate checks.
 */
function orderOf(layers: readonly Layer[]): (a: string, b: string) => number {
  return layers.every((l) => l.run.ascii) ? (a, b) => (a === b ? 0 : a < b ? -1 : 1) : compareKeys;
}

/**
 * The memtable and the runs as one ordered source. A class, not an object
 * of arrows: where names are kept (tsx), each arrow bound to a name costs a
 * definition of it every scan.
 */
class MergedSource implements OrderedSource<StoredValue> {
  readonly #mem: OrderedEntries<StoredValue>;
  readonly #layers: readonly Layer[];

  constructor(mem: OrderedEntries<StoredValue>, layers: readonly Layer[]) {
    this.#mem = mem;
    this.#layers = layers;
  }

  from(lo: string): Iterator<[string, StoredValue]> {
    return mergeForward(this.#mem, this.#layers, lo);
  }

  fromReversed(hi: string | undefined): Iterator<[string, StoredValue]> {
    return mergeReverse(this.#mem, this.#layers, hi);
  }
}

/** The entries of the memtable and the runs from `lo` up, in ascending key order. */
function* mergeForward(mem: OrderedEntries<StoredValue>, layers: readonly Layer[], lo: string): Generator<[string, StoredValue]> {
  const memIt = mem.entries(lo);
  let memHead = memIt.next();
  const kb = new KeyBytes();
  const cursors = layers.map((l) => new RunCursor(l.run, l.live));
  const keys = cursors.map((c) => (c.seek(lo, kb) ? c.keyString() : undefined));
  const compare = orderOf(layers);
  for (;;) {
    let best = -1;
    let bestKey = memHead.done ? undefined : memHead.value[0];
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i];
      if (k !== undefined && (bestKey === undefined || compare(k, bestKey) < 0)) {
        best = i;
        bestKey = k;
      }
    }
    if (bestKey === undefined) return;
    if (best < 0) {
      yield memHead.value as [string, StoredValue];
      memHead = memIt.next();
    } else {
      const c = cursors[best]!;
      const value = c.run.value(c.valueAt);
      keys[best] = c.advance() ? c.keyString() : undefined;
      yield [bestKey, value];
    }
  }
}

/** The entries of the memtable and the runs at or below `hi` (all when undefined), in descending key order. */
function* mergeReverse(mem: OrderedEntries<StoredValue>, layers: readonly Layer[], hi: string | undefined): Generator<[string, StoredValue]> {
  const memIt = mem.entriesReversed(hi);
  let memHead = memIt.next();
  const cursors = layers.map((l) => {
    const c = new RunReverseCursor(l.run, l.live);
    c.seek(hi);
    return c;
  });
  const compare = orderOf(layers);
  for (;;) {
    let best = -1;
    let bestKey = memHead.done ? undefined : memHead.value[0];
    for (let i = 0; i < cursors.length; i++) {
      const k = cursors[i]!.key;
      if (k !== undefined && (bestKey === undefined || compare(k, bestKey) > 0)) {
        best = i;
        bestKey = k;
      }
    }
    if (bestKey === undefined) return;
    if (best < 0) {
      yield memHead.value as [string, StoredValue];
      memHead = memIt.next();
    } else {
      const c = cursors[best]!;
      const value = c.value();
      c.next();
      yield [bestKey, value];
    }
  }
}

/** The `count` keys of `mem` that `hold` keeps (or, `kept` false, does not), with their values, in order (see `LayeredState.freeze`). */
function listWhere(mem: Memtable<StoredValue>, hold: HoldInMemtable, kept: boolean, count: number): [string[], StoredValue[]] {
  const keys = new Array<string>(count);
  const values = new Array<StoredValue>(count);
  let n = 0;
  mem.tree.forEachPair((k, v) => {
    if (hold(k, v) !== kept) return;
    keys[n] = k;
    values[n++] = v;
  });
  return [keys, values];
}
