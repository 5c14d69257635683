/**
 * @module Adversarial schedules against the layered state's sliced merges:
 * every key deleted while a merge is part way, snapshots taken
 * mid-merge and read after it ended, a reopen (runs added oldest first, each
 * killing what it supersedes) while merges run, idle turns between writes,
 * and absurd sizes. Each step is compared with a plain map.
 */
import { describe, expect, it } from "vitest";
import { KeyRunBuilder } from "../../runtime/engine/key-run.js";
import { LayeredState, type LayeredStateOptions } from "../../runtime/engine/layered-state.js";
import type { StoredValue } from "../../runtime/engine/paged-value.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { testRandom, type TestRandom } from "../support/seed.js";

const key = (i: number) => `k/${String(i).padStart(6, "0")}`;

function dump(entries: Iterable<[string, StoredValue]>): string[] {
  return Array.from(
    entries,
    ([k, v]) =>
      `${k}=${v instanceof Uint8Array ? Buffer.from(v).toString("hex") : typeof v === "string" ? Buffer.from(v, "latin1").toString("hex") : String(v)}`,
  );
}

function modelDump(model: Map<string, StoredValue>): string[] {
  return dump([...model.entries()].sort(([a], [b]) => compareKeys(a, b)));
}

function shuffled(n: number, r: TestRandom): number[] {
  const a = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = r.int(i + 1);
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/** A state whose runs are merging (slices copied only when the test says), filled with `n` keys as paged values. */
function merging(r: TestRandom, n: number, opts: LayeredStateOptions = {}): { state: LayeredState; model: Map<string, StoredValue> } {
  const state = new LayeredState({ memtableKeys: 16 + r.int(200), mergeRatio: 2 + r.int(3), writeSlice: 1, idleSlice: 0, maxRuns: 4 + r.int(20), ...opts });
  const model = new Map<string, StoredValue>();
  for (const i of shuffled(n, r)) {
    const v = r.int(3) === 0 ? Uint8Array.of(i & 255, i >> 8) : r.int(1000);
    state.set(key(i), v);
    model.set(key(i), v);
  }
  state.freeze();
  return { state, model };
}

describe("layered state, merges attacked", () => {
  it("every key deleted while a merge is part way: nothing comes back, no run stays, a snapshot from before still reads whole", () => {
    const r = testRandom("layered state delete all mid-merge");
    for (let round = 0; round < 12; round++) {
      const n = 200 + r.int(1500);
      const { state, model } = merging(r, n);
      if (state.layout.merging === 0) continue;
      state.mergeStep(r.int(n));
      const snap = state.snapshot();
      const before = modelDump(model);
      for (const i of shuffled(n, r)) {
        expect(state.delete(key(i))).toBe(true);
        if (r.int(8) === 0) state.mergeStep(r.int(50));
        if (r.int(200) === 0) state.freeze();
      }
      expect(state.size).toBe(0);
      expect(dump(state.scan())).toEqual([]);
      expect(dump(state.scan({ reverse: true }))).toEqual([]);
      state.finishMerges();
      expect(state.layout.runs).toEqual([]);
      expect(dump(snap.entries())).toEqual(before);
      for (let i = 0; i < n; i += 97) expect(state.has(key(i))).toBe(false);
    }
  });

  it("snapshots taken at every stage of a merge read as the state did then, after the merge ends and the state changed again", () => {
    const r = testRandom("layered state snapshots mid-merge");
    for (let round = 0; round < 5; round++) {
      const n = 500 + r.int(1500);
      const state = new LayeredState({ memtableKeys: 32 + r.int(100), mergeRatio: 2 + r.int(3), writeSlice: 1, idleSlice: 0, maxRuns: 3 + r.int(10) });
      const model = new Map<string, StoredValue>();
      const snaps: { view: ReturnType<LayeredState["snapshot"]>; dump: string[] }[] = [];
      for (let step = 0; step < 4 * n; step++) {
        const i = r.int(n);
        const op = r.int(10);
        if (op < 5) {
          const v = Uint8Array.of(step & 255, (step >> 8) & 255, r.int(256));
          state.set(key(i), v);
          model.set(key(i), v);
        } else if (op < 8) {
          expect(state.delete(key(i))).toBe(model.delete(key(i)));
        } else if (op < 9) {
          state.mergeStep(r.int(100));
        } else if (r.int(20) === 0) {
          snaps.push({ view: state.snapshot(), dump: modelDump(model) });
        }
      }
      state.finishMerges();
      for (const s of snaps) expect(dump(s.view.entries())).toEqual(s.dump);
      expect(dump(state.scan())).toEqual(modelDump(model));
    }
  });

  it("a reopen (runs added oldest first, each killing what it supersedes) while merges run reads as the model", () => {
    const r = testRandom("layered state reopen mid-merge");
    for (let round = 0; round < 10; round++) {
      const model = new Map<string, StoredValue>();
      const state = new LayeredState({ memtableKeys: 8 + r.int(64), mergeRatio: 2 + r.int(3), writeSlice: 1, idleSlice: 0, maxRuns: 2 + r.int(6) });
      const runs = 5 + r.int(30);
      for (let run = 0; run < runs; run++) {
        // A segment run: keys set (with a value) or deleted (a tombstone), in key order.
        const picked = [...new Set(Array.from({ length: 1 + r.int(300) }, () => r.int(2000)))].sort((a, b) => a - b);
        const builder = new KeyRunBuilder();
        for (const i of picked) {
          if (run > 0) state.kill(key(i));
          if (run > 0 && r.int(4) === 0) {
            model.delete(key(i));
            continue;
          }
          const v = r.int(1000);
          builder.add(key(i), v);
          model.set(key(i), v);
          if (r.int(50) === 0) state.mergeStep(r.int(20));
        }
        state.addRun(builder.finish());
        expect(state.size).toBe(model.size);
      }
      expect(state.layout.runs.length).toBeLessThanOrEqual(state.layout.merging + 8);
      expect(dump(state.scan())).toEqual(modelDump(model));
      state.finishMerges();
      expect(dump(state.scan())).toEqual(modelDump(model));
    }
  });

  it("merges finished in idle turns between writes, deletes and replaced memtable values read as the model", async () => {
    const r = testRandom("layered state idle merges");
    const state = new LayeredState({ memtableKeys: 16 + r.int(64), mergeRatio: 2 + r.int(3), writeSlice: 1, idleSlice: 1 + r.int(64), maxRuns: 3 + r.int(6) });
    const model = new Map<string, StoredValue>();
    for (let step = 0; step < 20_000; step++) {
      const i = r.int(1500);
      const op = r.int(10);
      if (op < 5) {
        state.set(key(i), step % 1000);
        model.set(key(i), step % 1000);
      } else if (op < 8) {
        expect(state.delete(key(i))).toBe(model.delete(key(i)));
      } else if (op < 9) {
        const v = model.get(key(i));
        if (typeof v === "number") {
          // Replaced only where the memtable holds it; a run's entry stays as it is.
          const held = state.holds(key(i), v);
          expect(state.replaceIf(key(i), v, v + 1000)).toBe(held);
          if (held) model.set(key(i), v + 1000);
        }
      } else await new Promise((resolve) => setImmediate(resolve));
    }
    expect(dump(state.scan())).toEqual(modelDump(model));
    for (let turns = 0; state.layout.merging > 0 && turns < 10_000; turns++) await new Promise((resolve) => setImmediate(resolve));
    expect(state.layout.merging).toBe(0);
    expect(dump(state.scan())).toEqual(modelDump(model));
  });

  it("a scan held open across idle turns (merges ending and starting under it, no writes) reads every entry once, in order", async () => {
    const r = testRandom("layered state scan across idle merges");
    for (let round = 0; round < 5; round++) {
      const state = new LayeredState({ memtableKeys: 50 + r.int(100), mergeRatio: 2, writeSlice: 1, idleSlice: 1 + r.int(200), maxRuns: 50 });
      const model = new Map<string, StoredValue>();
      for (const i of shuffled(3000, r)) {
        state.set(key(i), i);
        model.set(key(i), i);
        if (r.int(3) === 0) {
          state.delete(key(i));
          model.delete(key(i));
        }
      }
      // Freeze small batches until two runs share a tier and start merging.
      for (let extra = 3000; state.layout.merging === 0 && extra < 3100; extra++) {
        state.set(key(extra), extra);
        model.set(key(extra), extra);
        state.freeze();
      }
      expect(state.layout.merging).toBeGreaterThan(0);
      const reverse = round % 2 === 1;
      const seen: [string, StoredValue][] = [];
      for (const entry of state.scan({ reverse })) {
        seen.push(entry);
        if (r.int(20) === 0) await new Promise((resolve) => setImmediate(resolve));
      }
      const expected = modelDump(model);
      expect(dump(seen)).toEqual(reverse ? expected.reverse() : expected);
    }
  });

  it("a kill or a new write of the entry just copied, of the cursor's head and of the one after, at every position of a merge (block edges included)", () => {
    const n = 2 * 96;
    for (let at = 0; at <= n; at++) {
      const state = new LayeredState({ memtableKeys: 96, mergeRatio: 2, writeSlice: 1, idleSlice: 0, maxRuns: 8 });
      const model = new Map<string, StoredValue>();
      // Two runs, even keys then odd ones: the merge interleaves them entry by entry. Added as runs, so no write copies an entry.
      for (const parity of [0, 1]) {
        const builder = new KeyRunBuilder();
        for (let i = parity; i < n; i += 2) {
          builder.add(key(i), 1000 + i);
          model.set(key(i), 1000 + i);
        }
        state.addRun(builder.finish());
      }
      expect(state.layout.merging).toBe(2);
      // `at` entries copied; a kill copies nothing, and a write (to the memtable) too few keys to freeze.
      state.mergeStep(at);
      let written = 0;
      for (const [i, act] of [
        [at - 1, "kill"],
        [at, "kill"],
        [at + 1, "write"],
        [at - 2, "write"],
      ] as const) {
        if (i < 0 || i >= n) continue;
        if (act === "kill") {
          expect(state.kill(key(i))).toBe(true);
          model.delete(key(i));
        } else {
          state.set(key(i), 5000 + i);
          model.set(key(i), 5000 + i);
          written++;
        }
      }
      expect(dump(state.scan()), `after ${at} copied`).toEqual(modelDump(model));
      state.finishMerges();
      expect(dump(state.scan()), `after ${at} copied, merged`).toEqual(modelDump(model));
      expect(state.layout.runs.map((r) => r.live)).toEqual([model.size - written]);
      expect(state.layout.memtableKeys).toBe(written);
    }
  });

  it("stops merging in idle turns once told (a dropped state): the merge stays in progress and reads stay whole", async () => {
    const state = new LayeredState({ memtableKeys: 1000, mergeRatio: 2, writeSlice: 1, idleSlice: 10 });
    for (let i = 0; i < 2000; i++) state.set(key(i), i);
    // The second freeze's run is copied first; the merge of the two starts when it is made.
    while (state.layout.frozen > 0) state.mergeStep(100);
    expect(state.layout.merging).toBe(2);
    await new Promise((resolve) => setImmediate(resolve));
    // This state's own progress, not the process-wide cursor counter: states of earlier tests here may still merge in idle turns.
    const copying = state.layout.mergeRemaining;
    expect(copying).toBeGreaterThan(0);
    expect(copying).toBeLessThan(2000);
    state.stopIdleMerges();
    for (let turn = 0; turn < 50; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(state.layout.mergeRemaining).toBe(copying);
    expect(state.layout.merging).toBe(2);
    expect(Array.from(state.scan(), ([, v]) => v)).toEqual(Array.from({ length: 2000 }, (_, i) => i));
    // Writes still copy their share, and an explicit step finishes it.
    state.finishMerges();
    expect(state.layout).toMatchObject({ merging: 0, runs: [{ live: 2000 }] });
  });

  it("a memtable of Infinity (or 1e300) keys freezes on demand instead of failing", () => {
    for (const memtableKeys of [Infinity, 1e300, Number.MAX_SAFE_INTEGER]) {
      const state = new LayeredState({ memtableKeys, hold: (_k, v) => v === 3 });
      for (let i = 0; i < 10; i++) state.set(key(i), i);
      state.freeze();
      state.freeze();
      expect(state.layout).toMatchObject({ memtableKeys: 1, runs: [{ live: 9, entries: 9 }] });
      expect(Array.from(state.scan(), ([, v]) => v)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }
  });
});
