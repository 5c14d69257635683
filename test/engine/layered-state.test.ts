import { describe, expect, it } from "vitest";
import { cursorStats, KeyBytes, KeyRunBuilder, RunCursor } from "../../runtime/engine/key-run.js";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import { heldValue, type StoredValue } from "../../runtime/engine/paged-value.js";
import { RunLiveness } from "../../runtime/engine/run-liveness.js";
import { RunMerge } from "../../runtime/engine/run-merge.js";
import type { ScanOptions } from "../../runtime/engine/scan.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { testRandom, type TestRandom } from "../support/seed.js";
import { HEAVY_TEST_MS } from "../support/load.js";

/** What a stored value reads as: runs hand held values back as bytes, whatever form they were set in. */
function norm(v: StoredValue | undefined): number | string | undefined {
  if (v === undefined || typeof v === "number") return v;
  if (typeof v === "string") return Array.from(v, (c) => c.charCodeAt(0)).join(",");
  return heldValue("", v).join(",");
}

/** Expects the same entries, reporting the first difference (whole lists are slow to diff). */
function expectSameEntries(actual: Iterable<[string, StoredValue]>, expected: Iterable<[string, StoredValue]>): void {
  const a = [...actual].map(([k, v]) => `${JSON.stringify(k)}=${norm(v)}`);
  const e = [...expected].map(([k, v]) => `${JSON.stringify(k)}=${norm(v)}`);
  const i = a.findIndex((x, j) => x !== e[j]);
  expect({ at: i < 0 ? Math.min(a.length, e.length) : i, entry: i < 0 ? undefined : a[i], length: a.length }).toEqual({
    at: i < 0 ? Math.min(a.length, e.length) : i,
    entry: i < 0 ? undefined : e[i],
    length: e.length,
  });
}

/** The reference semantics of a scan, over a plain map. */
function modelScan(model: Map<string, StoredValue>, opts: ScanOptions): [string, StoredValue][] {
  const prefix = opts.prefix ?? "";
  let keys = [...model.keys()].filter(
    (k) =>
      k.startsWith(prefix) &&
      (opts.end === undefined || compareKeys(k, opts.end) < 0) &&
      (opts.start === undefined || (opts.startExclusive ? compareKeys(k, opts.start) > 0 : compareKeys(k, opts.start) >= 0)),
  );
  keys.sort(compareKeys);
  if (opts.reverse) keys.reverse();
  if (opts.limit !== undefined) keys = keys.slice(0, Math.max(0, opts.limit));
  return keys.map((k) => [k, model.get(k)!]);
}

const PARTS = ["a", "b", "p/q", "p/q/1", "p/r", "j/", "é", "😀", "\uffff", "zz", "0", "00", "01"];

function randomKey(r: TestRandom): string {
  let k = PARTS[r.int(PARTS.length)]!;
  const n = r.int(4);
  for (let i = 0; i < n; i++) k += PARTS[r.int(PARTS.length)]! + (r.int(3) === 0 ? String(r.int(1000)).padStart(4, "0") : "");
  return k;
}

function randomValue(r: TestRandom, key: string): StoredValue {
  switch (r.int(6)) {
    case 0:
      return r.int(50); // paged run id
    case 1:
      return -(1 + r.int(Math.max(1, key.length))); // key tail
    case 2:
      return String.fromCharCode(...Array.from({ length: r.int(40) }, () => r.int(256))); // packed
    case 3:
      return new Uint8Array(1025 + r.int(3000)).fill(r.int(256)); // large, kept by reference
    default:
      return Uint8Array.from({ length: r.int(100) }, () => r.int(256));
  }
}

function randomScan(r: TestRandom): ScanOptions {
  const opts: ScanOptions = {};
  if (r.int(2) === 0) opts.prefix = randomKey(r).slice(0, 1 + r.int(3));
  if (r.int(3) === 0) opts.start = randomKey(r);
  if (r.int(4) === 0) opts.startExclusive = true;
  if (r.int(3) === 0) opts.end = randomKey(r);
  if (r.int(2) === 0) opts.limit = r.int(20);
  if (r.int(3) === 0) opts.reverse = true;
  return opts;
}

