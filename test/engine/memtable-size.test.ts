/**
 * @module The memtable's size when the engine chooses it: the decision at a
 * freeze as pure logic (rewritten keys grow it, written-once keys do not,
 * the range holds whatever the figures), the bytes bound of the state under
 * absurd workloads (huge values, one key rewritten forever, alternating
 * phases), and the state's reads against a plain map across grows and
 * shrinks.
 */
import { describe, expect, it } from "vitest";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import {
  DEFAULT_MEMTABLE_RANGE,
  EARLY_GROW_SHARE,
  EARLY_SHARE,
  earlyMemtableKeys,
  entryBytes,
  GROW_SHARE,
  nextMemtableKeys,
  SHRINK_SHARE,
  type MemtableRange,
} from "../../runtime/engine/memtable-size.js";
import { heldValue, type StoredValue } from "../../runtime/engine/paged-value.js";
import { firstDifference } from "../support/first-difference.js";
import { testRandom } from "../support/seed.js";

const RANGE: MemtableRange = { minKeys: 64, maxKeys: 1024 };

/** The estimated bytes the state's memtable holds now. */
function memtableBytes(state: LayeredState): number {
  let n = 0;
  for (const [k, v] of state.snapshot().memtableEntries()) n += entryBytes(k, v);
  return n;
}

function key(i: number): string {
  return `k/${String(i).padStart(7, "0")}`;
}

describe("nextMemtableKeys", () => {
  it("grows eightfold when a full memtable's writes killed young entries, up to the range's top", () => {
    let keys = RANGE.minKeys;
    const seen = [keys];
    for (let i = 0; i < 4; i++) {
      keys = nextMemtableKeys(keys, { added: keys, youngKills: keys, full: true }, RANGE);
      seen.push(keys);
    }
    expect(seen).toEqual([64, 512, 1024, 1024, 1024]);
    expect(nextMemtableKeys(100, { added: 100, youngKills: Math.ceil(100 * GROW_SHARE), full: true }, RANGE)).toBe(800);
    expect(nextMemtableKeys(100, { added: 100, youngKills: Math.floor(100 * GROW_SHARE) - 1, full: true }, RANGE)).toBe(100);
  });

  it("does not grow for keys written once, and halves back to the range's bottom", () => {
    expect(nextMemtableKeys(64, { added: 64, youngKills: 0, full: true }, RANGE)).toBe(64);
    let keys = 1024;
    const seen = [keys];
    for (let i = 0; i < 6; i++) {
      keys = nextMemtableKeys(keys, { added: keys, youngKills: 0, full: true }, RANGE);
      seen.push(keys);
    }
    expect(seen).toEqual([1024, 512, 256, 128, 64, 64, 64]);
  });

  it("keeps its size between the two shares, and never grows on a freeze it did not fill", () => {
    const between = Math.floor(200 * ((GROW_SHARE + SHRINK_SHARE) / 2));
    expect(nextMemtableKeys(200, { added: 200, youngKills: between, full: true }, RANGE)).toBe(200);
    expect(nextMemtableKeys(200, { added: 200, youngKills: 200, full: false }, RANGE)).toBe(200);
    expect(nextMemtableKeys(200, { added: 0, youngKills: 0, full: true }, RANGE)).toBe(200);
  });

  it("stays within its range whatever the figures", () => {
    const r = testRandom("memtable size range");
    const odd = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -1, 0, 1e30, 0.5];
    for (let i = 0; i < 2000; i++) {
      const pick = () => (r.int(3) === 0 ? odd[r.int(odd.length)]! : r.int(5000));
      const keys = nextMemtableKeys(pick(), { added: pick(), youngKills: pick(), full: r.int(2) === 0 }, RANGE);
      expect(Number.isInteger(keys)).toBe(true);
      expect(keys).toBeGreaterThanOrEqual(RANGE.minKeys);
      expect(keys).toBeLessThanOrEqual(RANGE.maxKeys);
    }
  });

  it("counts an entry's key, value and objects in its estimate", () => {
    expect(entryBytes("k/1", 7)).toBeLessThan(entryBytes("k/1", "abc"));
    expect(entryBytes("k/1", new Uint8Array(10))).toBeLessThan(entryBytes("k/1", new Uint8Array(1000)));
    expect(entryBytes("k/1", new Uint8Array(1000)) - entryBytes("k/1", new Uint8Array(0))).toBe(1000);
    expect(entryBytes("a".repeat(1000), 1) - entryBytes("", 1)).toBe(1000);
  });
});

