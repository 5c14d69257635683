/**
 * @module The block of segment numbers a compaction takes from once an
 * incremental checkpoint publishes during it, so that every later
 * manifest's `lastSegment` is above each segment the compaction writes
 * (recovery reads an unlisted segment above it as a deleted manifest's).
 */
import { CompactionTooLargeError } from "../errors.js";

/** Segment numbers a block reserves: 2^20 segments of 4 MiB (the default size) are 4 TiB. */
export const COMPACTION_SEGMENT_BLOCK = 1 << 20;

/** The numbers after `next` up to `top` are the compaction's own. */
export interface SegmentBlock {
  next: number;
  readonly top: number;
  readonly size: number;
}

/** The block of `size` numbers after `counter`, the engine's last segment number (which moves past it). */
export function reserveSegmentBlock(counter: number, size = COMPACTION_SEGMENT_BLOCK): SegmentBlock {
  return { next: counter, top: counter + size, size };
}

/**
 * The next number of `block`; throws `CompactionTooLargeError` when it is
 * used up: the compaction writes more segments of `maxSegmentBytes` than a
 * block holds, and fails without publishing (the state stays as it was).
 */
export function takeFromBlock(block: SegmentBlock, maxSegmentBytes: number): number {
  if (block.next >= block.top) throw new CompactionTooLargeError(block.size, maxSegmentBytes);
  return ++block.next;
}
