/**
 * @module Open's merge of segment runs: the key sections of every segment
 * run are read side by side, k-way in key order, into one key run, the
 * newest run's entry of each key winning (its tombstone leaving the key
 * out). Built run by run instead, a newer run's every key probed each older
 * run's filter to mark their entries dead, and the runs were then merged in
 * idle turns during the open: both grew with the number of runs a fill left
 * (docs/engine.md, "Open merges segment runs").
 *
 * Each segment is read by its tail and checked as the run-by-run load
 * checks it (its entry count against the manifest, its key section against
 * its block index, its key range after the previous segment of its run).
 * A segment with no key section, or whose section leaves in its blocks a
 * value the policy holds, ends the merge with `false`: the caller loads run
 * by run then, reading such segments whole.
 */
import { setImmediate as yieldToLoop } from "node:timers/promises";
import { StoreCorruptedError } from "../errors.js";
import { compareKeys } from "../store/keys.js";
import { KeyHasher, type KeyRunBuilder } from "./key-run.js";
import type { SegmentRef } from "./manifest.js";
import { KeySectionCursor, SECTION_IN_BLOCK, SECTION_KEY_TAIL, type SegmentTail } from "./segment-format.js";

/** What the merge needs from the open that runs it. */
export interface MergeSource {
  /** The object key of a segment (for errors). */
  objectKey(seg: SegmentRef): string;
  /**
   * Starts reading the tail of a segment; its promise rejects (ending the
   * merge) when the segment is gone or its tail is damaged. Called for each
   * run's segments in order, up to two ahead of the one being merged.
   */
  tail(seg: SegmentRef): Promise<SegmentTail>;
  /** Whether open pages out a value of `valueLen` bytes of the key `key[0..keyLen)` (it stays in its segment). */
  pages(key: Buffer, keyLen: number, valueLen: number): boolean;
  /** Hears each segment's block index once its tail is read. */
  onIndex?: (name: string, tail: SegmentTail) => void;
}

/** Entries read (merged or passed over) between turns of the event loop, so a large open does not block it in one go. */
const ENTRIES_PER_TURN = 8_192;

/** One segment run's entries in key order, segment after segment. */
class RunStream {
  /** The section being read; undefined before the first segment and once the run is done. */
  cursor: KeySectionCursor | undefined;
  /** The segment the cursor reads. */
  seg: SegmentRef | undefined;
  /** The filter hash of the cursor's key. */
  hash = 0;
  /** False once a segment had no key section. */
  usable = true;
  /**
   * Whether the cursor's entry follows another of its segment: its `shared`
   * is then exactly the bytes it shares with that entry (the section's
   * order check holds it so), which the merge uses to compare less.
   */
  continues = false;
  readonly #hasher = new KeyHasher();
  /** The index in `segs` of the segment after the open one, and its tail, read ahead. */
  #next = 0;
  #ahead: Promise<SegmentTail> | undefined;
  /** The last key of the open segment and of the one before it (to check that the next starts after it). */
  #segLast: string | undefined;
  #prevLast: string | undefined;
  #first = false;
  #key: Buffer = Buffer.allocUnsafe(256);

  constructor(
    /** Newer runs have larger ages; on equal keys the newest wins. */
    readonly age: number,
    readonly segs: readonly SegmentRef[],
    readonly src: MergeSource,
  ) {
    this.#ahead = this.#read();
  }