describe("earlyMemtableKeys", () => {
  it("grows before the freeze once an eighth of the memtable's keys were added with twice the grow share of young kills", () => {
    const eighth = RANGE.minKeys * EARLY_SHARE;
    expect(earlyMemtableKeys(64, { added: eighth, youngKills: eighth }, RANGE)).toBe(512);
    expect(earlyMemtableKeys(64, { added: eighth, youngKills: Math.ceil(eighth * EARLY_GROW_SHARE) }, RANGE)).toBe(512);
    // The share that grows the memtable at a freeze waits for the freeze.
    expect(earlyMemtableKeys(64, { added: 40, youngKills: 40 * GROW_SHARE }, RANGE)).toBe(64);
    // Too few keys added yet to tell, however many kills.
    expect(earlyMemtableKeys(64, { added: eighth - 1, youngKills: 1000 }, RANGE)).toBe(64);
    // Keys written once.
    expect(earlyMemtableKeys(64, { added: 60, youngKills: 0 }, RANGE)).toBe(64);
    expect(earlyMemtableKeys(64, { added: 60, youngKills: Math.floor(60 * GROW_SHARE) - 1 }, RANGE)).toBe(64);
    expect(earlyMemtableKeys(512, { added: 500, youngKills: 500 }, RANGE)).toBe(1024);
    expect(earlyMemtableKeys(1024, { added: 1000, youngKills: 1000 }, RANGE)).toBe(1024);
  });

  it("never shrinks (that waits for the freeze) and stays within its range whatever the figures", () => {
    expect(earlyMemtableKeys(512, { added: 500, youngKills: 0 }, RANGE)).toBe(512);
    const r = testRandom("early memtable size range");
    const odd = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -1, 0, 1e30, 0.5];
    for (let i = 0; i < 2000; i++) {
      const pick = () => (r.int(3) === 0 ? odd[r.int(odd.length)]! : r.int(5000));
      const before = pick();
      const keys = earlyMemtableKeys(before, { added: pick(), youngKills: pick() }, RANGE);
      expect(Number.isInteger(keys)).toBe(true);
      expect(keys).toBeGreaterThanOrEqual(RANGE.minKeys);
      expect(keys).toBeLessThanOrEqual(RANGE.maxKeys);
      if (before >= RANGE.minKeys && before <= RANGE.maxKeys && Number.isInteger(before)) expect(keys).toBeGreaterThanOrEqual(before);
    }
  });
});

