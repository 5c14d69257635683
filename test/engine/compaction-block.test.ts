/**
 * @module The block of segment numbers a compaction takes from once an
 * incremental checkpoint published during it: numbers run after the
 * engine's counter up to the block's top, and one past it is a typed
 * error saying what to change, not a plain Error.
 */
import { describe, expect, it } from "vitest";
import { CompactionTooLargeError, TaqubaError } from "taquba";
import { COMPACTION_SEGMENT_BLOCK, reserveSegmentBlock, takeFromBlock } from "../../runtime/engine/compaction-block.js";

describe("compaction segment block", () => {
  it("hands out the numbers after the counter up to its top", () => {
    const block = reserveSegmentBlock(41, 3);
    expect([takeFromBlock(block, 1024), takeFromBlock(block, 1024), takeFromBlock(block, 1024)]).toEqual([42, 43, 44]);
    expect(block.top).toBe(44);
    expect(reserveSegmentBlock(7).top).toBe(7 + COMPACTION_SEGMENT_BLOCK);
  });

  it("used up, refuses with CompactionTooLargeError naming maxSegmentBytes and what to do", () => {
    const block = reserveSegmentBlock(0, 2);
    takeFromBlock(block, 4 * 1024 * 1024);
    takeFromBlock(block, 4 * 1024 * 1024);
    let err: unknown;
    try {
      takeFromBlock(block, 4 * 1024 * 1024);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CompactionTooLargeError);
    expect(err).toBeInstanceOf(TaqubaError);
    const e = err as CompactionTooLargeError;
    expect(e.code).toBe("COMPACTION_TOO_LARGE");
    expect(e.retryable).toBe(false);
    expect({ segments: e.segments, maxSegmentBytes: e.maxSegmentBytes }).toEqual({ segments: 2, maxSegmentBytes: 4 * 1024 * 1024 });
    expect(e.message).toContain("more than 2 segments of 4194304 bytes (EngineOptions.maxSegmentBytes)");
    expect(e.message).toContain("with a larger maxSegmentBytes");
    // Nothing was taken: the block still refuses.
    expect(() => takeFromBlock(block, 1)).toThrow(CompactionTooLargeError);
  });
});
