/**
 * @module The stall sum process tests allow on top of a time bound: stalls
 * of several processes count once where they overlap, only within the window.
 */
import { describe, expect, it } from "vitest";
import { stalledWithin } from "./lateness-probe.js";

const late = (end: number, ms: number) => `late ${end} ${ms}`;

describe("stalledWithin", () => {
  it("sums one process's stalls that end in the window (or one tick after it)", () => {
    const lines = ["owner 1 1000", late(1_500, 200), late(3_000, 50), late(5_050, 40), late(5_200, 30)];
    expect(stalledWithin([lines], 1_000, 5_000)).toBe(200 + 50 + 40);
    expect(stalledWithin([lines], 1_600, 2_000)).toBe(0);
  });

  it("counts overlapping stalls of two processes once, and adds the parts that do not overlap", () => {
    const worker = [late(2_000, 500)];
    const server = [late(1_800, 400), late(4_000, 100)];
    // Worker stalled 1,500-2,000, server 1,400-1,800 and 3,900-4,000: union 1,400-2,000 and 3,900-4,000.
    expect(stalledWithin([worker, server], 0, 5_000)).toBe(600 + 100);
    expect(stalledWithin([worker, []], 0, 5_000)).toBe(500);
    // A stall inside another adds nothing.
    expect(stalledWithin([[late(2_000, 1_000)], [late(1_800, 100)]], 0, 5_000)).toBe(1_000);
  });

  it("counts reported store waits like stalls, once where they overlap a stall", () => {
    const worker = [late(2_000, 500), "waited 2200 400 app/lease/3", "waited 6000 300 app/lease/x"];
    // Stalled 1,500-2,000, waited 1,800-2,200 and 5,700-6,000: union 1,500-2,200 and 5,700-6,000.
    expect(stalledWithin([worker], 0, 7_000)).toBe(700 + 300);
    expect(stalledWithin([worker], 0, 5_000)).toBe(700);
  });
});
