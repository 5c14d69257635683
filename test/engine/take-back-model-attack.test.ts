/**
 * @module Attacks on the take-back of young runs (run-take-back.ts) inside
 * the layered state, against a plain map, each while a take-back is half
 * done: deletes and rewrites of keys still in the runs being taken back
 * (and of keys it already moved), new keys, snapshots taken then and read
 * after many more writes, explicit freezes, `finishMerges` and `mergeStep`
 * between its slices, idle turns, a byte bound that a freeze reaches
 * meanwhile, and values the memtable holds for a checkpoint. After every
 * operation the state's size and the touched key's value match the map;
 * scans in both directions and with bounds match it often; every snapshot
 * yields exactly the map as it was when it was taken.
 */
import { setImmediate as turn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { LayeredState, type StateSnapshot } from "../../runtime/engine/layered-state.js";
import { compareKeys } from "../../runtime/store/keys.js";
import type { StoredValue } from "../../runtime/engine/paged-value.js";
import { scaledForLoad } from "../support/load.js";
import { testRandom, type TestRandom } from "../support/seed.js";

const RANGE = { minKeys: 64, maxKeys: 1024 };
/** Four of the smallest memtables: the first pass freezes four runs, which the second pass's grow takes back. */
const WIDTH = 4 * RANGE.minKeys;
const ROUNDS = 24;

/** The bytes of a held value in hex: an array's, or a string's one byte per character (values taken back without `hold`). */
const hex = (v: StoredValue | undefined) =>
  v === undefined ? undefined : (typeof v === "string" ? Buffer.from(v, "latin1") : Buffer.from(v as Uint8Array)).toString("hex");
const sortedModel = (model: Map<string, string>) => [...model].sort(([a], [b]) => compareKeys(a, b));
const listed = (entries: Iterable<[string, StoredValue]>) => [...entries].map(([k, v]) => [k, hex(v)]);
const key = (i: number) => `k/${String(i).padStart(5, "0")}`;

interface Shape {
  name: string;
  idleSlice: number;
  /** Values of about 1 kB against this bound: new keys reach it while the take-back goes on. */
  memtableBytes?: number;
  /** Hold the test's arrays whose first byte is 0xEE in the memtable (values a checkpoint still pages). */
  hold: boolean;
}

const SHAPES: Shape[] = [
  { name: "no idle turns", idleSlice: 0, hold: false },
  { name: "idle merges", idleSlice: 64, hold: false },
  { name: "a byte bound reached mid take-back", idleSlice: 32, memtableBytes: 1 << 20, hold: false },
  { name: "held values", idleSlice: 16, hold: true },
];

/** One round: a state whose second pass over `WIDTH` keys started a take-back, then hostile operations while it runs. */
async function round(shape: Shape, r: TestRandom, snapshots: { snapshot: StateSnapshot; expected: [string, string][] }[]): Promise<number> {
  const written = new WeakSet<Uint8Array>();
  const state = new LayeredState({
    memtableRange: RANGE,
    idleSlice: shape.idleSlice,
    ...(shape.memtableBytes === undefined ? {} : { memtableBytes: shape.memtableBytes }),
    ...(shape.hold ? { hold: (_k: string, v: StoredValue) => v instanceof Uint8Array && written.has(v) && v[0] === 0xee } : {}),
  });
  const model = new Map<string, string>();
  let step = 0;
  const value = (): Uint8Array => {
    const size = shape.memtableBytes !== undefined ? 1000 : [1, 8, 40, 300, 1100][r.int(5)]!;
    const v = new Uint8Array(size);
    for (let i = 0; i < size; i++) v[i] = (step * 31 + i + r.int(3)) & 0xff;
    v[0] = shape.hold && r.int(3) === 0 ? 0xee : 1;
    written.add(v);
    return v;
  };
  const setKey = (k: string) => {
    const v = value();
    state.set(k, v);
    model.set(k, hex(v)!);
    expect(hex(state.get(k)), k).toBe(model.get(k));
  };
  const deleteKey = (k: string) => {
    expect(state.delete(k), k).toBe(model.delete(k));
    expect(state.get(k), k).toBeUndefined();
  };
  for (let i = 0; i < WIDTH; i++) setKey(key(i));
  // The second pass, in key order, until the take-back starts.
  let pos = 0;
  while (state.counters.takeBacks === 0 && pos < WIDTH) setKey(key(pos++));
  expect(state.counters.takeBacks).toBe(1);
  let halfDone = 0;
  for (step = 0; step < 60; step++) {
    if (state.runCount > 0 && state.counters.byteFreezes === 0) halfDone++;
    const op = r.int(100);
    // Most operations hit keys still in the runs being taken back, ahead of the pass.
    const ahead = key(Math.min(WIDTH - 1, pos + r.int(WIDTH - pos)));
    if (op < 30) setKey(ahead);
    else if (op < 50) deleteKey(ahead);
    else if (op < 60) setKey(key(pos < WIDTH ? pos++ : r.int(WIDTH)));
    else if (op < 65) deleteKey(key(r.int(WIDTH)));
    else if (op < 72) setKey(key(WIDTH + r.int(4 * WIDTH)));
    else if (op < 78) snapshots.push({ snapshot: state.snapshot(), expected: sortedModel(model) });
    else if (op < 80) state.freeze();
    else if (op < 82) state.finishMerges();
    else if (op < 86) state.mergeStep(1 + r.int(40));
    else if (op < 90) await turn();
    else {
      const expected = sortedModel(model);
      expect(listed(state.scan()), `scan at ${step}`).toEqual(expected);
      expect(listed(state.scan({ reverse: true })), `reverse scan at ${step}`).toEqual([...expected].reverse());
      const lo = key(r.int(WIDTH));
      const hi = key(r.int(WIDTH));
      const within = expected.filter(([k]) => compareKeys(k, lo) >= 0 && compareKeys(k, hi) < 0);
      expect(listed(state.scan({ start: lo, end: hi })), `bounded scan at ${step}`).toEqual(within);
      expect(listed(state.scan({ start: lo, end: hi, reverse: true, limit: 5 })), `reverse bounded scan at ${step}`).toEqual(within.reverse().slice(0, 5));
    }
    expect(state.size, `size at ${step}`).toBe(model.size);
  }
  for (const [k, v] of model) expect(hex(state.get(k)), k).toBe(v);
  expect(listed(state.scan())).toEqual(sortedModel(model));
  state.stopIdleMerges();
  return halfDone;
}

describe("the take-back of young runs under hostile use of the state", () => {
  it.each(SHAPES)("$name: reads, scans and snapshots match a plain map while a take-back is half done", { timeout: scaledForLoad(60_000) }, async (shape) => {
    const r = testRandom(`take-back model attack: ${shape.name}`);
    const snapshots: { snapshot: StateSnapshot; expected: [string, string][] }[] = [];
    let halfDone = 0;
    for (let i = 0; i < ROUNDS; i++) halfDone += await round(shape, r, snapshots);
    // Read after every round's later writes: each yields the state as it was.
    for (const { snapshot, expected } of snapshots) expect(listed(snapshot.entries())).toEqual(expected);
    // Most operations ran with the take-back still under way.
    expect(halfDone).toBeGreaterThan(ROUNDS * 5);
  });
});
