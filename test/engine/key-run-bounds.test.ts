/**
 * @module A lookup skips a run whose first and last keys cannot hold the key
 * before asking its Bloom filter (`KeyRun.find`). Checked against a plain
 * map: keys held, deleted, at each run's boundaries, just before and after
 * them, between runs, non-ASCII keys against ASCII runs and the other way
 * round; and counted: a new key past every run's last key asks no filter.
 */
import { afterEach, describe, expect, it } from "vitest";
import { KeyBytes, KeyRunBuilder } from "../../runtime/engine/key-run.js";
import { countFilterProbes, FilterOutcome, filterProbeCounts } from "../../runtime/engine/key-run-tally.js";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { testRandom, type TestRandom } from "../support/seed.js";

/** Sums of the filter probe counts by outcome, over every first character. */
function probesByOutcome(): number[] {
  const sums = [0, 0, 0, 0, 0, 0, 0];
  for (const { counts } of filterProbeCounts()) for (const [i, c] of counts.entries()) sums[i]! += c;
  return sums;
}

/** Keys next to `k` in `compareKeys` order: just before it (when one exists) and just after it. */
function neighbours(k: string): string[] {
  const out = [`${k}\u0000`, `${k}~`, `${k}é`, `${k}😀`];
  if (k.length > 0) {
    const last = k.charCodeAt(k.length - 1);
    out.push(k.slice(0, -1));
    if (last > 1) out.push(k.slice(0, -1) + String.fromCharCode(last - 1));
    out.push(`${k.slice(0, -1)}${String.fromCharCode(Math.max(last - 1, 0))}~~`);
  }
  return out;
}

const FAMILIES = ["c/", "j/01J", "j/7ZZ", "p/jobs/", "é/", "😀/"];

/** A key of one of the families (ASCII ones only with `ascii`, so the runs are ASCII and take the bounds check). */
function randomKey(r: TestRandom, ascii: boolean): string {
  return FAMILIES[r.int(ascii ? 4 : FAMILIES.length)]! + String(r.int(5000)).padStart(5, "0");
}

// Counting is process-wide: stop it reading other tests' probes (a fresh count starts from zero).
afterEach(() => countFilterProbes());

describe("key run bounds before the filter", () => {
  it("a run finds exactly its keys: at its first and last key, just outside them, between and around them", () => {
    for (const keys of [["j/01A", "j/01B", "p/jobs/1", "p/jobs/2"], ["é", "éa", "😀"], ["a", "b~", "c\u0000"], ["only"]]) {
      const sorted = [...keys].sort(compareKeys);
      const b = new KeyRunBuilder(16);
      for (const [i, k] of sorted.entries()) b.add(k, i);
      const run = b.finish();
      const kb = new KeyBytes();
      const found = { valueAt: 0 };
      const held = new Set(sorted);
      const asked = new Set([...sorted, ...sorted.flatMap(neighbours), "", "\u007f", "\uffff", "a", "z", "j/", "j/01A\u0000"]);
      for (const k of asked) {
        const index = run.find(k, kb.set(k), found);
        expect({ k, found: index >= 0 }).toEqual({ k, found: held.has(k) });
        if (index >= 0) expect(run.value(found.valueAt)).toBe(sorted.indexOf(k));
      }
    }
  });

  it("a layered state matches a plain map over runs of mixed families, with keys deleted, at and around every run's bounds", () => {
    const r = testRandom("key run bounds model");
    // Rounds that ended with more than one run (merges may leave one): at least one must, for the bounds between runs.
    let severalRuns = 0;
    for (let round = 0; round < 4; round++) {
      const state = new LayeredState({ memtableKeys: 8 + r.int(200), maxRuns: 64 });
      const model = new Map<string, number>();
      // Every key ever written: each run's first and last key is one of them, live or dead by now.
      const written = new Set<string>();
      for (let step = 0; step < 3000; step++) {
        const key = randomKey(r, round % 2 === 0);
        if (r.int(4) === 0) expect(state.delete(key)).toBe(model.delete(key));
        else {
          state.set(key, step);
          model.set(key, step);
          written.add(key);
        }
        if (r.int(300) === 0) state.freeze();
      }
      state.freeze();
      // Keys deleted after the runs were made: each one's run entry is dead, and may be a run's bound.
      for (const k of [...model.keys()].filter(() => r.int(8) === 0)) {
        expect(state.delete(k)).toBe(true);
        model.delete(k);
      }
      if (state.runCount > 1) severalRuns++;
      const asked = new Set<string>();
      for (const k of written) for (const n of [k, ...neighbours(k)]) asked.add(n);
      for (const f of FAMILIES) for (const n of [f, ...neighbours(f), `${f}99999`, `${f}~`]) asked.add(n);
      // One check of every asked key (an expect per key was most of the test's time under load).
      const wrong = [...asked].filter((k) => state.get(k) !== model.get(k) || state.has(k) !== model.has(k));
      expect(wrong.map((k) => ({ k, v: state.get(k), has: state.has(k), want: model.get(k) }))).toEqual([]);
      expect([...state.scan()].map(([k]) => k)).toEqual([...model.keys()].sort(compareKeys));
    }
    expect(severalRuns).toBeGreaterThan(0);
  }, 60_000);

  it("a key past every run's last key asks no filter; one before every first key neither; one inside asks", () => {
    const state = new LayeredState({ memtableKeys: 1_000, maxRuns: 64 });
    let n = 0;
    for (let run = 0; run < 4; run++) {
      for (let i = 0; i < 1_000; i++, n++) {
        const id = String(n).padStart(8, "0");
        state.set(`j/${id}`, n);
        state.set(`p/jobs/${id}`, n);
      }
      state.freeze();
    }
    expect(state.runCount).toBeGreaterThan(1);
    countFilterProbes();
    // New keys of both families, as a fill writes them: past every run's last key (`p/`), or inside runs' ranges (`j/`).
    const newest = String(n).padStart(8, "0");
    expect(state.has(`p/jobs/${newest}`)).toBe(false);
    expect(state.has("a/before-everything")).toBe(false);
    const skipped = probesByOutcome();
    expect(skipped[FilterOutcome.SkippedOutOfRange]).toBe(2 * state.runCount);
    expect(skipped.reduce((a, b) => a + b, 0)).toBe(2 * state.runCount);
    countFilterProbes();
    expect(state.has(`j/${newest}`)).toBe(false);
    const inside = probesByOutcome();
    expect(inside[FilterOutcome.SkippedOutOfRange]).toBe(0);
    expect(inside[FilterOutcome.RejectedInRange]! + inside[FilterOutcome.MaybeAbsent]!).toBe(state.runCount);
  });
});
