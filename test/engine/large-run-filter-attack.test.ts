/**
 * @module Attacks on the coarser Bloom filter of key runs past 262,144 keys
 * (5 bits per key, 3 probes): runs at the size where the filter changes,
 * builders told one count and given another, and a state whose largest run
 * lets through about a tenth of absent keys. A false positive must never
 * change an answer: absent keys read as absent, their deletes and kills
 * change nothing, and the state reads as a model afterwards.
 */
import { describe, expect, it } from "vitest";
import { KeyBytes, KeyRunBuilder } from "../../runtime/engine/key-run.js";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import { testRandom } from "../support/seed.js";

const SMALL_RUN_KEYS = 262_144;
const key = (i: number) => `p/${String(i).padStart(8, "0")}`;

describe("key runs past 262,144 keys, filters attacked", () => {
  it.each([
    [SMALL_RUN_KEYS, 0],
    [SMALL_RUN_KEYS + 1, 0],
    [SMALL_RUN_KEYS, SMALL_RUN_KEYS + 1],
    [SMALL_RUN_KEYS + 1, SMALL_RUN_KEYS],
    [SMALL_RUN_KEYS + 1, 1],
  ])("a run of %s keys (builder told %s) finds every key it holds and none between them", { timeout: 120_000 }, (count, told) => {
    const b = new KeyRunBuilder(count * 16, told);
    for (let i = 0; i < count; i++) b.add(key(2 * i), i);
    const run = b.finish();
    expect(run.count).toBe(count);
    const kb = new KeyBytes();
    const found = { valueAt: 0 };
    let letThrough = 0;
    for (let i = 0; i < count; i++) {
      const k = key(2 * i);
      if (!run.mayHold(kb.set(k))) expect.fail(`the filter turned away ${k}, which the run holds`);
      if (run.find(k, kb, found) !== i || run.value(found.valueAt) !== i) expect.fail(`${k} not found at ${i}`);
      if (i % 7 === 0) {
        const absent = key(2 * i + 1);
        if (run.mayHold(kb.set(absent))) letThrough++;
        if (run.find(absent, kb, found) !== -1) expect.fail(`found ${absent}, which the run does not hold`);
      }
    }
    // Absent keys past the last and before the first, and keys of other lengths.
    for (const absent of [key(2 * count), key(-1), "p/", "p/0000000", "p/000000000", "q/00000000"]) expect(run.find(absent, kb.set(absent), found)).toBe(-1);
    expect(letThrough).toBeGreaterThan(0);
  });

  it("a state whose largest run lets absent keys through: their reads, deletes and kills change nothing, the rest reads as a model", {
    timeout: 120_000,
  }, () => {
    const r = testRandom("large run filter model");
    const count = SMALL_RUN_KEYS + 40_000 + r.int(20_000);
    const state = new LayeredState({ memtableKeys: count, idleSlice: 0 });
    const model = new Map<string, number>();
    // Every third key of 3 * count is held; the others are absent.
    for (let i = 0; i < count; i++) {
      state.set(key(3 * i), i);
      model.set(key(3 * i), i);
    }
    // The freeze copies its run in later slices; this test reads the run itself.
    state.finishMerges();
    expect(state.runCount).toBe(1);
    const kb = new KeyBytes();
    let falsePositives = 0;
    for (let n = 0; n < 60_000; n++) {
      const i = r.int(3 * count + 30);
      const k = key(i);
      const inModel = model.has(k);
      if (!inModel && state.mayHoldInRuns(kb.set(k))) falsePositives++;
      if (state.get(k) !== model.get(k)) expect.fail(`${k}: read ${String(state.get(k))}, the model holds ${String(model.get(k))}`);
      if (state.has(k) !== inModel) expect.fail(`${k}: has ${!inModel}`);
      if (inModel) continue;
      // An absent key's delete and kill (open's, from bytes or from a string) find nothing to kill.
      if (state.delete(k)) expect.fail(`deleted ${k}, which the state does not hold`);
      if (state.killBytes(kb.set(k))) expect.fail(`killed ${k} by its bytes, which the state does not hold`);
      if (state.kill(k)) expect.fail(`killed ${k}, which the state does not hold`);
    }
    // At 5 bits per key about a tenth of absent keys pass the filter: the answers above went through its false positives.
    expect(falsePositives).toBeGreaterThan(1_000);
    expect(state.size).toBe(model.size);
    // Deletes of held keys (a drain) between lookups of absent ones.
    for (let i = 0; i < count; i += 1 + r.int(5)) {
      expect(state.delete(key(3 * i))).toBe(true);
      model.delete(key(3 * i));
      const absent = key(3 * i + 1 + r.int(2));
      expect(state.get(absent)).toBeUndefined();
    }
    expect(state.size).toBe(model.size);
    let seen = 0;
    for (const [k, v] of state.scan()) {
      if (model.get(k) !== v) expect.fail(`scan read ${k}=${String(v)}, the model holds ${String(model.get(k))}`);
      seen++;
    }
    expect(seen).toBe(model.size);
  });
});
