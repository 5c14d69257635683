/**
 * @module A memtable that froze, copied into a key run a slice at a time
 * (see docs/engine.md, "A freeze in slices").
 *
 * A freeze of 262,144 keys built its run in one turn: hundreds of
 * milliseconds during which no commit, read or timer ran. The frozen table
 * now stays readable, as the newest layer below the live memtable, while
 * its entries are copied in key order over several turns; the run replaces
 * it in one step when the last is copied. Until then a write that kills one
 * of its keys deletes it from the table (so reads and scans stop seeing it
 * at once); when that entry was already copied, the key is also kept, and
 * its entry in the run is marked dead when the run is made. Each slice
 * starts from the last key copied, so no cursor lives across the writes
 * between slices.
 *
 * Pure data structure: no IO.
 */
import { compareKeys } from "../store/keys.js";
import type { HeadedKey } from "./key-family.js";
import { BLOCK_ENTRIES, KeyBytes, KeyRunBuilder } from "./key-run.js";
import type { Memtable } from "./memtable.js";
import type { OrderedMap } from "./ordered-map.js";
import type { StoredValue } from "./paged-value.js";
import { type Layer, layerOf } from "./run-merge.js";
import type { OrderedEntries } from "./scan.js";

/** Entries frozen memtables copied into their runs (a test checks that a dropped state stops copying). */
export const frozenCopyStats = { copied: 0 };

/** A frozen memtable being copied into a run: see the module documentation. */
export class FrozenMemtable {
  readonly #table: Memtable<StoredValue>;
  readonly #builder: KeyRunBuilder;
  /** The last key copied; undefined before the first. */
  #copiedTo: string | undefined;
  /** Keys killed after their entry was copied: dead in the run once it is made. */
  readonly #lateKills: string[] = [];
  /** Whether every entry was copied. */
  #done = false;

  /** `table`: the entries to copy, none of which the live memtable or any run holds; `freezeNumber`: the freeze that made it. */
  constructor(
    table: Memtable<StoredValue>,
    readonly freezeNumber: number,
  ) {
    this.#table = table;
    // About what each entry takes in the run, so its buffer seldom grows; and the keys to expect, so
    // the filter fills as they come instead of at the end, in the turn that makes the run.
    this.#builder = new KeyRunBuilder(table.size * 48, table.size);
  }

  /** Keys readable here now. */
  get size(): number {
    return this.#table.size;
  }

  /** Entries not yet copied. */
  get remaining(): number {
    return this.#table.size - (this.#builder.count - this.#lateKills.length);
  }

  /** The value of `key` here, or undefined. `hint`: see `Memtable.set`. */
  get(key: string, hint?: HeadedKey): StoredValue | undefined {
    return this.#table.get(key, hint);
  }

  /** Kills `key` here (a write or delete of it); false when not here. */
  kill(key: string, hint?: HeadedKey): boolean {
    if (!this.#table.delete(key, hint)) return false;
    if (this.#copiedTo !== undefined && compareKeys(key, this.#copiedTo) <= 0) this.#lateKills.push(key);
    return true;
  }

  /** Copies up to `entries` more entries into the run; true when every entry is copied. */
  step(entries: number): boolean {
    if (this.#done) return true;
    const from = this.#copiedTo;
    const it = this.#table.tree.entries(from);
    const builder = this.#builder;
    let n = 0;
    for (;;) {
      const next = it.next();
      if (next.done) {
        this.#done = true;
        frozenCopyStats.copied += n;
        return true;
      }
      const [k, v] = next.value;
      if (k === from) continue;
      if (n >= entries) {
        frozenCopyStats.copied += n;
        return false;
      }
      builder.add(k, v);
      this.#copiedTo = k;
      n++;
    }
  }

  /** The run, once `step` returned true, as a layer with the late kills dead (possibly none live). */
  finish(): Layer {
    const layer = layerOf(this.#builder.finish());
    const kb = new KeyBytes();
    const found = { valueAt: 0 };
    for (const key of this.#lateKills) {
      const index = layer.run.find(key, kb.set(key), found);
      if (index >= 0 && !layer.live.isDead(index)) layer.live.kill(index, Math.floor(index / BLOCK_ENTRIES));
    }
    return layer;
  }

  /** `under` of a copy of this table as it is now (copy on write): later kills and the copy's end do not change it. */
  snapshotUnder(live: OrderedMap<StoredValue>): OrderedEntries<StoredValue> {
    const frozen = this.#table.tree.clone();
    return {
      entries: (lo) => mergeTwo(live.entries(lo), frozen.entries(lo), 1),
      entriesReversed: (hi) => mergeTwo(live.entriesReversed(hi), frozen.entriesReversed(hi), -1),
    };
  }

  /** The entries of `live` (the memtable written since the freeze) and of this table, in order: no key is in both. */
  under(live: OrderedMap<StoredValue>): OrderedEntries<StoredValue> {
    const frozen = this.#table.tree;
    return {
      entries: (lo) => mergeTwo(live.entries(lo), frozen.entries(lo), 1),
      entriesReversed: (hi) => mergeTwo(live.entriesReversed(hi), frozen.entriesReversed(hi), -1),
    };
  }
}

/** The entries of `a` and `b` (disjoint, each in order) in that order: `direction` 1 ascending, -1 descending. */
function* mergeTwo(a: Iterator<[string, StoredValue]>, b: Iterator<[string, StoredValue]>, direction: 1 | -1): Generator<[string, StoredValue]> {
  let x = a.next();
  let y = b.next();
  while (!x.done || !y.done) {
    if (y.done || (!x.done && compareKeys(x.value[0], y.value[0]) * direction < 0)) {
      yield x.value;
      x = a.next();
    } else {
      yield y.value;
      y = b.next();
    }
  }
}
