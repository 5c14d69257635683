/**
 * @module A memtable that grows takes its young runs back: after the grow,
 * the rewrites of a working set find their keys in the memtable, no run is
 * merged or rewritten for entries about to die, reads and scans see every
 * key once while the take-back is half done, values a checkpoint would
 * page stay in their runs, and a freeze before it ends leaves the rest in
 * the runs; sparse rewrites of a large young state, which grow the memtable
 * too, take nothing back.
 */
import { describe, expect, it } from "vitest";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import { EARLY_SHARE, type MemtableRange } from "../../runtime/engine/memtable-size.js";
import { heldValue, isPaged, MAX_PACKED_BYTES, type StoredValue } from "../../runtime/engine/paged-value.js";
import { testRandom } from "../support/seed.js";

const RANGE: MemtableRange = { minKeys: 64, maxKeys: 1024 };
/** Four of the smallest memtables: the first pass freezes four runs, which a merge then takes. */
const WIDTH = 4 * RANGE.minKeys;

function key(i: number): string {
  return `k/${String(i).padStart(7, "0")}`;
}

/** A state after the first pass over `WIDTH` keys and the writes of the second that grew it. */
function grownState(
  opts: { hold?: (key: string, value: StoredValue) => boolean; memtableBytes?: number; value?: (i: number, round: number) => StoredValue } = {},
): {
  state: LayeredState;
  writes: number;
} {
  const value = opts.value ?? ((_i: number, round: number) => round);
  const state = new LayeredState({ memtableRange: RANGE, idleSlice: 0, ...opts });
  for (let i = 0; i < WIDTH; i++) state.set(key(i), value(i, 0));
  let writes = 0;
  while (state.counters.grows === 0 && writes < WIDTH) {
    state.set(key(writes), value(writes, 1));
    writes++;
  }
  return { state, writes };
}

/** The bytes of the value the state holds for `k`, as the engine reads them (the state holds small ones taken back as strings). */
function bytesOf(state: LayeredState, k: string): Uint8Array {
  const v = state.get(k);
  if (v === undefined || isPaged(v)) throw new Error(`no held value for ${k}`);
  return heldValue(k, v);
}

/** The state's entries in order, as a scan yields them. */
function scanned(state: LayeredState): [string, StoredValue][] {
  return [...state.scan()];
}

