/**
 * @module What a checkpoint writes by tiers (compaction-policy.ts): a new
 * run, a fold of the newest runs at the cap, or a compaction when the newer
 * runs outgrow the oldest or two thirds of what the runs list is dead.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, ValidationError } from "taquba";
import { DEAD_LISTED_FACTOR, MAX_FOLD_RUNS, planCheckpoint, tierFold, type RunSize } from "../../runtime/engine/compaction-policy.js";

const run = (entries: number, bytes = entries * 100): RunSize => ({ entries, bytes });

describe("planCheckpoint by tiers", () => {
  it("adds a run under the cap, and folds at the cap while the newer runs stay small and little is dead", () => {
    const runs = [run(10_000), run(100), run(100)];
    expect(planCheckpoint(runs, 100, 10_300, 4, true)).toEqual({ kind: "add" });
    expect(planCheckpoint([...runs, run(100)], 100, 10_400, 4, true)).toEqual({ kind: "fold", fold: 3 });
    // Many runs alike (what a fill leaves): a fold takes MAX_FOLD_RUNS of them, not all.
    const alike = [run(100_000), ...Array.from({ length: 15 }, () => run(100))];
    expect(planCheckpoint(alike, 100, 101_600, 16, true)).toEqual({ kind: "fold", fold: MAX_FOLD_RUNS });
  });

  it("never folds the oldest run, and stays at the cap (a fold replaces at least one run)", () => {
    // The newer runs are far larger than the change: only the newest is folded.
    const runs = [run(100_000), run(30_000), run(10_000)];
    expect(planCheckpoint(runs, 10, 130_000, 3, true)).toEqual({ kind: "fold", fold: 1 });
    expect(planCheckpoint([run(100_000), run(1)], 1, 100_001, 2, true)).toEqual({ kind: "fold", fold: 1 });
    // The oldest is as small in entries as the rest (large values): still only the newer runs fold.
    expect(planCheckpoint([run(100, 10_000), run(100, 100)], 100, 1000, 2, true)).toEqual({ kind: "fold", fold: 1 });
  });

  it("compacts when the newer runs together outgrow the oldest in bytes", () => {
    const runs = [run(1000), run(600), run(400)];
    expect(planCheckpoint(runs, 10, 2000, 16, true)).toEqual({ kind: "full" });
    expect(planCheckpoint([run(1000), run(600), run(399)], 10, 2000, 16, true)).toEqual({ kind: "add" });
  });

  it("compacts once the entries listed, with the change, reach three times the live keys (two thirds of them dead)", () => {
    // A drain: tombstones are small, so the newer runs stay far below the oldest in bytes.
    expect(DEAD_LISTED_FACTOR).toBe(3);
    const runs = [run(3000, 300_000), run(1500, 15_000), run(1499, 14_990)];
    expect(planCheckpoint(runs, 1, 2000, 16, true)).toEqual({ kind: "full" });
    expect(planCheckpoint(runs, 0, 2000, 16, true)).toEqual({ kind: "add" });
    expect(planCheckpoint(runs, 1, 2001, 16, true)).toEqual({ kind: "add" });
  });

  it("compacts as before with a cap of 1, a change as large as the state, or an empty state", () => {
    expect(planCheckpoint([], 5, 100, 1, true)).toEqual({ kind: "full" });
    expect(planCheckpoint([run(100)], 100, 100, 16, true)).toEqual({ kind: "full" });
    expect(planCheckpoint([], 0, 0, 16, true)).toEqual({ kind: "full" });
    expect(planCheckpoint([], 5, 100, 16, true)).toEqual({ kind: "add" });
  });

  it("without tiers, the cap compacts and the dead share does not", () => {
    const runs = [run(10_000), run(100), run(100), run(100)];
    expect(planCheckpoint(runs, 100, 10_400, 4, false)).toEqual({ kind: "full" });
    expect(planCheckpoint([run(3000, 300_000), run(1000, 10_000)], 1, 1000, 16, false)).toEqual({ kind: "add" });
  });
});

describe("tierFold", () => {
  it("takes the newest run always, then older ones while each holds at most twice what the fold holds", () => {
    expect(tierFold([run(1000), run(40), run(20), run(10)], 10)).toBe(3);
    expect(tierFold([run(1000), run(81), run(20), run(10)], 10)).toBe(2);
    expect(tierFold([run(1000)], 1)).toBe(1);
    expect(tierFold([], 1)).toBe(0);
    expect(tierFold([run(10), run(10), run(10)], 10, 2)).toBe(2);
  });
});

describe("EngineOptions.foldRunsByTier", () => {
  it("refuses anything but true or false before any IO, naming the option", async () => {
    const store = new MemoryStore();
    await expect(Engine.open(store, { foldRunsByTier: "yes" as unknown as boolean })).rejects.toThrow(ValidationError);
    await expect(Engine.open(store, { foldRunsByTier: 1 as unknown as boolean })).rejects.toThrow(/foldRunsByTier must be true or false, got/);
    const left: string[] = [];
    for await (const o of store.list("")) left.push(o.key);
    expect(left).toEqual([]);
  });
});
