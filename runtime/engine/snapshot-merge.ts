/**
 * @module The entries of a state snapshot (a memtable over key runs) in key
 * order, for a full checkpoint to write without copying them out first: an
 * entry from a run stays where it lies (its key's UTF-8 in the run cursor's
 * buffer, its value in the run's bytes), so the segment builder copies it
 * once, into the segment (`SegmentBuilder.addBytes`). The generic path (a
 * key string and a fresh value array per run entry) cost a full checkpoint
 * of 200,000 keys 2.4x the time of the engine before key runs.
 *
 * Every comparison is of UTF-8 bytes (the order of `compareKeys` for stored
 * keys, which are well-formed): a memtable key is encoded once when it
 * becomes the memtable's head. Live keys of the memtable and of the runs
 * never overlap (a write kills its key in the runs), as the state's own
 * merge assumes.
 *
 * Also an iterator of `[key, value]` pairs for any other reader of a snapshot.
 */
import type { OrderedMap, OrderedMapCursor } from "./ordered-map.js";
import { compareBytes, KeyBytes, type KeyRun, RunCursor } from "./key-run.js";
import type { RunLiveness } from "./run-liveness.js";
import type { StoredValue } from "./paged-value.js";

/** One run of a snapshot: its entries and which of them are live. */
export interface SnapshotRun {
  readonly run: KeyRun;
  readonly live: RunLiveness;
}

/**
 * Walks a snapshot's entries in ascending key order. `step()` moves to the
 * next entry and says which source it is in: `MEMTABLE` (`key`, `value`) or
 * a run (`cursor`: its `keyBuf[0..keyLen)`, `run` and `valueAt`, valid until
 * the next step).
 */
export class SnapshotMerge implements IterableIterator<[string, StoredValue]> {
  /** `step`'s answer for an entry of the memtable. */
  static readonly MEMTABLE = -1;
  /** `step`'s answer once every entry was walked. */
  static readonly END = -2;
  readonly #mem: OrderedMapCursor<StoredValue>;
  #memHead: IteratorResult<[string, StoredValue]>;
  readonly #memKey = new KeyBytes();
  readonly #cursors: RunCursor[];
  /** Per cursor, whether it stands on an entry not yet handed out. */
  readonly #ready: boolean[];
  /** The source of the entry handed out last (`step`'s answer). */
  #current = -2;
  /** The source with the least key after it when `#current` was chosen: its key is unchanged since. */
  #runnerUp = -2;
  /**
   * Where the current entry's key first differs from the runner-up's (its
   * length when it is a prefix of that key); -1 when not known.
   */
  #diffAt = -1;
  /** The current memtable entry's key and value (after `step()` answered `MEMTABLE`). */
  key = "";
  value: StoredValue = 0;
  /** The cursor of the current run entry (after `step()` answered its index). */
  cursor: RunCursor | undefined;

