/**
 * @module Attacks on the merges past `maxRuns` copied a slice per write
 * (layered-state.ts): with runs too large for any tier merge, so that only
 * the forced merge of the smallest takes them, every operation is mixed in
 * between the slices: reads, writes, replaced memtable values, deletes,
 * kills, scans (bounded, reversed), snapshots read after the merge ended,
 * freezes with no write between them (the backstop past `maxRuns` +
 * `mergeRatio`), runs added as an open adds them, idle merging stopped (a
 * closed state), and a reopen from a snapshot. Each step is checked
 * against a plain map, and the runs never pass `maxRuns` + `mergeRatio`.
 */
import { describe, expect, it } from "vitest";
import { KeyRunBuilder } from "../../runtime/engine/key-run.js";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import type { StoredValue } from "../../runtime/engine/paged-value.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { testRandom, type TestRandom } from "../support/seed.js";

// Families of keys of different lengths, one of them not ASCII (the merge then compares by code point).
const FAMILIES = ["j/", "p/0/", "h/ü/", "s/\u{1f600}/"];

function keyOf(r: TestRandom, space: number): string {
  return `${FAMILIES[r.int(FAMILIES.length)]}${String(r.int(space)).padStart(5, "0")}`;
}

function show(v: StoredValue | undefined): string {
  if (v === undefined) return "-";
  if (v instanceof Uint8Array) return `b${Buffer.from(v).toString("hex")}`;
  return typeof v === "string" ? `s${v}` : `n${String(v)}`;
}

function dump(entries: Iterable<[string, StoredValue]>): string[] {
  return Array.from(entries, ([k, v]) => `${k}=${show(v)}`);
}

function modelDump(model: Map<string, StoredValue>, lo = "", hi?: string, reverse = false, sorted = [...model.keys()].sort(compareKeys)): string[] {
  const keys = sorted.filter((k) => compareKeys(k, lo) >= 0 && (hi === undefined || compareKeys(k, hi) < 0));
  if (reverse) keys.reverse();
  return keys.map((k) => `${k}=${show(model.get(k))}`);
}

function value(r: TestRandom, n: number): StoredValue {
  // A held value (first byte 255) stays in the memtable when it freezes.
  return r.int(3) === 0 ? Uint8Array.of(r.int(8) === 0 ? 255 : n & 127, n >> 8) : n;
}

const hold = (_: string, v: StoredValue) => v instanceof Uint8Array && v[0] === 255;

