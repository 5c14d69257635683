/**
 * @module The bound on the group commit's hold after slow puts, as pure
 * logic on a MockClock: a held object goes once its bound passes whatever
 * still waits, the bound is a share of the put latency within a cap and
 * never under the flush window, the batch a hold gathers grows with the
 * commit rate, and nothing is held when nothing waits (an idle engine).
 */
import { afterEach, describe, expect, it } from "vitest";
import { MockClock } from "taquba";
import { GatherBound, holdTuning, holdsOpen } from "../../runtime/engine/wal-gather-bound.js";
import { MIN_OBJECT_BATCHES } from "../../runtime/engine/wal-writer.js";

const tuned = { ...holdTuning };
afterEach(() => Object.assign(holdTuning, tuned));

/** A bound that has seen `n` puts of `ms` each. */
function boundAfter(flushIntervalMs: number, ms: number, n = 1): GatherBound {
  const b = new GatherBound(flushIntervalMs);
  for (let i = 0; i < n; i++) b.notePut(ms);
  return b;
}

/**
 * Commits gathered by an object opened now, `perMs` arriving each millisecond while `waiting` commits wait elsewhere,
 * until the hold lets it go; the clock ends at the time it went.
 */
function gather(clock: MockClock, bound: GatherBound, perMs: number, waiting: number): number {
  const holdUntil = clock.now() + bound.holdMs();
  let gathered = 1;
  while (holdsOpen({ gathered, waiting, now: clock.now(), holdUntil }, MIN_OBJECT_BATCHES)) {
    if (gathered % perMs === 0) clock.advance(1);
    gathered++;
  }
  return gathered;
}

describe("the hold's bound after slow puts", () => {
  it("lets a held object go once its bound passes, however many commits still wait", () => {
    const clock = new MockClock();
    for (const putMs of [4, 20, 80, 400]) {
      const bound = boundAfter(2, putMs);
      const opened = clock.now();
      const holdUntil = opened + bound.holdMs();
      for (const waiting of [MIN_OBJECT_BATCHES, 10 * MIN_OBJECT_BATCHES, 1e6]) {
        clock.set(opened);
        expect(holdsOpen({ gathered: 1, waiting, now: clock.now(), holdUntil }, MIN_OBJECT_BATCHES)).toBe(true);
        clock.set(holdUntil - 1);
        expect(holdsOpen({ gathered: 1, waiting, now: clock.now(), holdUntil }, MIN_OBJECT_BATCHES)).toBe(true);
        clock.set(holdUntil);
        expect(holdsOpen({ gathered: 1, waiting, now: clock.now(), holdUntil }, MIN_OBJECT_BATCHES), `put ${putMs} ms, ${waiting} waiting`).toBe(false);
      }
    }
  });

  it("is the put latency's share, never under the flush window, never over the cap", () => {
    expect(boundAfter(2, 20).holdMs()).toBe(20 * holdTuning.putShare);
    // A fast store: the flush window, as before.
    expect(boundAfter(2, 1).holdMs()).toBe(2);
    expect(boundAfter(10_000, 20).holdMs()).toBe(10_000);
    // Before any put landed: the flush window.
    expect(new GatherBound(2).holdMs()).toBe(2);
    // A steady slow store stops at the cap.
    expect(boundAfter(2, 1_000, 50).holdMs()).toBe(holdTuning.maxHoldMs);
    // One put slowed by retries or a stall moves it by an eighth of what the cap uses, and fades in a few puts.
    const b = boundAfter(2, 20, 20);
    b.notePut(30_000);
    expect(b.holdMs()).toBeLessThanOrEqual(20 * holdTuning.putShare + holdTuning.maxHoldMs / 8);
    for (let i = 0; i < 50; i++) b.notePut(20);
    expect(b.holdMs()).toBeCloseTo(20 * holdTuning.putShare, 1);
    // A reading that is not a duration is ignored.
    b.notePut(Number.NaN);
    b.notePut(-1);
    expect(b.holdMs()).toBeCloseTo(20 * holdTuning.putShare, 1);
  });

  it("gathers more commits per object as the commit rate grows, up to the object size that ends a hold", () => {
    const clock = new MockClock();
    const bound = boundAfter(2, 20);
    const waiting = 4 * MIN_OBJECT_BATCHES;
    const sizes = [1, 2, 5, 50].map((perMs) => {
      const opened = clock.now();
      const n = gather(clock, bound, perMs, waiting);
      // Whatever the rate, the first commit waited at most the bound.
      expect(clock.now() - opened).toBeLessThanOrEqual(bound.holdMs());
      return n;
    });
    for (let i = 1; i < sizes.length; i++) expect(sizes[i]!, `sizes ${sizes.join(", ")}`).toBeGreaterThan(sizes[i - 1]!);
    expect(sizes.at(-1)).toBe(MIN_OBJECT_BATCHES);
    // A slower store stretches the bound with its round trip: more commits at the same rate.
    const slower = boundAfter(2, 80);
    expect(gather(clock, slower, 2, waiting)).toBeGreaterThan(sizes[1]!);
  });

  it("holds nothing while fewer commits wait than an object's smallest size: an idle engine's object goes at the end of its turn", () => {
    const clock = new MockClock();
    const bound = boundAfter(2, 20);
    expect(gather(clock, bound, 50, 0)).toBe(1);
    expect(gather(clock, bound, 50, MIN_OBJECT_BATCHES - 1)).toBe(1);
    // An object already as large as that goes too.
    expect(holdsOpen({ gathered: MIN_OBJECT_BATCHES, waiting: 1e6, now: clock.now(), holdUntil: clock.now() + 1_000 }, MIN_OBJECT_BATCHES)).toBe(false);
  });
});