  #read(): Promise<SegmentTail> | undefined {
    if (this.#next >= this.segs.length) return undefined;
    const p = this.src.tail(this.segs[this.#next]!);
    // Read ahead: its rejection is seen when the segment is reached, or never if the merge ends first.
    p.catch(() => {});
    return p;
  }

  /** Moves to the open segment's next entry; false at its end (then `nextSegment`). Synchronous: the per-entry path. */
  next(): boolean {
    const c = this.cursor;
    if (c === undefined || !c.next()) return false;
    this.continues = !this.#first;
    if (this.#first) {
      this.#first = false;
      if (this.#prevLast !== undefined && compareKeys(this.#prevLast, c.key.toString("utf8", 0, c.keyLen)) >= 0) {
        throw new StoreCorruptedError(this.src.objectKey(this.seg!), "segment key range overlaps the previous segment of its run");
      }
    }
    this.hash = this.#hasher.next(c.key, c.keyLen, c.shared);
    return true;
  }

  /** Opens the following segments until one has an entry: true on it, false when the run is done or a segment has no key section. */
  async nextSegment(): Promise<boolean> {
    for (;;) {
      if (!(await this.#open())) return false;
      if (this.next()) return true;
    }
  }

  /** Opens the run's next segment; false when there is none or it has no key section. */
  async #open(): Promise<boolean> {
    if (this.cursor !== undefined) {
      this.#key = this.cursor.key;
      if (this.#segLast !== undefined) this.#prevLast = this.#segLast;
    }
    this.cursor = undefined;
    const ahead = this.#ahead;
    if (ahead === undefined) return false;
    const seg = this.segs[this.#next++]!;
    this.#ahead = this.#read();
    const tail = await ahead;
    const key = this.src.objectKey(seg);
    if (tail.entryCount !== seg.entries) throw new StoreCorruptedError(key, `segment holds ${tail.entryCount} entries, the manifest says ${seg.entries}`);
    this.src.onIndex?.(seg.name, tail);
    if (tail.keys === undefined) {
      this.usable = false;
      return false;
    }
    this.seg = seg;
    this.#segLast = seg.entries > 0 ? tail.blocks[tail.blocks.length - 1]!.lastKey : undefined;
    this.#first = true;
    this.cursor = new KeySectionCursor(key, tail, this.#key);
    return true;
  }
}

/** Whether stream `a`'s entry comes before `b`'s: the smaller key, or on the same key the newer run. */
function before(a: RunStream, b: RunStream): boolean {
  const ca = a.cursor!;
  const cb = b.cursor!;
  return leadsAt(a, b, commonPrefix(ca.key, ca.keyLen, cb.key, cb.keyLen, 0));
}

/** `before(a, b)`, given the first byte `d` at which their keys differ (the shorter key's length when one starts the other). */
function leadsAt(a: RunStream, b: RunStream, d: number): boolean {
  const ca = a.cursor!;
  const cb = b.cursor!;
  if (d === ca.keyLen) return d < cb.keyLen || a.age > b.age;
  if (d === cb.keyLen) return false;
  return ca.key[d]! < cb.key[d]!;
}

/**
 * @internal Key bytes the merges of this process compared (each byte pair
 * looked at), for a test that holds the merge to comparing no more than it
 * needs: a change that compares again what it knew compares no worse by any
 * other sign.
 */
export const mergeComparisons = { bytes: 0 };

/** Bytes `a[0..al)` and `b[0..bl)` share at their start, the first `from` of them known to be shared. */
function commonPrefix(a: Buffer, al: number, b: Buffer, bl: number, from: number): number {
  const n = Math.min(al, bl);
  let i = from;
  while (i < n && a[i] === b[i]) i++;
  mergeComparisons.bytes += i - from + (i < n ? 1 : 0);
  return i;
}

/** Restores the heap order below `i` (a min-heap by `before`). */
function siftDown(heap: RunStream[], i: number): void {
  const n = heap.length;
  const s = heap[i]!;
  for (;;) {
    const l = 2 * i + 1;
    if (l >= n) break;
    const r = l + 1;
    const m = r < n && before(heap[r]!, heap[l]!) ? r : l;
    if (!before(heap[m]!, s)) break;
    heap[i] = heap[m]!;
    i = m;
  }
  heap[i] = s;
}

/**
 * Merges the segment runs `runs` (oldest first) into `builder`: every key's
 * entry from the newest run holding it, none for a key whose newest entry
 * is a tombstone. Resolves to false, with the builder part-filled (drop
 * it), when a segment has no usable key section (see the module).
 */
export async function mergeSegmentRuns(runs: readonly (readonly SegmentRef[])[], src: MergeSource, builder: KeyRunBuilder): Promise<boolean> {
  const streams = runs.map((segs, age) => new RunStream(age, segs, src));
  const heap: RunStream[] = [];
  for (const s of streams) {
    if (await s.nextSegment()) heap.push(s);
    else if (!s.usable) return false;
  }
  for (let i = (heap.length >> 1) - 1; i >= 0; i--) siftDown(heap, i);
  // The runs of a fill hold ascending keys, so one run keeps the lead for long stretches. While it
  // does, its next entry is compared with the least of the others (`rival`, the better child of the
  // heap's root) from the first byte where the entry before it differed from that key (`diff`): an
  // entry sharing more than that with the one before leads too, one sharing less does not, and
  // neither needs a comparison; only one sharing exactly that many compares, from there.
  let rival: RunStream | undefined;
  let diff = 0;
  const settle = (): void => {
    rival = heap.length < 2 ? undefined : heap.length === 2 || before(heap[1]!, heap[2]!) ? heap[1]! : heap[2]!;
    if (rival === undefined) return;
    const a = heap[0]!.cursor!;
    const b = rival.cursor!;
    diff = commonPrefix(a.key, a.keyLen, b.key, b.keyLen, 0);
  };
  settle();
  /** The key just taken (added, or left out as a tombstone), to pass over older runs' entries of it; -1 before any. */
  let done: Buffer = Buffer.allocUnsafe(256);
  let doneLen = -1;
  /** Whether the builder's last key is `done` (not when `done` was a tombstone). */
  let doneAdded = false;
  /** The run `done` came from: its next entry shares with `done` what its section says, and is no older entry of it. */
  let doneFrom: RunStream | undefined;
  let sinceTurn = 0;
  while (heap.length > 0) {
    const top = heap[0]!;
    const c = top.cursor!;
    const key = c.key;
    const keyLen = c.keyLen;
    // (A segment's first entry shares 0 bytes by its section: compare with `done` then.)
    const same = doneFrom === top && top.continues;
    const shared = same ? c.shared : doneLen < 0 ? 0 : commonPrefix(key, keyLen, done, doneLen, 0);
    // Not an older run's entry of the key just taken (which is dead): take it. Keys come strictly
    // ascending (each run's are checked so, the heap takes the least), so the builder is told the
    // bytes shared with its last key instead of comparing again.
    if (same || shared !== keyLen || keyLen !== doneLen) {
      doneFrom = top;
      const valueLen = c.valueLen;
      const known = doneAdded ? shared : -1;
      doneAdded = valueLen >= 0;
      if (valueLen >= 0) {
        if (src.pages(key, keyLen, valueLen)) builder.addPagedBytes(key, 0, keyLen, top.seg!.run, known, top.hash);
        else if (c.kind === SECTION_IN_BLOCK) return false;
        else if (c.kind === SECTION_KEY_TAIL) builder.addKeyTailBytes(key, 0, keyLen, valueLen, known, top.hash);
        else builder.addHeldBytes(key, 0, keyLen, c.section, c.valueAt, valueLen, true, known, top.hash);
      }
      if (done.length < keyLen) {
        const grown = Buffer.allocUnsafe(keyLen * 2);
        for (let i = 0; i < shared; i++) grown[i] = done[i]!;
        done = grown;
      }
      for (let i = shared; i < keyLen; i++) done[i] = key[i]!;
      doneLen = keyLen;
    }
    // Entries passed over count too: a store of many runs holding the same keys has more of them than of the others.
    if (++sinceTurn >= ENTRIES_PER_TURN) {
      sinceTurn = 0;
      await yieldToLoop();
    }
    if (top.next() || (await top.nextSegment())) {
      if (rival === undefined) continue;
      const a = top.cursor!;
      const b = rival.cursor!;
      let leads: boolean;
      if (!top.continues) {
        diff = commonPrefix(a.key, a.keyLen, b.key, b.keyLen, 0);
        leads = leadsAt(top, rival, diff);
      } else if (a.shared < diff) leads = false;
      else {
        if (a.shared === diff) diff = commonPrefix(a.key, a.keyLen, b.key, b.keyLen, diff);
        leads = leadsAt(top, rival, diff);
      }
      if (leads) continue;
      siftDown(heap, 0);
    } else {
      if (!top.usable) return false;
      const last = heap.pop()!;
      if (heap.length > 0) {
        heap[0] = last;
        siftDown(heap, 0);
      }
    }
    settle();
  }
  return true;
}