describe("layered state, merges past maxRuns attacked between their slices", () => {
  it("reads, writes, deletes, kills, scans, snapshots, freezes and added runs between slices read as a model, never past maxRuns + mergeRatio runs", () => {
    const r = testRandom("paced merge attack");
    for (let round = 0; round < 4; round++) {
      const memtableKeys = 16 + r.int(48);
      const ratio = 2 + r.int(3);
      const maxRuns = 2 + r.int(5);
      const most = maxRuns + Math.min(ratio, maxRuns);
      // Runs of more than maxMergeEntries / ratio live entries join no tier merge: past maxRuns only the forced one takes them.
      const state = new LayeredState({ hold, memtableKeys, mergeRatio: ratio, maxMergeEntries: 2 * memtableKeys, writeSlice: 1, idleSlice: 0, maxRuns });
      const model = new Map<string, StoredValue>();
      const space = 400 + r.int(2_000);
      const snaps: { view: ReturnType<LayeredState["snapshot"]>; dump: string[] }[] = [];
      let version = 0;
      let pastMaxRuns = 0;
      for (let step = 0; step < 4_000; step++) {
        const op = r.int(100);
        const k = keyOf(r, space);
        if (op < 45) {
          const v = value(r, version++);
          state.set(k, v);
          model.set(k, v);
        } else if (op < 60) {
          expect(state.delete(k)).toBe(model.delete(k));
        } else if (op < 70) {
          expect(show(state.get(k))).toBe(show(model.get(k)));
          expect(state.has(k)).toBe(model.has(k));
        } else if (op < 74) {
          // A kill marks a run's entry dead only: the key lives on when the memtable holds it.
          const inMemtable = state.holds(k, model.get(k) as StoredValue);
          const killed = state.kill(k);
          if (killed) expect(inMemtable).toBe(false);
          if (killed) model.delete(k);
        } else if (op < 77) {
          const v = model.get(k);
          if (v !== undefined && state.holds(k, v)) {
            const next = value(r, version++);
            expect(state.replaceIf(k, v, next)).toBe(true);
            model.set(k, next);
          } else expect(state.replaceIf(k, Uint8Array.of(1), 2)).toBe(false);
        } else if (op < 79) {
          const a = keyOf(r, space);
          const b = keyOf(r, space);
          const [lo, hi] = compareKeys(a, b) <= 0 ? [a, b] : [b, a];
          const reverse = r.int(2) === 0;
          const sorted = [...model.keys()].sort(compareKeys);
          expect(dump(state.scan({ start: lo, end: hi, reverse }))).toEqual(modelDump(model, lo, hi, reverse, sorted));
          const family = FAMILIES[r.int(FAMILIES.length)]!;
          const limit = 1 + r.int(50);
          const inFamily = modelDump(model, "", undefined, reverse, sorted).filter((e) => e.startsWith(family));
          expect(dump(state.scan({ prefix: family, reverse, limit }))).toEqual(inFamily.slice(0, limit));
        } else if (op < 83) {
          snaps.push({ view: state.snapshot(), dump: modelDump(model) });
        } else if (op < 86) {
          state.freeze();
        } else if (op < 88) {
          // Freezes with no write between them: nothing paces the merge, the backstop must hold the runs.
          for (let f = 0; f < 2 + r.int(2 * most); f++) {
            const k2 = keyOf(r, space);
            const v = r.int(1000);
            state.set(k2, v);
            model.set(k2, v);
            state.freeze();
            expect(state.runCount).toBeLessThanOrEqual(most);
          }
        } else if (op < 90) {
          // A run added as an open adds one: its keys are killed elsewhere first.
          const picked = [...new Set(Array.from({ length: 1 + r.int(3 * memtableKeys) }, () => keyOf(r, space)))].sort(compareKeys);
          const builder = new KeyRunBuilder();
          for (const p of picked) {
            if (model.has(p) && state.holds(p, model.get(p) as StoredValue)) continue;
            state.kill(p);
            const v = r.int(1000);
            builder.add(p, v);
            model.set(p, v);
          }
          state.addRun(builder.finish());
        } else if (op < 92) {
          state.mergeStep(r.int(3 * memtableKeys));
        } else {
          expect(state.size).toBe(model.size);
        }
        const runs = state.runCount;
        expect(runs).toBeLessThanOrEqual(most);
        if (runs > maxRuns && state.layout.merging > 0) pastMaxRuns++;
      }
      // The forced merges ran between writes: the runs went past maxRuns with a merge in progress.
      expect(pastMaxRuns).toBeGreaterThan(0);
      expect(dump(state.scan())).toEqual(modelDump(model));
      expect(dump(state.scan({ reverse: true }))).toEqual(modelDump(model, "", undefined, true));

      // Closed mid-merge: idle merging stops, reads stay whole, writes still pace the merge to its end.
      state.stopIdleMerges();
      for (let i = 0; i < 4 * memtableKeys; i++) {
        const k = keyOf(r, space);
        if (r.int(3) === 0) expect(state.delete(k)).toBe(model.delete(k));
        else {
          state.set(k, i);
          model.set(k, i);
        }
      }
      expect(dump(state.scan())).toEqual(modelDump(model));
      for (const s of snaps) expect(dump(s.view.entries())).toEqual(s.dump);

      // Reopened: a new state built from a snapshot's entries in runs of a memtable's keys, oldest first.
      const reopened = new LayeredState({ hold, memtableKeys, mergeRatio: ratio, maxMergeEntries: 2 * memtableKeys, writeSlice: 1, idleSlice: 0, maxRuns });
      let builder = new KeyRunBuilder();
      for (const [k, v] of state.snapshot().entries()) {
        builder.add(k, v instanceof Uint8Array ? Uint8Array.from(v) : v);
        if (builder.count >= memtableKeys) {
          reopened.addRun(builder.finish());
          expect(reopened.runCount).toBeLessThanOrEqual(maxRuns);
          builder = new KeyRunBuilder();
        }
      }
      reopened.addRun(builder.finish());
      expect(dump(reopened.scan())).toEqual(modelDump(model));
      reopened.finishMerges();
      state.finishMerges();
      expect(dump(reopened.scan({ reverse: true }))).toEqual(modelDump(model, "", undefined, true));
      expect(dump(state.scan())).toEqual(modelDump(model));
    }
  }, 120_000);
});