describe("key runs", () => {
  it("find the keys they hold, front-coded, including non-ASCII ones, and nothing else", () => {
    const keys = ["a", "ab", "abc", "abd", "b", "é", "éa", "😀", "😀😀"].sort(compareKeys);
    const b = new KeyRunBuilder(16);
    for (const [i, k] of keys.entries()) b.add(k, i % 2 === 0 ? i : new Uint8Array([i, i]));
    const run = b.finish();
    const kb = new KeyBytes();
    const found = { valueAt: 0 };
    keys.forEach((k, i) => {
      expect(run.find(k, kb.set(k), found)).toBe(i);
      expect(norm(run.value(found.valueAt))).toEqual(norm(i % 2 === 0 ? i : new Uint8Array([i, i])));
    });
    for (const k of ["", "aa", "abcd", "ac", "c", "\uffff", "😀a", "😀😀😀"]) expect(run.find(k, kb.set(k), found)).toBe(-1);
    const state = new LayeredState();
    state.set("\ufffd", 1);
    state.freeze();
    expect(state.get("\ufffd")).toBe(1);
    expect(state.get("\ud83d")).toBeUndefined();
    expect([...state.scan({ prefix: "\ud83d" })]).toEqual([]);
    expect(run.lastKey).toBe(keys[keys.length - 1]);
  });

  it("hold long keys (past every scratch buffer's first size) and find, scan and merge them", () => {
    const state = new LayeredState({ memtableKeys: 3 });
    const keys = Array.from({ length: 40 }, (_, i) => `${"x".repeat(200 + ((i * 97) % 3000))}/${"é".repeat(i % 5)}${String(i).padStart(3, "0")}`);
    for (const k of keys) state.set(k, new Uint8Array([k.length % 256]));
    const sorted = [...keys].sort(compareKeys);
    expect([...state.scan()].map(([k]) => k)).toEqual(sorted);
    expect([...state.scan({ reverse: true })].map(([k]) => k)).toEqual([...sorted].reverse());
    for (const k of keys) expect(Array.from(state.get(k) as Uint8Array)).toEqual([k.length % 256]);
    expect(state.get(`${keys[0]}!`)).toBeUndefined();
    expect(state.layout.runs.length).toBeGreaterThan(0);
  });

  it("refuse keys that are not strictly ascending", () => {
    const b = new KeyRunBuilder();
    b.add("b", 1);
    expect(() => b.add("a", 1)).toThrow(/not strictly ascending/);
    expect(() => b.add("b", 1)).toThrow(/not strictly ascending/);
    const c = new KeyRunBuilder();
    c.add("ab", 1);
    expect(() => c.add("a", 1)).toThrow(/not strictly ascending/);
  });

  it("hold paged run ids as varints of every width: read back by find, cursors and merges, 2 B each when small", () => {
    const ids = [0, 1, 127, 128, 16_383, 16_384, 2 ** 21, 2 ** 28, 2 ** 32 - 1];
    const b = new KeyRunBuilder();
    const expected: [string, StoredValue][] = [];
    for (let i = 0; i < 200; i++) {
      const k = `j/${String(i).padStart(4, "0")}`;
      // Paged values between the other kinds, so a wrong width would misplace what follows.
      const v: StoredValue = i % 3 === 0 ? ids[i % ids.length]! : i % 3 === 1 ? "xy" : -2;
      b.add(k, v);
      expected.push([k, v]);
    }
    const run = b.finish();
    const found = { valueAt: 0 };
    for (const [k, v] of expected) {
      expect(run.find(k, new KeyBytes().set(k), found)).toBeGreaterThanOrEqual(0);
      expect(norm(run.value(found.valueAt))).toEqual(norm(v));
    }
    const state = new LayeredState({ memtableKeys: 1_000_000, mergeRatio: 2, writeSlice: Infinity });
    state.addRun(run);
    const other = new KeyRunBuilder();
    other.add("j/9999", 300);
    state.addRun(other.finish());
    expect(state.layout.runs.length).toBe(1);
    expectSameEntries(state.scan(), [...expected, ["j/9999", 300]]);
    // A small paged id costs what a one-byte key tail does (tag and one varint byte).
    const paged = new KeyRunBuilder();
    const tail = new KeyRunBuilder();
    for (let i = 0; i < 100; i++) {
      paged.add(`j/${String(i).padStart(3, "0")}`, 5);
      tail.add(`j/${String(i).padStart(3, "0")}`, -1);
    }
    expect(paged.finish().bytes.length).toBe(tail.finish().bytes.length);
    expect(() => new KeyRunBuilder().add("k", 2 ** 32)).toThrow(/32 bits/);
  });

  it("build runs past the in-place growth size through write chunks, with an entry larger than a chunk, and read every entry back", {
    timeout: HEAVY_TEST_MS,
  }, () => {
    const r = testRandom("key run large build");
    const keys: string[] = [];
    for (let i = 0; i < 40_000; i++) keys.push(`p/q/${String(i).padStart(6, "0")}`);
    // One key far longer than a write chunk (64 KiB), in key order after the others.
    keys.push(`p/r/${"z".repeat(100_000)}`);
    const values = keys.map((_, i) => Uint8Array.from({ length: 1 + r.int(60) }, (_v, j) => (i + j) & 255));
    // Sized small, so the builder grows past 1 MiB; and sized large from the start.
    for (const capacity of [64, 4 << 20]) {
      const b = new KeyRunBuilder(capacity, keys.length);
      for (const [i, k] of keys.entries()) b.add(k, values[i]!);
      const run = b.finish();
      expect(run.bytes.length).toBeGreaterThan(1 << 20);
      const found = { valueAt: 0 };
      for (const [i, k] of keys.entries()) {
        expect(run.find(k, new KeyBytes().set(k), found), k.slice(0, 12)).toBe(i);
        expect(norm(run.value(found.valueAt))).toBe(norm(values[i]));
      }
      const c = new RunCursor(run, new RunLiveness(run.count, 32));
      let n = 0;
      while (c.advance()) expect(c.keyString()).toBe(keys[n++]);
      expect(n).toBe(keys.length);
    }
  });

  it("filter out about 99% of absent keys, and never a present one", () => {
    const b = new KeyRunBuilder(4096, 50_000);
    for (let i = 0; i < 50_000; i++) b.add(`j/${String(i * 2).padStart(7, "0")}`, 1);
    const run = b.finish();
    const kb = new KeyBytes();
    for (let i = 0; i < 50_000; i += 7) expect(run.mayHold(kb.set(`j/${String(i * 2).padStart(7, "0")}`))).toBe(true);
    let maybe = 0;
    for (let i = 0; i < 50_000; i++) if (run.mayHold(kb.set(`j/${String(i * 2 + 1).padStart(7, "0")}`))) maybe++;
    expect(maybe / 50_000).toBeLessThan(0.02);
  });

  it("skip dead blocks in both directions, and a cursor never stops on a dead entry", () => {
    const live = new RunLiveness(32 * 5, 32);
    for (let i = 0; i < 64; i++) live.kill(i, Math.floor(i / 32));
    expect(live.nextLive(0)).toBe(2);
    expect(live.prevLive(1)).toBe(-1);
    for (let i = 96; i < 128; i++) live.kill(i, 3);
    expect(live.nextLive(3)).toBe(4);
    expect(live.prevLive(3)).toBe(2);
    expect(live.kill(0, 0)).toBe(false);
    expect(live.live).toBe(160 - 96);
    const b = new KeyRunBuilder();
    for (let i = 0; i < 100; i++) b.add(`k${String(i).padStart(3, "0")}`, i);
    const run = b.finish();
    const rl = new RunLiveness(run.count, 32);
    for (let i = 0; i < 100; i++) if (i % 7 !== 3) rl.kill(i, Math.floor(i / 32));
    const c = new RunCursor(run, rl);
    const seen: string[] = [];
    while (c.advance()) seen.push(c.keyString());
    expect(seen).toEqual(
      Array.from({ length: 100 }, (_, i) => i)
        .filter((i) => i % 7 === 3)
        .map((i) => `k${String(i).padStart(3, "0")}`),
    );
  });
});

