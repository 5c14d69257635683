/**
 * @module A checkpoint's slices of work: sized from the turn it last gave the
 * event loop, within their bounds, whatever the clock says.
 */
import { describe, expect, it } from "vitest";
import { MockClock } from "taquba";
import { MAX_SLICE_MS, MIN_SLICE_MS, TurnPacer } from "../../runtime/engine/checkpoint-pace.js";

describe("checkpoint pace", () => {
  it("a slice is half the turn given away, within its bounds; a clock gone wrong takes the least", () => {
    expect(TurnPacer.sliceAfter(0)).toBe(MIN_SLICE_MS);
    expect(TurnPacer.sliceAfter(3)).toBe(MIN_SLICE_MS);
    expect(TurnPacer.sliceAfter(10)).toBe(5);
    expect(TurnPacer.sliceAfter(2 * MAX_SLICE_MS)).toBe(MAX_SLICE_MS);
    expect(TurnPacer.sliceAfter(1e30)).toBe(MAX_SLICE_MS);
    expect(TurnPacer.sliceAfter(Number.POSITIVE_INFINITY)).toBe(MAX_SLICE_MS);
    expect(TurnPacer.sliceAfter(-50)).toBe(MIN_SLICE_MS);
    expect(TurnPacer.sliceAfter(Number.NaN)).toBe(MIN_SLICE_MS);
  });

  it("the first slice is the least; after a busy turn the next is longer, after an idle one short again", async () => {
    const clock = new MockClock(1000);
    const pace = new TurnPacer(() => clock.now());
    clock.advance(MIN_SLICE_MS - 1);
    expect(pace.due()).toBe(false);
    clock.advance(1);
    expect(pace.due()).toBe(true);

    // The others take 40 ms of the loop while the checkpoint waits for its turn.
    setImmediate(() => clock.advance(40));
    await pace.turn();
    clock.advance(MAX_SLICE_MS - 1);
    expect(pace.due()).toBe(false);
    clock.advance(1);
    expect(pace.due()).toBe(true);

    // An idle loop: the next turn comes at once, and the slice is the least again.
    await pace.turn();
    expect(pace.due()).toBe(false);
    clock.advance(MIN_SLICE_MS);
    expect(pace.due()).toBe(true);
  });

  it("a clock set back during a slice makes it no longer than its length from the new time on", async () => {
    const clock = new MockClock(5000);
    const pace = new TurnPacer(() => clock.now());
    setImmediate(() => clock.set(1000));
    await pace.turn();
    expect(pace.due()).toBe(false);
    clock.advance(MIN_SLICE_MS);
    expect(pace.due()).toBe(true);
  });
});