describe("LayeredState's take-back of young runs after a grow", () => {
  it("takes the working set's runs back within a few writes of the grow, so no run is merged or rewritten and the pass ends with none", () => {
    const { state, writes } = grownState();
    expect(writes).toBe(RANGE.minKeys * EARLY_SHARE);
    const merged = state.counters.mergedEntries;
    // The last freeze's run is made within 16 writes of it, then the take-back starts: about 240 live
    // entries, 30 a write.
    for (let i = writes; i < writes + 32; i++) state.set(key(i), 1);
    expect(state.counters.takeBacks).toBe(1);
    expect(state.runCount).toBe(0);
    expect(state.counters.takenBack).toBeGreaterThan(WIDTH - writes - 32);
    expect(state.layout.memtableKeys).toBe(WIDTH);
    for (let round = 1; round < 4; round++) for (let i = 0; i < WIDTH; i++) state.set(key(i), round);
    // The merge of the four runs, under way at the grow, was dropped once the take-back emptied them.
    expect(state.counters.droppedMerges).toBe(1);
    expect(state.counters.rewrites).toBe(0);
    expect(state.counters.mergedEntries).toBe(merged);
    expect(state.counters.freezes).toBe(4);
    expect(state.runCount).toBe(0);
    for (let i = 0; i < WIDTH; i++) expect(state.get(key(i))).toBe(3);
  });

  it("reads, scans and counts what a plain map holds while the take-back is half done: sets, deletes and new keys between its slices", () => {
    const random = testRandom("take-back model");
    const { state, writes } = grownState();
    // The pass goes on in order until the take-back starts (random writes alone kill no run fast).
    let rewritten = writes;
    while (state.counters.takeBacks === 0 && rewritten < WIDTH) state.set(key(rewritten++), 1);
    expect(state.counters.takeBacks).toBe(1);
    const model = new Map<string, StoredValue>();
    for (let i = 0; i < WIDTH; i++) model.set(key(i), i < rewritten ? 1 : 0);
    let checked = 0;
    for (let step = 0; step < 40; step++) {
      const r = random.int(10);
      const k = key(random.int(WIDTH + 40));
      if (r < 2) {
        expect(state.delete(k)).toBe(model.delete(k));
      } else {
        state.set(k, step + 10);
        model.set(k, step + 10);
      }
      const expected = [...model].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      expect(scanned(state)).toEqual(expected);
      expect(state.size).toBe(model.size);
      for (const [mk, mv] of model) expect(state.get(mk)).toBe(mv);
      if (state.runCount > 0) checked++;
    }
    // Some of the checks ran with entries still in the runs, mid take-back.
    expect(checked).toBeGreaterThan(3);
    expect(state.runCount).toBe(0);
    expect(state.counters.takeBacks).toBe(1);
  });

  it("leaves in its run an entry the memtable would hold for a checkpoint to page (a value read from a run is a fresh array, which no checkpoint pages out)", () => {
    // Arrays this test wrote move freely; any other array of 8 bytes is one the state made from a run's bytes.
    const written = new WeakSet<Uint8Array>();
    const array = (i: number, round: number) => {
      const a = new Uint8Array(8).fill(round);
      if (i % 2 === 0) a[1] = 2;
      written.add(a);
      return a;
    };
    const hold = (_k: string, v: StoredValue) => v instanceof Uint8Array && !written.has(v) && v[1] === 2;
    const { state, writes } = grownState({ hold, value: array });
    const rewritten = writes + 40;
    for (let i = writes; i < rewritten; i++) state.set(key(i), array(i, 1));
    expect(state.counters.takeBacks).toBe(1);
    // Even keys not yet rewritten stay in the runs; odd ones moved.
    for (const [k, v] of state.snapshot().memtableEntries()) expect(hold(k, v)).toBe(false);
    const stayed = state.layout.runs.reduce((n, r) => n + r.live, 0);
    expect(stayed).toBe((WIDTH - rewritten) / 2);
    expect(state.size).toBe(WIDTH);
    for (let i = 0; i < WIDTH; i++) {
      const v = state.get(key(i)) as Uint8Array;
      const round = i < rewritten ? 1 : 0;
      expect([v[0], v[1]]).toEqual([round, i % 2 === 0 ? 2 : round]);
    }
  });

  it("holds the byte values it takes back as strings of their bytes when nothing is held for paging, larger ones as arrays, and reads give the bytes written", () => {
    // Each key's value tells it apart (and spans every byte value); keys past 200 hold more than a string takes.
    const bytes = (i: number, round: number) => {
      const a = new Uint8Array(i >= 200 ? MAX_PACKED_BYTES + 1 : 1 + (i % 40));
      for (let j = 0; j < a.length; j++) a[j] = (i * 7 + j * 31 + round) & 255;
      return a;
    };
    const { state, writes } = grownState({ value: bytes });
    let rewritten = writes;
    while (state.counters.takeBacks === 0 && rewritten < WIDTH) state.set(key(rewritten), bytes(rewritten++, 1));
    for (let i = 0; i < 64; i++) state.set(key(rewritten), bytes(rewritten++, 1));
    expect(state.counters.takeBacks).toBe(1);
    expect(state.runCount).toBe(0);
    expect(state.counters.takenBack).toBeGreaterThan(100);
    for (let i = rewritten; i < WIDTH; i++) {
      const v = state.get(key(i));
      expect(typeof v === "string" ? "string" : v instanceof Uint8Array ? "array" : typeof v).toBe(i >= 200 ? "array" : "string");
      expect(bytesOf(state, key(i))).toEqual(bytes(i, 0));
    }
    for (let i = 0; i < rewritten; i++) expect(bytesOf(state, key(i))).toEqual(bytes(i, 1));
    expect([...state.scan()].map(([k, v]) => [k, heldValue(k, v as Uint8Array | string)])).toEqual(
      Array.from({ length: WIDTH }, (_, i) => [key(i), bytes(i, i < rewritten ? 1 : 0)]),
    );
  });

  it("stops at a freeze by bytes before it ends: what it moved freezes, the rest stays in the runs, and reads stay right", () => {
    // Values of 1,000 bytes: the working set's 256 entries take about 290 kB in the memtable, its bound 64 kB.
    const big = (_i: number, round: number) => new Uint8Array(1000).fill(round);
    const { state } = grownState({ value: big, memtableBytes: 1 << 20 });
    let rewritten = RANGE.minKeys * EARLY_SHARE;
    while (state.counters.takeBacks === 0 && rewritten < WIDTH) state.set(key(rewritten), big(rewritten++, 1));
    expect(state.counters.takeBacks).toBe(1);
    expect(state.runCount).toBeGreaterThan(0);
    // Writes of large new keys reach the bytes bound while the take-back goes on.
    for (let i = 0; i < 4; i++) state.set(key(WIDTH + i), new Uint8Array(400_000));
    expect(state.counters.byteFreezes).toBe(1);
    // The take-back ended at the freeze: what it had not moved stays in the runs.
    const taken = state.counters.takenBack;
    expect(taken).toBeLessThan(WIDTH - rewritten);
    for (let i = 0; i < 8; i++) state.set(key(i), big(i, 2));
    expect(state.counters.takenBack).toBe(taken);
    expect(state.runCount).toBeGreaterThan(0);
    expect(state.counters.takeBacks).toBe(1);
    expect(state.size).toBe(WIDTH + 4);
    for (let i = 0; i < WIDTH; i++) {
      const bytes = bytesOf(state, key(i));
      expect([bytes.length, bytes[0], bytes[999]]).toEqual([1000, ...Array(2).fill(i < 8 ? 2 : i < rewritten ? 1 : 0)]);
    }
    for (let i = 0; i < 4; i++) expect(bytesOf(state, key(WIDTH + i)).length).toBe(400_000);
  });

  it("merges none of a first pass's runs before the next pass's writes are weighed, idle turns between, so the grow takes them back with no merge copied", async () => {
    // Large enough that the first look of the second pass (an eighth of the memtable) sees a run dying.
    const range: MemtableRange = { minKeys: 256, maxKeys: 2048 };
    const width = 4 * range.minKeys;
    const state = new LayeredState({ memtableRange: range });
    const turns = async (n: number) => {
      for (let t = 0; t < n; t++) await new Promise((resolve) => setImmediate(resolve));
    };
    for (let i = 0; i < width; i++) state.set(key(i), 0);
    // Idle turns copy the last frozen memtable into its run: four runs of one tier, a merge due.
    await turns(20);
    expect(state.runCount).toBe(4);
    expect(state.layout.frozen).toBe(0);
    expect(state.counters.merges).toBe(0);
    let writes = 0;
    while (state.counters.takeBacks === 0 && writes < width) {
      state.set(key(writes++), 1);
      await turns(1);
    }
    expect(writes).toBe(range.minKeys * EARLY_SHARE);
    for (let i = writes; i < width; i++) state.set(key(i), 1);
    await turns(20);
    expect(state.counters.merges).toBe(0);
    expect(state.counters.droppedMerges).toBe(0);
    expect(state.counters.mergedEntries).toBe(0);
    expect(state.runCount).toBe(0);
    expect(state.counters.takenBack).toBeGreaterThan(width - 2 * writes);
    for (let i = 0; i < width; i++) expect(state.get(key(i))).toBe(1);
  });

  it("merges keys written once as before, once an eighth of the memtable's writes after the last freeze showed no rewrites", async () => {
    const range: MemtableRange = { minKeys: 256, maxKeys: 2048 };
    const state = new LayeredState({ memtableRange: range });
    let next = 0;
    for (; next < 4 * range.minKeys; next++) state.set(key(next), 0);
    for (let t = 0; t < 20; t++) await new Promise((resolve) => setImmediate(resolve));
    expect(state.runCount).toBe(4);
    expect(state.counters.merges).toBe(0);
    // The write that froze counted one: the look, and the merge, come with the eighth's last write.
    for (let i = 1; i < range.minKeys * EARLY_SHARE; i++) state.set(key(next++), 0);
    expect(state.counters.merges).toBe(0);
    state.set(key(next++), 0);
    expect(state.counters.merges).toBe(1);
    expect(state.counters.grows).toBe(0);
    for (let t = 0; t < 20; t++) await new Promise((resolve) => setImmediate(resolve));
    expect(state.counters.mergedEntries).toBe(4 * range.minKeys);
    expect(state.runCount).toBe(1);
    expect(state.size).toBe(next);
    for (let i = 0; i < next; i++) expect(state.get(key(i))).toBe(0);
  });

  it("takes nothing back when random rewrites of a larger young state grow the memtable, and takes back once a pass over the keys starts killing a run fast", () => {
    const random = testRandom("take-back sparse");
    // Eight of the smallest memtables, all young: random rewrites kill a young entry nearly every write,
    // which grows the memtable early, but they kill each run at its share of the state's keys, so none
    // would die within a quarter of the grown memtable's writes.
    const size = 8 * RANGE.minKeys;
    const state = new LayeredState({ memtableRange: RANGE, idleSlice: 0 });
    const model = new Map<string, StoredValue>();
    for (let i = 0; i < size; i++) {
      state.set(key(i), 0);
      model.set(key(i), 0);
    }
    for (let w = 1; w <= size / 2; w++) {
      const k = key(random.int(size));
      state.set(k, w);
      model.set(k, w);
    }
    expect(state.counters.grows).toBeGreaterThan(0);
    expect(state.counters.takeBacks).toBe(0);
    expect(state.counters.takenBack).toBe(0);
    expect(state.runCount).toBeGreaterThan(0);
    // A pass in key order kills the run holding the lowest keys one entry a write: the next look takes the young runs back.
    for (let i = 0; i < size; i++) {
      state.set(key(i), -1);
      model.set(key(i), -1);
    }
    expect(state.counters.takeBacks).toBe(1);
    expect(state.counters.takenBack).toBeGreaterThan(0);
    expect(state.size).toBe(model.size);
    for (const [k, v] of model) expect(state.get(k)).toBe(v);
  });
});