describe("LayeredState's memtable size", () => {
  it("starts at 32,768 keys, and a given memtableKeys never changes", () => {
    expect(new LayeredState().memtableTarget).toBe(DEFAULT_MEMTABLE_RANGE.minKeys);
    const fixed = new LayeredState({ memtableKeys: 64 });
    for (let round = 0; round < 20; round++) for (let i = 0; i < 256; i++) fixed.set(key(i), round);
    expect(fixed.memtableTarget).toBe(64);
    expect(fixed.counters.grows + fixed.counters.shrinks).toBe(0);
    expect(fixed.counters.freezes).toBeGreaterThan(20);
  });

  it("grows for a working set rewritten over and over until it fits, then freezes no more", () => {
    // Rewritten in the same order each round (as the engine-commit benchmark does), 400 keys: past
    // the smallest memtable, within the entries its last eight freezes made.
    const state = new LayeredState({ memtableRange: RANGE });
    for (let round = 0; round < 30; round++) for (let i = 0; i < 400; i++) state.set(key(i), round);
    expect(state.counters.grows).toBeGreaterThan(0);
    expect(state.memtableTarget).toBeGreaterThan(400);
    const freezes = state.counters.freezes;
    for (let round = 0; round < 10; round++) for (let i = 0; i < 400; i++) state.set(key(i), round);
    expect(state.counters.freezes).toBe(freezes);
    expect(state.layout.memtableKeys).toBe(400);
    expect(state.runCount).toBe(0);
  });

  it("grows an eighth of a memtable into the second pass over a rewritten working set, before the memtable fills again", () => {
    // Four memtables wide, rewritten in order: the first pass writes each key once (as a queue's
    // fill would), and only the pass after it kills the entries its freezes made.
    const width = 4 * RANGE.minKeys;
    const state = new LayeredState({ memtableRange: RANGE, idleSlice: 0 });
    for (let i = 0; i < width; i++) state.set(key(i), 0);
    expect(state.counters.freezes).toBe(4);
    expect(state.counters.grows).toBe(0);
    let writes = 0;
    while (state.counters.grows === 0 && writes < width) state.set(key(writes++), 1);
    expect(writes).toBe(RANGE.minKeys * EARLY_SHARE);
    expect(state.counters.earlyGrows).toBe(1);
    expect(state.counters.freezes).toBe(4);
    expect(state.memtableTarget).toBe(512);
    // The rest of the second pass moves the working set into the memtable; after it, nothing freezes.
    for (let round = 1; round < 4; round++) for (let i = 0; i < width; i++) state.set(key(i), round);
    expect(state.counters.freezes).toBe(4);
    expect(state.runCount).toBe(0);
    for (let i = 0; i < width; i++) expect(state.get(key(i))).toBe(3);
  });

  it("does not grow early for keys written once, nor for a working set whose kills are too few", () => {
    const once = new LayeredState({ memtableRange: RANGE });
    for (let i = 0; i < 20 * RANGE.minKeys; i++) once.set(key(i), i);
    expect(once.counters.grows).toBe(0);
    // One key in five rewritten from the previous memtable: a share that grows it only at a freeze, seeing the whole interval.
    const mixed = new LayeredState({ memtableRange: RANGE });
    let fresh = 0;
    for (let i = 0; i < 20 * RANGE.minKeys; i++) {
      if (i % 5 === 4 && fresh > RANGE.minKeys) mixed.set(key(fresh - RANGE.minKeys), i);
      else mixed.set(key(fresh++), i);
    }
    expect(mixed.counters.earlyGrows).toBe(0);
  });

  it("does not grow for a working set more than eight of its memtables wide, rewritten in order (no larger memtable in its range would hold it)", () => {
    const state = new LayeredState({ memtableRange: RANGE });
    for (let round = 0; round < 10; round++) for (let i = 0; i < 2_000; i++) state.set(key(i), round);
    expect(state.counters.grows).toBe(0);
    expect(state.memtableTarget).toBe(RANGE.minKeys);
  });

  it("does not grow for keys written once and deleted once later", () => {
    const state = new LayeredState({ memtableRange: RANGE });
    for (let i = 0; i < 20_000; i++) {
      state.set(key(i), i);
      // A queue's drain behind its fill: each key dies long after it was frozen.
      if (i >= 10_000) expect(state.delete(key(i - 10_000))).toBe(true);
    }
    expect(state.counters.freezes).toBeGreaterThan(100);
    expect(state.counters.grows).toBe(0);
    expect(state.memtableTarget).toBe(RANGE.minKeys);
    expect(state.size).toBe(10_000);
  });

  it("shrinks back when a rewriting phase gives way to written-once keys, and grows again after: alternating phases", () => {
    const state = new LayeredState({ memtableRange: RANGE });
    let next = 1_000_000;
    for (let phase = 0; phase < 3; phase++) {
      for (let round = 0; round < 20; round++) for (let i = 0; i < 500; i++) state.set(key(i), round);
      expect(state.memtableTarget).toBeGreaterThanOrEqual(512);
      for (let i = 0; i < 8_000; i++) state.set(key(next++), i);
      expect(state.memtableTarget).toBe(RANGE.minKeys);
    }
    expect(state.counters.grows).toBeGreaterThanOrEqual(3);
    expect(state.counters.shrinks).toBeGreaterThanOrEqual(3);
  });

  it("bounds the memtable's bytes under huge values, whatever its keys", () => {
    const bound = 1 << 20;
    const state = new LayeredState({ memtableRange: { minKeys: 100_000, maxKeys: 200_000 }, memtableBytes: bound });
    const huge = new Uint8Array(300_000);
    let most = 0;
    for (let i = 0; i < 200; i++) {
      state.set(key(i), i % 3 === 0 ? huge : new Uint8Array(i));
      most = Math.max(most, memtableBytes(state));
    }
    expect(most).toBeLessThan(bound + entryBytes(key(0), huge));
    expect(state.counters.byteFreezes).toBeGreaterThan(10);
    expect(state.size).toBe(200);
    expect(heldValue("", state.get(key(3))!).length).toBe(300_000);
    expect(heldValue("", state.get(key(199))!).length).toBe(199);
  });

  it("keeps one key rewritten forever in the memtable, counting its bytes again instead of freezing it", () => {
    const bound = 1 << 20;
    const state = new LayeredState({ memtableRange: RANGE, memtableBytes: bound });
    const value = new Uint8Array(10_000);
    for (let i = 0; i < 2_000; i++) state.set("only", i % 2 === 0 ? value : i);
    // 2,000 writes of up to 10 kB: about 10 MB written, one entry held all along.
    expect(state.counters.recounts).toBeGreaterThan(5);
    expect(state.counters.freezes).toBe(0);
    expect(state.runCount).toBe(0);
    expect(state.get("only")).toBe(1999);
  });

  it("keeps the bound when freezes hold what a checkpoint has still to page", () => {
    const bound = 1 << 20;
    const isHeld = (v: StoredValue) => v instanceof Uint8Array && v.length === 1000;
    const state = new LayeredState({ memtableRange: { minKeys: 100_000, maxKeys: 200_000 }, memtableBytes: bound, hold: (_k, v) => isHeld(v) });
    const held = new Uint8Array(1000);
    let most = 0;
    for (let i = 0; i < 3_000; i++) {
      state.set(key(i), i % 2 === 0 ? held : new Uint8Array(5_000));
      let moving = 0;
      for (const [k, v] of state.snapshot().memtableEntries()) if (!isHeld(v)) moving += entryBytes(k, v);
      most = Math.max(most, moving);
    }
    // The held half stays (a checkpoint pages it out); what can move freezes at the bound past it.
    expect(state.layout.memtableKeys).toBeGreaterThanOrEqual(1_500);
    expect(state.counters.byteFreezes).toBeGreaterThan(0);
    expect(most).toBeLessThan(bound + entryBytes(key(0), new Uint8Array(5_000)));
    expect(state.size).toBe(3_000);
  });

  it("reads what a plain map holds across grows and shrinks: sets, deletes, rewrites, scans", () => {
    const r = testRandom("memtable size model");
    const state = new LayeredState({ memtableRange: { minKeys: 16, maxKeys: 256 }, writeSlice: 1 + r.int(8), idleSlice: 0 });
    const model = new Map<string, number>();
    let fresh = 100_000;
    for (let phase = 0; phase < 12; phase++) {
      const rewriting = phase % 2 === 0;
      for (let step = 0; step < 3_000; step++) {
        const k = rewriting ? key(r.int(200)) : key(fresh++);
        const op = r.int(10);
        if (op < 7 || !rewriting) {
          const v = r.int(1_000_000);
          state.set(k, v);
          model.set(k, v);
        } else if (op < 9) {
          const [deleted, inModel] = [state.delete(k), model.delete(k)];
          if (deleted !== inModel) expect.fail(`phase ${phase} step ${step}, delete ${k}: ${deleted}, the model ${inModel}`);
        } else if (state.get(k) !== model.get(k)) expect.fail(`phase ${phase} step ${step}, get ${k}: ${state.get(k)}, the model ${model.get(k)}`);
      }
      const from = key(r.int(200));
      const expected = [...model.entries()].filter(([k]) => k >= from).sort(([a], [b]) => (a < b ? -1 : 1));
      expect(firstDifference(state.scan({ start: from }), expected)).toBeUndefined();
      expect(state.size).toBe(model.size);
    }
    expect(state.counters.grows).toBeGreaterThan(0);
    expect(state.counters.shrinks).toBeGreaterThan(0);
  });
});
