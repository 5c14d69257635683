/**
 * @module Ranged reads of one stored segment, for the open (which reads
 * segments by their tails) and the value pager (blocks): a range checked
 * against the size the manifest lists, and the tail (filter slot, index and
 * footer) read from a guess of its length.
 */
import { readRange, readRangeInto, type ObjectStore } from "../store/object-store.js";
import type { SegmentRef } from "./manifest.js";
import { withRetries, type RetryPolicy } from "./retry.js";
import { SEGMENT_FOOTER_BYTES, segmentCorrupted, segmentIndexStart, type SegmentBlockInfo, type SegmentTail } from "./segment-format.js";

/** What a segment read needs of the engine's store context. */
export interface SegmentReadContext {
  store: ObjectStore;
  prefix: string;
  retry: RetryPolicy;
}

/**
 * `length` bytes of `seg` from `offset`, with retries; null when the segment is gone, `StoreCorruptedError` when it is shorter than its manifest says.
 * With `into` (at least `length` bytes) a store that reads into a caller's buffer reads there, and the answer is a view of it.
 */
export async function readSegmentRange(
  ctx: SegmentReadContext,
  seg: SegmentRef,
  offset: number,
  length: number,
  into?: Uint8Array,
): Promise<Uint8Array | null> {
  const key = ctx.prefix + seg.name;
  const bytes = await withRetries(ctx.retry, "get", key, () =>
    into === undefined ? readRange(ctx.store, key, offset, length) : readRangeInto(ctx.store, key, offset, length, into),
  );
  if (bytes !== null && bytes.byteLength !== length) {
    throw segmentCorrupted(key, `segment ends before byte ${offset + length}, but its manifest lists ${seg.bytes} bytes`);
  }
  return bytes;
}

/**
 * The tail of `seg` from where its filter slot begins to its end: its last
 * `guess` bytes (all of it when smaller) with one read, and one more for
 * the rest when the slot starts earlier. `read` is `readSegmentRange` (or a
 * caller's counting wrapper of it). Null when the segment is gone; a
 * segment shorter than a footer by its manifest is `StoreCorruptedError`.
 */
export async function readSegmentTail(
  ctx: SegmentReadContext,
  seg: SegmentRef,
  guess: number,
  read: (offset: number, length: number) => Promise<Uint8Array | null>,
): Promise<Uint8Array | null> {
  const key = ctx.prefix + seg.name;
  const size = seg.bytes;
  if (size < SEGMENT_FOOTER_BYTES) throw segmentCorrupted(key, `its manifest lists ${size} bytes, shorter than a segment footer`);
  const tailStart = size - Math.min(size, guess);
  const tail = await read(tailStart, size - tailStart);
  if (tail === null) return null;
  const from = segmentIndexStart(key, tail, size);
  if (from >= tailStart) return tail.subarray(from - tailStart);
  const head = await read(from, tailStart - from);
  if (head === null) return null;
  const joined = new Uint8Array(size - from);
  joined.set(head, 0);
  joined.set(tail, head.byteLength);
  return joined;
}

/**
 * Checks that the segment read for `seg` is the one its manifest lists: its
 * entry count and its first and last keys (from its block index, which its
 * tail's checksum covers, and which every block read is checked against),
 * and, when the manifest records one, its `sum`, which covers every block of
 * a segment of format version 2 or later. A store answering another
 * segment's bytes of the same size passes every checksum of the segment
 * itself; a manifest without a `sum` (written before version 3) only has
 * the count and key range to tell them apart (see docs/engine.md, "A
 * segment's identity").
 */
export function checkSegmentIdentity(objectKey: string, seg: SegmentRef, tail: SegmentTail): void {
  const { blocks } = tail;
  const mismatch = (detail: string) =>
    segmentCorrupted(objectKey, `${detail}: the store answered bytes of another segment, or the manifest and the segment disagree`);
  if (tail.entryCount !== seg.entries) throw mismatch(`segment holds ${tail.entryCount} entries, the manifest says ${seg.entries}`);
  if (blocks.length > 0) {
    const first = blocks[0]!.firstKey;
    const last = blocks[blocks.length - 1]!.lastKey;
    if (first !== seg.firstKey) throw mismatch(`segment starts at key ${JSON.stringify(first)}, the manifest says ${JSON.stringify(seg.firstKey)}`);
    if (last !== seg.lastKey) throw mismatch(`segment ends at key ${JSON.stringify(last)}, the manifest says ${JSON.stringify(seg.lastKey)}`);
  }
  // Last: a count or key range that differs says more than two checksums.
  if (seg.sum === undefined) return;
  // Equal checksums of a version 1 segment would read as no mismatch at all: its format is what is wrong.
  if (tail.version < 2) throw mismatch(`segment is of format version ${tail.version}, whose checksum covers no block, yet the manifest records one for it`);
  if (tail.sum !== seg.sum) throw mismatch(`segment's checksum is ${hex(tail.sum)}, the manifest records ${hex(seg.sum)}`);
}

const hex = (n: number) => n.toString(16).padStart(8, "0");

/**
 * The blocks `first..last` of one read of a segment and their bytes: from
 * block `first`, as many whole blocks as fit in `most` bytes (always block
 * `first`). A store without ranged reads returns the whole object for
 * every read, so there the window runs to the segment's end: one read
 * instead of one whole-object read per window.
 */
export function blockWindow(store: ObjectStore, blocks: readonly SegmentBlockInfo[], first: number, most: number): { last: number; bytes: number } {
  const limit = store.getRange === undefined ? Number.POSITIVE_INFINITY : most;
  let last = first;
  let bytes = blocks[first]!.length;
  while (last + 1 < blocks.length && bytes + blocks[last + 1]!.length <= limit) bytes += blocks[++last]!.length;
  return { last, bytes };
}
