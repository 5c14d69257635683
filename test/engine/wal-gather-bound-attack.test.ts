/**
 * @module Attack on the hold bound's put latency estimate with timings a
 * hostile or broken timer gives: NaN, negative (a clock stepped back),
 * infinite, huge, and a store whose puts are slow, then fast, then stall.
 * The bound stays a number between the flush window and the cap, follows
 * the puts that make sense, and ignores those that do not.
 */
import { describe, expect, it } from "vitest";
import { GatherBound, holdTuning } from "../../runtime/engine/wal-gather-bound.js";

const FLUSH_MS = 2;

/** The bound after puts of `ms` each, in turn. */
function boundAfter(...ms: number[]): GatherBound {
  const b = new GatherBound(FLUSH_MS);
  for (const m of ms) b.notePut(m);
  return b;
}

describe("the hold bound fed hostile put timings", () => {
  it("ignores NaN and negative timings, before and after a put that makes sense", () => {
    for (const bad of [Number.NaN, -1, -1e9, Number.NEGATIVE_INFINITY]) {
      const none = boundAfter(bad, bad);
      expect(none.putMs).toBeNaN();
      expect(none.holdMs()).toBe(FLUSH_MS);
      const some = boundAfter(40, bad, bad, bad);
      expect(some.putMs).toBe(40);
      expect(some.holdMs()).toBe(40 * holdTuning.putShare);
    }
  });

  it("counts an infinite or huge timing at the cap's latency, and lets it fade in a few puts", () => {
    const capLatency = holdTuning.maxHoldMs / holdTuning.putShare;
    for (const huge of [Number.POSITIVE_INFINITY, Number.MAX_VALUE, 1e12]) {
      const b = boundAfter(huge);
      expect(b.putMs).toBe(capLatency);
      expect(b.holdMs()).toBe(holdTuning.maxHoldMs);
      for (let i = 0; i < 40; i++) b.notePut(1);
      expect(Number.isFinite(b.putMs)).toBe(true);
      expect(b.holdMs()).toBe(FLUSH_MS);
    }
  });

  it("follows a store whose puts are slow, then fast, then stall, always within the window and the cap", () => {
    const b = new GatherBound(FLUSH_MS);
    const seen: number[] = [];
    const phases = [
      ...Array.from({ length: 30 }, () => 100),
      ...Array.from({ length: 60 }, () => 0.2),
      ...Array.from({ length: 30 }, () => Number.POSITIVE_INFINITY),
      ...Array.from({ length: 5 }, () => Number.NaN),
    ];
    for (const ms of phases) {
      b.notePut(ms);
      const hold = b.holdMs();
      expect(hold).toBeGreaterThanOrEqual(FLUSH_MS);
      expect(hold).toBeLessThanOrEqual(holdTuning.maxHoldMs);
      seen.push(hold);
    }
    // Slow puts: a quarter of 100 ms; fast puts bring it back to the window; the stall to the cap, which the NaNs keep.
    expect(seen[29]).toBeCloseTo(25, 0);
    expect(seen[89]).toBe(FLUSH_MS);
    expect(seen[119]).toBeGreaterThan(holdTuning.maxHoldMs * 0.95);
    expect(seen[124]).toBe(seen[119]);
  });

  it("never goes under the flush window, even a window of zero, nor over the cap", () => {
    for (const window of [0, 1, 10, 100]) {
      const b = new GatherBound(window);
      for (const ms of [0, 5, 1e6, 3]) {
        b.notePut(ms);
        expect(b.holdMs()).toBeGreaterThanOrEqual(window);
        expect(b.holdMs()).toBeLessThanOrEqual(Math.max(window, holdTuning.maxHoldMs));
      }
    }
  });
});
