/**
 * @module A run's Bloom filter takes fewer bits per key past
 * `SMALL_RUN_KEYS` keys (the largest runs hold most keys, and a false
 * positive there costs a search of one block in memory). Whatever its size,
 * a filter never turns away a key its run holds: lookups across runs of both
 * sizes, keys present and absent, agree with a model.
 */
import { describe, expect, it } from "vitest";
import { KeyBytes, KeyRunBuilder, type KeyRun } from "../../runtime/engine/key-run.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { testRandom } from "../support/seed.js";

const LARGE = 300_000;
const recordKey = (i: number) => `j/${String(i).padStart(9, "0")}`;

/** A run of `keys` (ascending) valued by index, from a builder told its count or not. */
function runOf(keys: readonly string[], told: boolean): KeyRun {
  const b = new KeyRunBuilder(keys.length * 16, told ? keys.length : 0);
  for (const [i, k] of keys.entries()) b.add(k, i + 1);
  return b.finish();
}

/** The share of `absent` the run's filter lets through. */
function passed(run: KeyRun, absent: readonly string[]): number {
  const kb = new KeyBytes();
  let n = 0;
  for (const k of absent) if (run.mayHold(kb.set(k))) n++;
  return n / absent.length;
}

describe("key-run filter sizes", () => {
  it("a run past the small size takes under 0.7 bytes of filter per key, lets through under 15% of absent keys between its own, and never turns away one it holds", {
    timeout: 120_000,
  }, () => {
    // Even numbers held; the odd ones between them are absent.
    const keys = Array.from({ length: LARGE }, (_, i) => recordKey(i * 2));
    const absent = Array.from({ length: 20_000 }, (_, i) => recordKey(i * 60 + 1));
    for (const told of [true, false]) {
      const run = runOf(keys, told);
      expect(run.filterBytes / run.count, `told its count: ${told}`).toBeLessThan(0.7);
      const kb = new KeyBytes();
      const found = { valueAt: 0 };
      for (let i = 0; i < LARGE; i++) {
        const k = keys[i]!;
        if (!run.mayHold(kb.set(k))) expect.fail(`the filter turned away ${k}, which the run holds`);
        const index = run.find(k, kb, found);
        if (index !== i || run.value(found.valueAt) !== i + 1) expect.fail(`${k}: found at ${index}, held at ${i}`);
      }
      const rate = passed(run, absent);
      expect(rate).toBeLessThan(0.15);
      for (const k of absent) if (run.find(k, kb.set(k), found) !== -1) expect.fail(`found ${k}, which the run does not hold`);
    }
  });

  it("a small run keeps about 1% false positives at 10 bits per key", () => {
    const keys = Array.from({ length: 50_000 }, (_, i) => recordKey(i * 2));
    const run = runOf(keys, false);
    expect(run.filterBytes / run.count).toBeGreaterThan(1.2);
    expect(
      passed(
        run,
        Array.from({ length: 50_000 }, (_, i) => recordKey(i * 2 + 1)),
      ),
    ).toBeLessThan(0.02);
  });

  it("a builder told fewer keys than it gets, or more, still finds every key it holds", () => {
    const keys = Array.from({ length: 40_000 }, (_, i) => recordKey(i * 3));
    for (const expected of [1, 1000, 1_000_000]) {
      const b = new KeyRunBuilder(4096, expected);
      for (const k of keys) b.add(k, 7);
      const run = b.finish();
      const kb = new KeyBytes();
      const found = { valueAt: 0 };
      for (const k of keys) if (run.find(k, kb.set(k), found) < 0) expect.fail(`${k} not found (told ${expected} keys)`);
    }
  });

  it("lookups across small and large runs, newest first, agree with a model for keys present and absent", { timeout: 120_000 }, () => {
    const r = testRandom("key-run filter model");
    // Each run holds a random subset of one key space; newer runs shadow older ones.
    const space = 800_000;
    const sizes = [LARGE, 1200, LARGE - 1, 40, 5000];
    const runs: KeyRun[] = [];
    const model = new Map<string, number>();
    for (const [age, size] of sizes.entries()) {
      const picked = new Set<number>();
      while (picked.size < size) picked.add(r.int(space));
      const keys = [...picked].map(recordKey).sort(compareKeys);
      const b = new KeyRunBuilder(size * 16, r.random() < 0.5 ? size : 0);
      for (const k of keys) b.add(k, age * 1_000_000 + 1);
      runs.push(b.finish());
      for (const k of keys) model.set(k, age * 1_000_000 + 1);
    }
    const kb = new KeyBytes();
    const found = { valueAt: 0 };
    const lookup = (k: string): number | undefined => {
      kb.set(k);
      for (let i = runs.length - 1; i >= 0; i--) if (runs[i]!.find(k, kb, found) >= 0) return runs[i]!.value(found.valueAt) as number;
      return undefined;
    };
    for (let n = 0; n < 100_000; n++) {
      const k = recordKey(r.int(space + 1000));
      const got = lookup(k);
      if (got !== model.get(k)) expect.fail(`${k}: read ${got}, the model holds ${model.get(k)}`);
    }
    // Keys no run can hold: outside the space, with odd bytes, past every run's last key.
    for (const k of ["", "j/", "j/0", `j/${"9".repeat(12)}`, "k/000000001", "j/000000001\u0000", "\u{1F600}", "j/\uD800"]) expect(lookup(k)).toBe(model.get(k));
  });
});
