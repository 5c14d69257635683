/**
 * @module The tests' `advanceUntil`: it moves a mock clock from timer to
 * timer, and only while nothing already queued on the event loop is left
 * to run, so a lease-like timer never fires between two parts of one
 * piece of work.
 */
import { describe, expect, it } from "vitest";
import { MockClock } from "taquba";
import { advanceUntil } from "./helpers.js";

describe("advanceUntil", () => {
  it("lets work queued on the event loop run before it moves the clock to the next timer", async () => {
    const clock = new MockClock(1_000);
    let done = false;
    let expiredFirst = false;
    // A lease 30 s out, and the work that ends before it on a turn of the loop (a commit's release, say).
    void clock.waitUntil(31_000).then(() => {
      if (!done) expiredFirst = true;
    });
    setImmediate(() => {
      done = true;
    });
    await advanceUntil(clock, 100_000, async () => done, "the work's end");
    expect(expiredFirst).toBe(false);
    expect(clock.now()).toBe(1_000);
  });

  it("moves the clock from timer to timer, while the condition waits on the clock", async () => {
    const clock = new MockClock(0);
    const fired: number[] = [];
    for (const at of [10, 20, 500]) void clock.waitUntil(at).then(() => fired.push(at));
    await advanceUntil(clock, 100, async () => fired.length >= 2, "two timers");
    expect(fired).toEqual([10, 20]);
    expect(clock.now()).toBe(20);
  });
});