  constructor(mem: OrderedMap<StoredValue>, runs: readonly SnapshotRun[]) {
    this.#mem = mem.entries();
    this.#memHead = this.#mem.next();
    if (!this.#memHead.done) this.#memKey.set(this.#memHead.value[0]);
    this.#cursors = runs.map((r) => new RunCursor(r.run, r.live));
    this.#ready = this.#cursors.map((c) => c.advance());
  }

  /**
   * Moves to the next entry: answers `MEMTABLE`, the index of the run
   * holding it, or `END`. The entry before is no longer readable.
   *
   * Only the source of the last entry moved since the step before, so the
   * least key of the others (the runner-up that step found) still stands:
   * while the moved source's next key is below it, that source holds the
   * next entry, one comparison in all. Runs a fill wrote hold long stretches
   * of neighbouring keys, so most steps end there; the others compare every
   * source. That comparison starts past the bytes the moved cursor's key
   * shares with its key before (`RunCursor.shared`), which agreed with the
   * runner-up's up to where they first differed: neighbouring keys mostly
   * differ in their last bytes, so it reads one or two.
   */
  step(): number {
    const cur = this.#current;
    if (cur >= 0) {
      const c = this.#cursors[cur]!;
      if ((this.#ready[cur] = c.advance()) && this.#belowRunnerUp(c.keyBuf, c.keyLen, c.shared)) return cur;
    } else if (cur === SnapshotMerge.MEMTABLE && !this.#memHead.done && this.#belowRunnerUp(this.#memKey.buf, this.#memKey.len, 0)) {
      this.#takeMemHead();
      return cur;
    }
    return this.#scan();
  }

  /**
   * Whether `buf[0..len)` sorts before the runner-up's key (or there is
   * none), given that it shares at least `shared` bytes with the current
   * entry's key (0 when it is no run's next key after it).
   */
  #belowRunnerUp(buf: Uint8Array, len: number, shared: number): boolean {
    const r = this.#runnerUp;
    if (r === SnapshotMerge.END) return true;
    const d = this.#diffAt;
    // Equal to the current key past where that one fell below the runner-up: below it too, differing there still.
    if (d >= 0 && shared > d) return true;
    let other: Uint8Array;
    let otherLen: number;
    if (r === SnapshotMerge.MEMTABLE) {
      other = this.#memKey.buf;
      otherLen = this.#memKey.len;
    } else {
      const c = this.#cursors[r]!;
      other = c.keyBuf;
      otherLen = c.keyLen;
    }
    // The first `shared` bytes (up to `d`) are the current key's, which equal the runner-up's there.
    const n = Math.min(len, otherLen);
    let i = d >= 0 ? shared : 0;
    while (i < n && buf[i] === other[i]) i++;
    this.#diffAt = i;
    return i < n ? buf[i]! < other[i]! : len < otherLen;
  }

  /** Compares every source's next key: the least is the next entry, the one after it the runner-up. */
  #scan(): number {
    this.#diffAt = -1;
    const cursors = this.#cursors;
    const ready = this.#ready;
    let best = SnapshotMerge.END;
    let bestBuf: Uint8Array | undefined;
    let bestLen = 0;
    let second = SnapshotMerge.END;
    let secondBuf: Uint8Array | undefined;
    let secondLen = 0;
    if (!this.#memHead.done) {
      best = SnapshotMerge.MEMTABLE;
      bestBuf = this.#memKey.buf;
      bestLen = this.#memKey.len;
    }
    for (let i = 0; i < cursors.length; i++) {
      if (!ready[i]) continue;
      const c = cursors[i]!;
      if (bestBuf === undefined || compareBytes(c.keyBuf, c.keyLen, bestBuf, bestLen) < 0) {
        second = best;
        secondBuf = bestBuf;
        secondLen = bestLen;
        best = i;
        bestBuf = c.keyBuf;
        bestLen = c.keyLen;
      } else if (secondBuf === undefined || compareBytes(c.keyBuf, c.keyLen, secondBuf, secondLen) < 0) {
        second = i;
        secondBuf = c.keyBuf;
        secondLen = c.keyLen;
      }
    }
    this.#current = best;
    this.#runnerUp = second;
    if (best === SnapshotMerge.MEMTABLE) this.#takeMemHead();
    else this.cursor = best >= 0 ? cursors[best] : undefined;
    return best;
  }

  /** Hands out the memtable's head entry and moves the memtable on. */
  #takeMemHead(): void {
    const [k, v] = (this.#memHead as IteratorYieldResult<[string, StoredValue]>).value;
    this.key = k;
    this.value = v;
    this.cursor = undefined;
    this.#memHead = this.#mem.next();
    if (!this.#memHead.done) this.#memKey.set(this.#memHead.value[0]);
  }

  next(): IteratorResult<[string, StoredValue]> {
    const at = this.step();
    if (at === SnapshotMerge.END) return { done: true, value: undefined };
    if (at === SnapshotMerge.MEMTABLE) return { done: false, value: [this.key, this.value] };
    const c = this.cursor!;
    return { done: false, value: [c.keyString(), c.run.value(c.valueAt)] };
  }

  [Symbol.iterator](): this {
    return this;
  }
}
