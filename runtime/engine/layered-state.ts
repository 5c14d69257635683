/**
 * @module The writer's (and a reader's) in-memory state: a memtable of
 * recently written keys over immutable compact runs (key-run.ts), behind the
 * operations the engine uses (see docs/engine.md, "Stage 2b, first step").
 *
 * Invariant: a key lives in at most one place, the memtable or one run.
 * Writing or deleting a key that lives in a run marks its entry dead, so a
 * read asks the memtable and then each run, and a scan merges the live
 * entries of all of them with no tombstones to resolve.
 *
 * Pure data structure: no IO. Freezing and merging run synchronously inside
 * `set` and `delete`; never mutate while iterating a `scan`.
 */
import { BTree } from "../store/btree.js";
import { compareKeys } from "../store/keys.js";
import { BLOCK_ENTRIES, isWellFormed, KeyBytes, KeyRun, KeyRunBuilder, RunCursor, RunReverseCursor } from "./key-run.js";
import type { StoredValue } from "./paged-value.js";
import { RunLiveness } from "./run-liveness.js";
import { scanOrdered, scanTree, type ScanOptions } from "./scan.js";

/** Whether a memtable entry must stay in the memtable when it freezes (a value a checkpoint still has to page by identity). */
export type HoldInMemtable = (key: string, value: StoredValue) => boolean;

/** Options of a `LayeredState`. */
export interface LayeredStateOptions {
  /** Values that stay in the memtable when it freezes. */
  hold?: HoldInMemtable;
  /** Memtable keys that trigger a freeze. Default 32,768. */
  memtableKeys?: number;
}

/** A consistent, ordered copy of the state at one moment (for a full checkpoint); iterable more than once. */
export interface StateSnapshot {
  entries(): IterableIterator<[string, StoredValue]>;
}

/** A run with its dead bits. */
interface Layer {
  run: KeyRun;
  live: RunLiveness;
}

/** Runs at most this dead (and at least `MIN_REWRITE` entries) are rewritten alone. */
const MIN_REWRITE = 1024;

function newTree(): BTree<string, StoredValue> {
  return new BTree<string, StoredValue>(undefined, compareKeys);
}

/** The layered map: see the module documentation. */
export class LayeredState {
  #mem = newTree();
  /** Oldest first; each holds at least one live entry. */
  #layers: Layer[] = [];
  readonly #hold: HoldInMemtable | undefined;
  readonly #memtableKeys: number;
  #freezeAt: number;
  readonly #kb = new KeyBytes();
  readonly #found = { valueAt: 0 };
  #foundIndex = -1;
  /** Counters, for benchmarks and tests. */
  readonly counters = { freezes: 0, merges: 0, rewrites: 0 };

  constructor(opts: LayeredStateOptions = {}) {
    this.#hold = opts.hold;
    this.#memtableKeys = Math.max(1, opts.memtableKeys ?? 32_768);
    this.#freezeAt = this.#memtableKeys;
  }

