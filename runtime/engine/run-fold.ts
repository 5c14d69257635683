/**
 * @module Folding runs: an incremental checkpoint beside a long compaction
 * writes its changes together with the newest runs published beside that
 * compaction, as one run that replaces them, so the runs beside it stay
 * under a cap (docs/engine.md, "Runs beside a compaction folded").
 *
 * The runs folded in are read back from the store in key order, one window
 * of blocks per run at a time, and merged with the checkpoint's own
 * changes: for a key in several inputs the newest wins, tombstones stay
 * (older runs below may hold the key). A segment's block index comes from
 * the caller when it holds it (a paging writer holds every one), else from
 * the segment's tail.
 */
import { ClosedError, StoreCorruptedError } from "../errors.js";
import { compareKeys } from "../store/keys.js";
import type { SegmentRef } from "./manifest.js";
import type { ArenaValue, PackedValue } from "./paged-value.js";
import type { StoreContext } from "./recovery.js";
import { decodeSegmentTail, readBlockEntries, type SegmentBlockInfo } from "./segment-format.js";
import { blockWindow, checkSegmentIdentity, readSegmentRange, readSegmentTail } from "./segment-reads.js";

/** Most bytes of one read of a folded run: what a fold holds per run it reads back. */
export const FOLD_WINDOW_BYTES = 256 * 1024;

/** First guess of a segment tail's length (index, filter slot, footer): most fit, a larger one costs one more read. */
const TAIL_GUESS = 64 * 1024;

type Entry = [string, Uint8Array | ArenaValue | PackedValue | null];

/** The block index of a segment when the caller holds it (undefined: read it from the segment's tail). */
export type HeldIndex = (seg: SegmentRef) => readonly SegmentBlockInfo[] | undefined;

/** The entries of one stored run in key order, read by windows of blocks. */
class RunReader {
  readonly #ctx: StoreContext;
  readonly #segments: readonly SegmentRef[];
  readonly #stopped: () => boolean;
  readonly #held: HeldIndex | undefined;
  #seg = -1;
  #blocks: readonly SegmentBlockInfo[] = [];
  #block = 0;
  #keys: string[] = [];
  #values: (Uint8Array | null)[] = [];
  #at = 0;
  /**
   * Two buffers that windows are read into by turns, when the store reads
   * into a caller's buffer: the entries handed out last (`#handed`) are views
   * of one, which the caller may still hold while the next window is read,
   * so the next read goes into the other.
   */
  readonly #buffers: (Buffer | undefined)[] = [undefined, undefined];
  #handed = -1;

  constructor(ctx: StoreContext, segments: readonly SegmentRef[], stopped: () => boolean, held: HeldIndex | undefined) {
    this.#ctx = ctx;
    this.#segments = segments;
    this.#stopped = stopped;
    this.#held = held;
  }

  /** The current entry, or undefined once the run is read. */
  get key(): string | undefined {
    // By the length: past the end, the read would find whatever a prototype holds under that index.
    return this.#at < this.#keys.length ? this.#keys[this.#at] : undefined;
  }

  get value(): Uint8Array | null {
    return this.#values[this.#at]!;
  }

  /** Moves to the next entry; a promise when the next window must be read first. */
  advance(): Promise<void> | undefined {
    this.#at++;
    return this.#at < this.#keys.length ? undefined : this.#fill();
  }

  /** Reads windows until one holds an entry, or the run ends. */
  async #fill(): Promise<void> {
    this.#keys = [];
    this.#values = [];
    this.#at = 0;
    // Every window of this fill goes into the buffer not handed out before it (an empty window hands out nothing).
    const slot = this.#handed === 0 ? 1 : 0;
    while (this.#keys.length === 0) {
      if (this.#stopped()) throw new ClosedError("the engine (the checkpoint stopped before publishing)");
      if (this.#block >= this.#blocks.length) {
        if (++this.#seg >= this.#segments.length) return;
        this.#blocks = await this.#index(this.#segments[this.#seg]!);
        this.#block = 0;
        continue;
      }
      await this.#window(this.#segments[this.#seg]!, slot);
    }
    this.#handed = slot;
  }

  async #index(seg: SegmentRef): Promise<readonly SegmentBlockInfo[]> {
    const held = this.#held?.(seg);
    if (held !== undefined) return held;
    const key = this.#ctx.prefix + seg.name;
    const tail = await readSegmentTail(this.#ctx, seg, TAIL_GUESS, (offset, length) => readSegmentRange(this.#ctx, seg, offset, length));
    if (tail === null) throw new StoreCorruptedError(key, "it is missing, but the writer's own manifest lists it");
    const decoded = decodeSegmentTail(key, tail, seg.bytes);
    checkSegmentIdentity(key, seg, decoded);
    return decoded.blocks;
  }

  async #window(seg: SegmentRef, slot: number): Promise<void> {
    const blocks = this.#blocks;
    const first = this.#block;
    const { last, bytes: size } = blockWindow(this.#ctx.store, blocks, first, FOLD_WINDOW_BYTES);
    const start = blocks[first]!.offset;
    const key = this.#ctx.prefix + seg.name;
    let into: Buffer | undefined;
    if (this.#ctx.store.getRangeInto !== undefined) {
      into = this.#buffers[slot];
      if (into === undefined || into.length < size) this.#buffers[slot] = into = Buffer.allocUnsafeSlow(Math.max(size, FOLD_WINDOW_BYTES));
    }
    const bytes = await readSegmentRange(this.#ctx, seg, start, size, into);
    if (bytes === null) throw new StoreCorruptedError(key, "it is missing, but the writer's own manifest lists it");
    for (let b = first; b <= last; b++) {
      const info = blocks[b]!;
      const at = info.offset - start;
      readBlockEntries(key, b, info, bytes.subarray(at, at + info.length), (buf, keyAt, keyLen, valueAt, valueLen) => {
        this.#keys.push(buf.toString("utf8", keyAt, keyAt + keyLen));
        this.#values.push(valueLen < 0 ? null : new Uint8Array(buf.buffer, buf.byteOffset + valueAt, valueLen));
      });
    }
    this.#block = last + 1;
  }
}

/**
 * The entries of `changes` (ascending keys, the newest input) merged with
 * the stored `runs` (each a run's segments in key order, newest run first):
 * per key the value of the newest input that holds it, tombstones included.
 * `held` gives the block indexes the caller holds, which saves each of
 * those segments its tail read.
 */
export async function* foldRuns(
  ctx: StoreContext,
  changes: Iterable<Entry>,
  runs: readonly (readonly SegmentRef[])[],
  stopped: () => boolean,
  held?: HeldIndex,
): AsyncGenerator<Entry> {
  const readers = runs.map((segs) => new RunReader(ctx, segs, stopped, held));
  for (const r of readers) await r.advance();
  const own = changes[Symbol.iterator]();
  let mine = own.next();
  for (;;) {
    // The smallest key among the inputs; the newest input holding it wins (the changes, then runs newest first).
    let min: string | undefined = mine.done ? undefined : mine.value[0];
    for (const r of readers) {
      const k = r.key;
      if (k !== undefined && (min === undefined || compareKeys(k, min) < 0)) min = k;
    }
    if (min === undefined) return;
    let out: Entry | undefined;
    if (!mine.done && mine.value[0] === min) {
      out = mine.value;
      mine = own.next();
    }
    for (const r of readers) {
      if (r.key !== min) continue;
      out ??= [min, r.value];
      const p = r.advance();
      if (p !== undefined) await p;
    }
    yield out!;
  }
}