describe("layered state", () => {
  it("matches a plain map under random sets, deletes, reads, scans, snapshots, freezes and merges", () => {
    const r = testRandom("layered state model");
    for (let round = 0; round < 3; round++) {
      const state = new LayeredState({ memtableKeys: 1 + r.int(64), hold: (_k, v) => v === 13 });
      const model = new Map<string, StoredValue>();
      let snap: { view: ReturnType<LayeredState["snapshot"]>; model: [string, StoredValue][] } | undefined;
      for (let step = 0; step < 2500; step++) {
        const op = r.int(100);
        const key = r.int(4) === 0 ? randomKey(r) : `p/q/${String(r.int(3000)).padStart(5, "0")}`;
        if (op < 45) {
          const v = randomValue(r, key);
          state.set(key, v);
          model.set(key, v);
        } else if (op < 70) {
          expect(state.delete(key)).toBe(model.delete(key));
        } else if (op < 80) {
          expect(norm(state.get(key))).toEqual(norm(model.get(key)));
          expect(state.has(key)).toBe(model.has(key));
        } else if (op < 90) {
          const opts = randomScan(r);
          if (r.int(4) !== 0) opts.limit ??= r.int(30);
          expectSameEntries(state.scan(opts), modelScan(model, opts));
        } else if (op < 93) {
          // Only a value the memtable holds is replaced; one in a run is never changed in place.
          const current = model.get(key);
          const from = typeof current === "number" && r.int(2) === 0 ? current : r.int(50);
          const held = state.holds(key, from);
          const ok = state.replaceIf(key, from, 99);
          expect(ok).toBe(held);
          if (ok) {
            expect(current).toBe(from);
            model.set(key, 99);
          }
        } else if (op < 95) {
          state.freeze();
        } else if (op < 97) {
          snap = { view: state.snapshot(), model: modelScan(model, {}) };
        } else if (snap !== undefined) {
          expectSameEntries(snap.view.entries(), snap.model);
        }
        expect(state.size).toBe(model.size);
      }
      expectSameEntries(state.scan(), modelScan(model, {}));
      // Held values stay in the memtable across freezes.
      for (const [k, v] of state.scan()) if (v === 13) expect(state.replaceIf(k, 13, 14)).toBe(true);
    }
  }, 120_000);

  it("lists the held entries at a freeze only when it rebuilds the memtable from them (fewer held than moved)", () => {
    const state = new LayeredState({ memtableKeys: Infinity, hold: (_k, v) => v === 13 });
    const key = (i: number) => `k/${String(i).padStart(4, "0")}`;
    const model = new Map<string, StoredValue>();
    const memtable = () => [...state.snapshot().memtableEntries()];
    for (let i = 0; i < 300; i++) {
      const v = i % 10 === 0 ? 1 : 13;
      state.set(key(i), v);
      model.set(key(i), v);
    }
    // More held than moved: what moved is deleted from the table, and no held entry is listed.
    state.freeze();
    expect(state.counters.heldListed).toBe(0);
    expect(memtable()).toEqual([...model].filter(([, v]) => v === 13));
    // Fewer held than moved: the table is rebuilt from exactly the held entries, listed once.
    for (let i = 0; i < 300; i++) {
      if (i % 10 === 0 || i % 29 === 0) continue;
      expect(state.replaceIf(key(i), 13, 2)).toBe(true);
      model.set(key(i), 2);
    }
    const held = [...model].filter(([, v]) => v === 13);
    expect(held.length).toBe(9);
    state.freeze();
    expect(state.counters.heldListed).toBe(9);
    expect(memtable()).toEqual(held);
    expectSameEntries(state.scan(), modelScan(model, {}));
    for (const [k, v] of model) expect(state.get(k)).toBe(v);
  });

  it("matches a plain map while merges run a slice at a time: kills, replaced memtable values, reads, scans and snapshots between slices", () => {
    const r = testRandom("layered state partial merges");
    let killsWhileMerging = 0;
    let catchUps = 0;
    // Six rounds: with three, a seed (4165983950) drew settings under which few kills met a merge.
    for (let round = 0; round < 6; round++) {
      const mergeRatio = 2 + r.int(4);
      const maxRuns = round === 0 ? 2 : 3 + r.int(8);
      const state = new LayeredState({
        // A large memtable freezes only when the test says: writes then copy one entry each, so merges last long.
        memtableKeys: round % 2 === 0 ? 4096 : 8 + r.int(120),
        mergeRatio,
        writeSlice: 1,
        idleSlice: 0,
        maxRuns,
        hold: (_k, v) => v === 13,
      });
      const model = new Map<string, StoredValue>();
      let snap: { view: ReturnType<LayeredState["snapshot"]>; model: [string, StoredValue][] } | undefined;
      for (let step = 0; step < 3000; step++) {
        const op = r.int(100);
        const key = r.int(5) === 0 ? randomKey(r) : `p/q/${String(r.int(1500)).padStart(5, "0")}`;
        const merging = state.layout.merging > 0;
        if (op < 36) {
          const v = r.int(2) === 0 ? r.int(50) : randomValue(r, key);
          state.set(key, v);
          model.set(key, v);
        } else if (op < 56) {
          const had = model.delete(key);
          expect(state.delete(key)).toBe(had);
          if (had && merging) killsWhileMerging++;
        } else if (op < 64) {
          expect(norm(state.get(key))).toEqual(norm(model.get(key)));
          expect(state.has(key)).toBe(model.has(key));
        } else if (op < 72) {
          const opts = randomScan(r);
          if (r.int(4) !== 0) opts.limit ??= r.int(30);
          expectSameEntries(state.scan(opts), modelScan(model, opts));
        } else if (op < 88) {
          // Mostly the value the key holds: replaced when the memtable holds it, never in a run (merging or not).
          const current = model.get(key);
          const from = typeof current === "number" && current >= 0 && r.int(4) !== 0 ? current : r.int(50);
          const to = 50 + r.int(50);
          const held = state.holds(key, from);
          const ok = state.replaceIf(key, from, to);
          expect(ok).toBe(held);
          if (ok) {
            expect(current).toBe(from);
            model.set(key, to);
          }
        } else if (op < 89) {
          state.freeze();
        } else if (op < 96) {
          state.mergeStep(1 + r.int(40));
        } else if (op < 97) {
          snap = { view: state.snapshot(), model: modelScan(model, {}) };
        } else if (op < 98) {
          if (snap !== undefined) expectSameEntries(snap.view.entries(), snap.model);
        } else if (op < 99) {
          state.finishMerges();
          expect(state.layout.merging).toBe(0);
        }
        expect(state.size).toBe(model.size);
      }
      // Runs frozen faster than writes copy their merges (one key each, no merge step between), past
      // maxRuns + mergeRatio: the synchronous catch-up must take them, whatever the seed drew above.
      for (let i = 0; i < 16; i++) {
        const key = `p/z/${round}/${String(i).padStart(3, "0")}`;
        state.set(key, i);
        model.set(key, i);
        state.freeze();
        expect(state.layout.runs.length).toBeLessThanOrEqual(maxRuns + mergeRatio);
      }
      expectSameEntries(state.scan(), modelScan(model, {}));
      expectSameEntries(state.scan({ reverse: true }), modelScan(model, { reverse: true }));
      state.finishMerges();
      expectSameEntries(state.scan(), modelScan(model, {}));
      for (const [k, v] of model) expect(norm(state.get(k))).toEqual(norm(v));
      catchUps += state.counters.catchUps;
    }
    // The run above must have exercised what it checks.
    expect(killsWhileMerging).toBeGreaterThan(20);
    expect(catchUps).toBeGreaterThan(0);
  }, 120_000);

  it("merges no run past maxMergeEntries / ratio live entries by tier, still rewrites them alone when mostly dead, and stays a plain map", () => {
    const r = testRandom("layered state merge bound");
    const key = (i: number) => `p/q/${String(i).padStart(6, "0")}`;
    const capped = new LayeredState({ memtableKeys: 500, mergeRatio: 2, maxMergeEntries: 2000, writeSlice: Infinity });
    const unbounded = new LayeredState({ memtableKeys: 500, mergeRatio: 2, writeSlice: Infinity });
    const model = new Map<string, StoredValue>();
    for (let i = 0; i < 20_000; i++) {
      const v = -(1 + r.int(6));
      capped.set(key(i), v);
      unbounded.set(key(i), v);
      model.set(key(i), v);
    }
    capped.finishMerges();
    // Without the bound the runs merge into a few large ones; with it, no run outgrows two runs of 1000 (the cap over the ratio).
    expect(Math.max(...unbounded.layout.runs.map((l) => l.entries))).toBeGreaterThan(8000);
    const sizes = capped.layout.runs.map((l) => l.entries);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(2000);
    expect(sizes.length).toBeGreaterThanOrEqual(9);
    expectSameEntries(capped.scan(), modelScan(model, {}));
    // A run more than half dead is rewritten alone, bound or not.
    const rewrites = capped.counters.rewrites;
    const victims = [...capped.scan()].map(([k]) => k).filter((_, i) => i % 4 !== 0);
    for (const k of victims) {
      capped.delete(k);
      model.delete(k);
    }
    capped.finishMerges();
    expect(capped.counters.rewrites).toBeGreaterThan(rewrites);
    expect(capped.layout.runs.every((l) => l.live * 2 >= l.entries)).toBe(true);
    expectSameEntries(capped.scan(), modelScan(model, {}));
    expectSameEntries(capped.scan({ reverse: true, limit: 50 }), modelScan(model, { reverse: true, limit: 50 }));
    for (let i = 0; i < 20_000; i += 97) expect(norm(capped.get(key(i)))).toEqual(norm(model.get(key(i))));
  });

  it("matches a plain map under random writes with a small merge bound", () => {
    const r = testRandom("layered state merge bound model");
    const ratio = 2 + r.int(3);
    const maxMergeEntries = 100 + r.int(400);
    const state = new LayeredState({ memtableKeys: 16 + r.int(64), mergeRatio: ratio, maxMergeEntries, writeSlice: 1 + r.int(8), idleSlice: 0 });
    const model = new Map<string, StoredValue>();
    let bounded = 0;
    for (let step = 0; step < 8000; step++) {
      const op = r.int(40);
      const k = `p/q/${String(r.int(1500)).padStart(5, "0")}`;
      if (op < 20) {
        const v = r.int(2) === 0 ? r.int(50) : randomValue(r, k);
        state.set(k, v);
        model.set(k, v);
      } else if (op < 32) expect(state.delete(k)).toBe(model.delete(k));
      else if (op < 39) expect(norm(state.get(k))).toEqual(norm(model.get(k)));
      else {
        const opts = randomScan(r);
        opts.prefix = "p/q/";
        opts.limit ??= 1 + r.int(40);
        expectSameEntries(state.scan(opts), modelScan(model, opts));
      }
      if (step % 100 === 0 && state.layout.runs.some((l) => l.live * ratio > maxMergeEntries)) bounded++;
    }
    state.finishMerges();
    expectSameEntries(state.scan(), modelScan(model, {}));
    expect(state.size).toBe(model.size);
    // The bound was in play: some run grew past it over the ratio and so stopped taking part in tier merges.
    expect(bounded).toBeGreaterThan(0);
  }, 60_000);

  it("past maxRuns merges the smallest runs a slice per write, never finishing one inside a write, and holds maxRuns + mergeRatio runs at most", () => {
    const r = testRandom("layered state paced catch-up");
    // Entries each merge step passed, summed per write (a step is where a merge's time goes).
    let passed = 0;
    const step = RunMerge.prototype.step;
    RunMerge.prototype.step = function (this: RunMerge, budget: number): boolean {
      const before = this.remaining;
      try {
        return step.call(this, budget);
      } finally {
        passed += before - this.remaining;
      }
    };
    try {
      const memtableKeys = 32 + r.int(64);
      const ratio = 2 + r.int(3);
      const maxRuns = 4 + r.int(6);
      // Runs of more than 256 / ratio live entries join no tier merge: only the forced merges past maxRuns take them.
      const state = new LayeredState({ memtableKeys, mergeRatio: ratio, maxMergeEntries: 256, writeSlice: 1, idleSlice: 0, maxRuns });
      const model = new Map<string, StoredValue>();
      const key = (family: string, i: number) => `${family}/${String(i).padStart(7, "0")}`;
      let mostRuns = 0;
      let mostPassed = 0;
      let forcedSteps = 0;
      for (let job = 0; job < 12_000; job++) {
        // A queue's fill and drain: a job record and its index entry, and now and then a claim of an early job.
        const writes: [string, StoredValue | undefined][] = [
          [key("j", job), r.int(50)],
          [key("p", job), -(1 + r.int(6))],
        ];
        if (r.int(3) === 0) {
          const old = r.int(job + 1);
          writes.push([key("p", old), undefined], [key("j", old), undefined]);
        }
        for (const [k, v] of writes) {
          const entries = state.layout.runs.reduce((n, l) => n + l.entries, 0);
          const overRuns = state.layout.runs.length > maxRuns;
          passed = 0;
          if (v === undefined) expect(state.delete(k)).toBe(model.delete(k));
          else {
            state.set(k, v);
            model.set(k, v);
          }
          // A write's share: the merge's entries over the keys until the memtable fills twice (at least one memtable).
          expect(passed).toBeLessThanOrEqual(Math.max(1, Math.ceil(entries / memtableKeys)));
          if (overRuns && passed > 0) forcedSteps++;
          mostPassed = Math.max(mostPassed, passed);
          mostRuns = Math.max(mostRuns, state.layout.runs.length);
          expect(state.layout.runs.length).toBeLessThanOrEqual(maxRuns + Math.min(ratio, maxRuns));
        }
        if (job % 997 === 0) for (let i = 0; i <= job; i += 61) expect(norm(state.get(key("j", i)))).toEqual(norm(model.get(key("j", i))));
      }
      // It went past maxRuns and merged there in slices, with no synchronous catch-up.
      expect(mostRuns).toBeGreaterThan(maxRuns);
      expect(forcedSteps).toBeGreaterThan(100);
      expect(state.counters.catchUps).toBe(0);
      expectSameEntries(state.scan(), modelScan(model, {}));

      // Freezes with no writes between them pace nothing: past maxRuns + mergeRatio the freeze finishes merges itself.
      let next = 12_000;
      for (let f = 0; f < 4 * (maxRuns + ratio); f++) {
        for (let i = 0; i < 2; i++, next++) {
          state.set(key("j", next), 1);
          model.set(key("j", next), 1);
        }
        state.freeze();
        expect(state.layout.runs.length).toBeLessThanOrEqual(maxRuns + Math.min(ratio, maxRuns));
      }
      expect(state.counters.catchUps).toBeGreaterThan(0);
      expectSameEntries(state.scan(), modelScan(model, {}));
      state.finishMerges();
      expectSameEntries(state.scan({ reverse: true }), modelScan(model, { reverse: true }));
      expect(mostPassed).toBeGreaterThan(0);
    } finally {
      RunMerge.prototype.step = step;
    }
  }, 120_000);

  it("builds a run past 1 MiB that holds exactly its bytes, whatever the capacity hint", () => {
    const key = (i: number) => `j/${String(i).padStart(10, "0")}`;
    const build = (capacity: number) => {
      const b = new KeyRunBuilder(capacity);
      for (let i = 0; i < 60_000; i++)
        b.add(
          key(i),
          Uint8Array.from({ length: 20 }, (_, j) => (i + j) & 0xff),
        );
      return b.finish();
    };
    const small = build(64);
    const size = small.bytes.length;
    expect(size).toBeGreaterThan(1 << 20);
    // A hint a little too large left its spare bytes (under an eighth) behind the run; a hint far too small grew by copies.
    for (const run of [small, build(Math.ceil(size * 1.1)), build(size * 4)]) {
      expect(run.bytes.length).toBe(size);
      expect(run.bytes.buffer.byteLength).toBe(size);
      expect(Buffer.compare(run.bytes, small.bytes)).toBe(0);
      const kb = new KeyBytes();
      const found = { valueAt: 0 };
      for (let i = 0; i < 60_000; i += 599) {
        expect(run.find(key(i), kb.set(key(i)), found)).toBe(i);
        expect([...(run.value(found.valueAt) as Uint8Array)]).toEqual(Array.from({ length: 20 }, (_, j) => (i + j) & 0xff));
      }
    }
  });

  it("finishes a merge in idle turns, without writes", async () => {
    const state = new LayeredState({ memtableKeys: 1000, mergeRatio: 2, writeSlice: 1, idleSlice: 100 });
    for (let i = 0; i < 2000; i++) state.set(`k/${String(i).padStart(5, "0")}`, i);
    // The second freeze's memtable is copied into its run in idle turns too, then the two runs merge.
    expect(state.layout.frozen).toBeGreaterThan(900);
    expect(state.layout.runs.length).toBe(1);
    let merged = false;
    for (let turns = 0; (state.layout.merging > 0 || state.layout.frozen > 0) && turns < 100; turns++) {
      await new Promise((resolve) => setImmediate(resolve));
      merged ||= state.layout.merging === 2;
    }
    expect(merged).toBe(true);
    expect(state.layout).toMatchObject({ merging: 0, frozen: 0, runs: [{ live: 2000, entries: 2000 }] });
    expect([...state.scan()].map(([, v]) => v)).toEqual(Array.from({ length: 2000 }, (_, i) => i));
  });

  it("after stopIdleMerges, no merge work runs in idle turns; a write still advances the merge and reads stay whole", async () => {
    const state = new LayeredState({ memtableKeys: 1000, mergeRatio: 2, writeSlice: 1, idleSlice: 100 });
    for (let i = 0; i < 2000; i++) state.set(`k/${String(i).padStart(5, "0")}`, i);
    while (state.layout.frozen > 0) state.mergeStep(100);
    expect(state.layout.merging).toBe(2);
    await new Promise((resolve) => setImmediate(resolve));
    const before = { ...state.counters };
    state.stopIdleMerges();
    for (let turns = 0; turns < 50; turns++) await new Promise((resolve) => setImmediate(resolve));
    expect(state.counters).toEqual(before);
    expect(state.layout.merging).toBe(2);
    expect([...state.scan()].map(([, v]) => v)).toEqual(Array.from({ length: 2000 }, (_, i) => i));
    // A write (which a disposed owner no longer makes) still copies its share, and schedules nothing.
    state.set("k/99999", -1);
    for (let turns = 0; turns < 50; turns++) await new Promise((resolve) => setImmediate(resolve));
    expect(state.layout.merging).toBe(2);
    expect(state.get("k/00010")).toBe(10);
  });

  it("keeps working with absurd merge settings (NaN and out-of-range values fall back or clamp)", () => {
    for (const opts of [
      { mergeRatio: Number.NaN, writeSlice: Number.NaN, idleSlice: Number.NaN, maxRuns: Number.NaN, memtableKeys: Number.NaN },
      { mergeRatio: -5, writeSlice: 0, idleSlice: -1, maxRuns: 0, memtableKeys: 0 },
      { mergeRatio: 1e30, writeSlice: Infinity, idleSlice: 0, maxRuns: Infinity, memtableKeys: 3 },
      { mergeRatio: 2.7, writeSlice: 0.5, idleSlice: 0, maxRuns: 2.9, memtableKeys: 2 },
    ]) {
      const state = new LayeredState(opts);
      for (let i = 0; i < 500; i++) state.set(`k/${String((i * 7919) % 500).padStart(3, "0")}`, i);
      for (let i = 0; i < 500; i += 3) state.delete(`k/${String(i).padStart(3, "0")}`);
      state.finishMerges();
      const keys = Array.from({ length: 500 }, (_, i) => `k/${String(i).padStart(3, "0")}`).filter((_, i) => i % 3 !== 0);
      expect([...state.scan()].map(([k]) => k)).toEqual(keys);
      expect(state.layout.runs.length).toBeLessThanOrEqual(opts.maxRuns === Infinity ? 500 : 24);
    }
  });

  it("drains a large run from its start without walking what it drained (no quadratic claim scan)", () => {
    const state = new LayeredState({ memtableKeys: 4096 });
    const n = 100_000;
    for (let i = 0; i < n; i++) state.set(`p/q/${String(i).padStart(8, "0")}`, -8);
    expect(state.layout.runs.length).toBeGreaterThan(0);
    const decoded = cursorStats.decoded;
    for (let i = 0; i < n; i++) {
      const first = state.scan({ prefix: "p/q/", limit: 1 }).next();
      expect(first.value?.[0]).toBe(`p/q/${String(i).padStart(8, "0")}`);
      state.delete(first.value![0]);
    }
    expect(state.size).toBe(0);
    // Each claim walks at most the dead entries of one block per run (a walk from the start would decode n * n / 2).
    expect(cursorStats.decoded - decoded).toBeLessThan(n * 2 * 32);
  }, 120_000);
});