  /** Keys with a value. */
  get size(): number {
    let n = this.#mem.size;
    for (const l of this.#layers) n += l.live.live;
    return n;
  }

  /** Memtable keys, and live entries and bytes per run (oldest first). */
  get layout(): { memtableKeys: number; runs: { live: number; entries: number; bytes: number }[] } {
    return {
      memtableKeys: this.#mem.size,
      runs: this.#layers.map((l) => ({ live: l.live.live, entries: l.run.count, bytes: l.run.memoryBytes })),
    };
  }

  /** The index in `#layers` of the run holding `key` live, or -1; sets `#found` and `#foundIndex`. */
  #locate(key: string): number {
    const layers = this.#layers;
    // No stored key has a lone surrogate (UTF-8 cannot hold one), and its bytes would not be its own.
    if (layers.length === 0 || !isWellFormed(key)) return -1;
    const kb = this.#kb.set(key);
    for (let i = layers.length - 1; i >= 0; i--) {
      const l = layers[i]!;
      const index = l.run.find(key, kb, this.#found);
      if (index >= 0 && !l.live.isDead(index)) {
        this.#foundIndex = index;
        return i;
      }
    }
    return -1;
  }

  /** The stored value of `key`, or undefined. Held bytes from a run come back as a fresh array. */
  get(key: string): StoredValue | undefined {
    const v = this.#mem.get(key);
    if (v !== undefined) return v;
    const i = this.#locate(key);
    return i < 0 ? undefined : this.#layers[i]!.run.value(this.#found.valueAt);
  }

  /** Whether `key` has a value. */
  has(key: string): boolean {
    return this.#mem.has(key) || this.#locate(key) >= 0;
  }

  /** Sets `key` (in the memtable; an entry of it in a run dies). */
  set(key: string, value: StoredValue): void {
    if (!this.#mem.set(key, value)) return; // it lived in the memtable, so in no run
    this.#killInRuns(key);
    if (this.#mem.size >= this.#freezeAt) this.freeze();
  }

  /** Deletes `key`; false when it had no value. */
  delete(key: string): boolean {
    return this.#mem.delete(key) || this.#killInRuns(key);
  }

  /** Whether the memtable holds exactly `value` (by identity) for `key`; a run never holds a caller's array. */
  holds(key: string, value: StoredValue): boolean {
    return this.#mem.get(key) === value;
  }

  /**
   * Replaces the value of `key` with `next` when it is still `expected`: in
   * the memtable, the same value (arrays by identity); in a run, only a
   * paged value re-pointed to another run (in place). False otherwise.
   */
  replaceIf(key: string, expected: StoredValue, next: StoredValue): boolean {
    const v = this.#mem.get(key);
    if (v !== undefined) {
      if (v !== expected) return false;
      this.#mem.set(key, next);
      return true;
    }
    if (typeof expected !== "number" || expected < 0 || typeof next !== "number" || next < 0) return false;
    const i = this.#locate(key);
    return i >= 0 && this.#layers[i]!.run.repage(this.#found.valueAt, expected, next);
  }

  /** Marks the run entry of `key` dead; false when no run holds it live. */
  #killInRuns(key: string): boolean {
    const i = this.#locate(key);
    if (i < 0) return false;
    const l = this.#layers[i]!;
    const index = this.#foundIndex;
    l.live.kill(index, Math.floor(index / BLOCK_ENTRIES));
    if (l.live.live === 0) this.#layers.splice(i, 1);
    else if (l.run.count >= MIN_REWRITE && l.live.live * 2 < l.run.count) {
      this.#layers[i] = mergeLayers([l]);
      this.counters.rewrites++;
    }
    return true;
  }

  /**
   * Moves the memtable's entries into a new run (except those `hold` keeps),
   * then merges runs while a newer one holds at least half as many live
   * entries as the one before it.
   */
  freeze(): void {
    const mem = this.#mem;
    const builder = new KeyRunBuilder(Math.max(0, mem.size - this.#freezeAt + this.#memtableKeys) * 48);
    const hold = this.#hold;
    const moved: string[] = [];
    for (const [k, v] of mem.entries()) {
      if (hold?.(k, v)) continue;
      builder.add(k, v);
      moved.push(k);
    }
    // The held entries stay where they are: deleting what moved costs per moved key, not per held one.
    if (moved.length === mem.size) this.#mem = newTree();
    else for (const k of moved) mem.delete(k);
    this.#freezeAt = this.#mem.size + this.#memtableKeys;
    this.counters.freezes++;
    if (builder.count > 0) this.addRun(builder.finish());
  }

  /** Adds a run whose keys are in no other run nor the memtable (open builds runs from segments so), then merges as `freeze` does. */
  addRun(run: KeyRun): void {
    if (run.count === 0) return;
    this.#layers.push({ run, live: new RunLiveness(run.count, BLOCK_ENTRIES) });
    const layers = this.#layers;
    while (layers.length >= 2 && layers[layers.length - 1]!.live.live * 2 >= layers[layers.length - 2]!.live.live) {
      const newer = layers.pop()!;
      const older = layers.pop()!;
      layers.push(mergeLayers([older, newer]));
      this.counters.merges++;
    }
  }

  /** Marks `key` dead in the runs (open: a newer segment run's entry or tombstone supersedes it). */
  kill(key: string): boolean {
    return this.#killInRuns(key);
  }

  /** False when no run holds the key encoded in `kb` (by the runs' filters), so `kill` would find nothing; open skips making its string then. */
  mayHoldInRuns(kb: KeyBytes): boolean {
    for (const l of this.#layers) if (l.run.mayHold(kb)) return true;
    return false;
  }

  /** Entries in key order (or reversed) within the bounds of `opts`. Do not mutate while iterating. */
  scan(opts: ScanOptions = {}): IterableIterator<[string, StoredValue]> {
    if (this.#layers.length === 0) return scanTree(this.#mem, opts);
    const mem = this.#mem;
    const layers = this.#layers;
    return scanOrdered(
      {
        from: (lo) => mergeForward(mem, layers, lo),
        fromReversed: (hi) => mergeReverse(mem, layers, hi),
      },
      opts,
    );
  }

  /** A copy of the state as it is now, that later changes do not affect (the memtable is copied on write, dead bits are copied, runs are shared). */
  snapshot(): StateSnapshot {
    const mem = this.#mem.clone();
    const layers = this.#layers.map((l) => ({ run: l.run, live: l.live.clone() }));
    return { entries: () => mergeForward(mem, layers, "") };
  }
}

/** The live entries of `layers` merged into one new run (a k-way merge over their bytes). */
function mergeLayers(layers: Layer[]): Layer {
  let estimate = 0;
  for (const l of layers) estimate += Math.ceil((l.run.bytes.length * l.live.live) / l.run.count);
  const builder = new KeyRunBuilder(estimate + 1024);
  const cursors = layers.map((l) => new RunCursor(l.run, l.live));
  const active = cursors.filter((c) => c.advance());
  while (active.length > 0) {
    let best = 0;
    for (let i = 1; i < active.length; i++) if (compareKeyBytes(active[i]!, active[best]!) < 0) best = i;
    const c = active[best]!;
    builder.addFrom(c.run, c.keyBuf, c.keyLen, c.valueAt, () => c.keyString());
    if (!c.advance()) active.splice(best, 1);
  }
  const run = builder.finish();
  return { run, live: new RunLiveness(run.count, BLOCK_ENTRIES) };
}

function compareKeyBytes(a: RunCursor, b: RunCursor): number {
  const ab = a.keyBuf;
  const bb = b.keyBuf;
  const n = Math.min(a.keyLen, b.keyLen);
  for (let i = 0; i < n; i++) if (ab[i] !== bb[i]) return ab[i]! - bb[i]!;
  return a.keyLen - b.keyLen;
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

/** The entries of the memtable and the runs from `lo` up, in ascending key order. */
function* mergeForward(mem: BTree<string, StoredValue>, layers: readonly Layer[], lo: string): Generator<[string, StoredValue]> {
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
function* mergeReverse(mem: BTree<string, StoredValue>, layers: readonly Layer[], hi: string | undefined): Generator<[string, StoredValue]> {
  const memIt = hi === undefined ? mem.entriesReversed() : mem.entriesReversed(hi);
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
