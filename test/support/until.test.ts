/**
 * @module The waits for background work bound the time this process was
 * run: a stretch in which it was not run (here a block of its event loop,
 * as a machine that does not schedule it) does not use up the bound, and a
 * condition that never holds still fails at the bound.
 */
import { describe, expect, it } from "vitest";
import { eventually, until } from "./until.js";

/** Blocks this process for `ms` in 10 ms; what is returned turns ready on a timer due during the block. */
function stallSoon(ms: number): { ready: boolean } {
  const state = { ready: false };
  setTimeout(() => {
    const from = Date.now();
    while (Date.now() - from < ms);
  }, 10);
  setTimeout(() => (state.ready = true), ms - 100);
  return state;
}

describe("until and eventually", () => {
  it("wait across a stall longer than their bound", async () => {
    const a = stallSoon(1_500);
    await until("ready", () => a.ready, 1_000);
    const b = stallSoon(1_500);
    await eventually(() => expect(b.ready).toBe(true), 1_000);
  });

  it("fail at the bound when the condition never holds, eventually with the check's own error", async () => {
    await expect(until("never", () => false, 300)).rejects.toThrow("timed out waiting for never");
    await expect(eventually(() => expect(1).toBe(2), 300)).rejects.toThrow(/expected 1 to be 2/);
  });
});
