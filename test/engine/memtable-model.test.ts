/**
 * @module The memtable and its ordered map against plain models: tables
 * written, read, scanned, frozen (killed into while a run is made of them),
 * rebuilt from the held entries, cloned for snapshots and switched to the
 * surrogate-aware order, against a sorted model, with keys that share long
 * prefixes, agree far past them, end inside them or leave them; and the
 * layered state's reads, conditional replaces and scans across freezes
 * against a plain map. The same reads a second time in a row, so a read
 * path that remembers what it found is held to what was written since.
 */
import { describe, expect, it } from "vitest";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import { Memtable } from "../../runtime/engine/memtable.js";
import type { OrderedMap } from "../../runtime/engine/ordered-map.js";
import type { StoredValue } from "../../runtime/engine/paged-value.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { type TestRandom, testRandom } from "../support/seed.js";

/** Distinct keys the tests draw from: more than the layered state's memtables hold, and than a few thousand recent ones. */
const SPACE = 12_000;

/**
 * Keys as queues and workflows make them, long shared prefixes then an id,
 * and keys that end inside such a prefix or just past it, or repeat a
 * digit past it (keys that agree for many units past it); now and then one
 * past U+D800 (the order switch).
 */
function keyOf(r: TestRandom, space: number): string {
  const prefix = ["u/workflow/history/workflow-steps/01M8TVYK6X", "u/workflow/steps/workflow-steps/01M8TVYK6X", "j/01M8TVYTZPV71T97", "c/q/"][r.int(4)]!;
  const n = r.int(space);
  const shape = r.int(20);
  if (shape === 0) return prefix.slice(0, n % (prefix.length + 1));
  if (shape === 1) return `${prefix}${"7".repeat(n % 9)}${n % 3}`;
  const tail = r.int(5_000) === 0 ? "\u{1f600}" : "";
  return `${prefix}${String(n).padStart(6, "0")}${tail}`;
}

/** The model's entries in `compareKeys` order: for these keys (ASCII, surrogate pairs, nothing at or past U+E000) that is UTF-16 order, which the built-in sort gives. */
function sortedEntries<V>(model: Map<string, V>): [string, V][] {
  return [...model.keys()].sort().map((k) => [k, model.get(k)!]);
}

/** Up to `n` entries of `tree` from `lo` (or down from it), against the model's. */
function expectScan<V>(r: TestRandom, tree: OrderedMap<V>, model: Map<string, V>, lo: string): void {
  const n = 1 + r.int(40);
  const reverse = r.int(2) === 0;
  const it = reverse ? tree.entriesReversed(lo) : tree.entries(lo);
  const got: [string, V][] = [];
  for (let i = 0; i < n; i++) {
    const next = it.next();
    if (next.done) break;
    got.push(next.value);
  }
  let want = sortedEntries(model).filter(([k]) => (reverse ? compareKeys(k, lo) <= 0 : compareKeys(k, lo) >= 0));
  if (reverse) want.reverse();
  want = want.slice(0, n);
  expect(got).toEqual(want);
}

interface Table {
  table: Memtable<number>;
  model: Map<string, number>;
}

describe("the memtable against plain models", () => {
  it("reads, frozen reads, scans and snapshots see what a sorted model holds, with keys that share, outrun and leave long prefixes", {
    timeout: 120_000,
  }, () => {
    for (let round = 0; round < 2; round++) {
      const r = testRandom(`memtable model ${round}`);
      const space = SPACE;
      let live: Table = { table: new Memtable<number>(), model: new Map() };
      const frozen: Table[] = [];
      const snapshots: { tree: OrderedMap<number>; entries: [string, number][] }[] = [];
      for (let op = 0; op < 30_000; op++) {
        const k = keyOf(r, space);
        const pick = r.int(1_000);
        if (pick < 400) {
          const v = r.int(1_000_000);
          expect(live.table.set(k, v)).toBe(!live.model.has(k));
          live.model.set(k, v);
        } else if (pick < 440) {
          // A checkpoint's page-out: the value of a key the table holds, replaced.
          if (live.model.has(k)) {
            live.table.replace(k, -op);
            live.model.set(k, -op);
          }
        } else if (pick < 560) expect(live.table.delete(k)).toBe(live.model.delete(k));
        else if (pick < 850) {
          expect(live.table.get(k)).toBe(live.model.get(k));
          // Read again: a read path that remembers the first read must still agree.
          expect(live.table.get(k)).toBe(live.model.get(k));
        } else if (pick < 920 && frozen.length > 0) {
          // A frozen table: read, and killed into by the live table's writes.
          const f = frozen[r.int(frozen.length)]!;
          expect(f.table.get(k)).toBe(f.model.get(k));
          if (r.int(3) === 0) expect(f.table.delete(k)).toBe(f.model.delete(k));
          expect(f.table.size).toBe(f.model.size);
        } else if (pick < 930) expectScan(r, live.table.tree, live.model, k);
        else if (pick < 935) snapshots.push({ tree: live.table.tree.clone(), entries: sortedEntries(live.model) });
        else if (pick < 942) {
          // A freeze: the table moves aside whole, or its held entries (here the even values) go to a new table built at once.
          if (r.int(2) === 0 || live.model.size === 0) {
            frozen.push(live);
            live = { table: new Memtable<number>(), model: new Map() };
          } else {
            const held = sortedEntries(live.model).filter(([, v]) => v % 2 === 0);
            const next: Table = {
              table: Memtable.fromSorted(
                held.map(([hk]) => hk),
                held.map(([, v]) => v),
              ),
              model: new Map(held),
            };
            for (const [hk] of held) {
              expect(live.table.delete(hk)).toBe(true);
              live.model.delete(hk);
            }
            frozen.push(live);
            live = next;
          }
          if (frozen.length > 3) frozen.shift();
        }
        expect(live.table.size).toBe(live.model.size);
      }
      for (const t of [live, ...frozen]) {
        for (const [k, v] of t.model) expect(t.table.get(k)).toBe(v);
        expect([...t.table.tree.entries()]).toEqual(sortedEntries(t.model));
      }
      expect(snapshots.length).toBeGreaterThan(60);
      for (const s of snapshots) expect([...s.tree.entries()]).toEqual(s.entries);
    }
  });

  it("the layered state's reads, held values and conditional replaces across freezes match a plain map", { timeout: 120_000 }, () => {
    for (let round = 0; round < 3; round++) {
      const r = testRandom(`layered memtable model ${round}`);
      const held = new Uint8Array([7]);
      const state = new LayeredState({
        memtableKeys: 200 + r.int(2_000),
        writeSlice: 1 + r.int(8),
        idleSlice: 0,
        hold: (_k, v) => v instanceof Uint8Array,
      });
      const model = new Map<string, StoredValue>();
      const space = SPACE;
      let sawFrozen = 0;
      for (let op = 0; op < 20_000; op++) {
        const k = keyOf(r, space);
        const pick = r.int(100);
        if (pick < 40) {
          const v = r.int(4) === 0 ? held : r.int(1_000_000);
          state.set(k, v);
          model.set(k, v);
        } else if (pick < 50) expect(state.delete(k)).toBe(model.delete(k));
        else if (pick < 58) {
          // A checkpoint pages a held value out; only the memtable's own array counts.
          const next = -op;
          const swapped = state.replaceIf(k, held, next);
          // Held values never leave the memtable: a freeze keeps them there.
          expect(swapped).toBe(model.get(k) === held);
          if (swapped) model.set(k, next);
        } else if (pick < 95) {
          expect(state.get(k)).toBe(model.get(k));
          expect(state.has(k)).toBe(model.has(k));
        } else state.mergeStep(r.int(64));
        if (state.layout.frozen > 0) sawFrozen++;
      }
      expect(sawFrozen).toBeGreaterThan(100);
      for (const [k, v] of model) expect(state.get(k)).toBe(v);
      expect([...state.scan()]).toEqual(sortedEntries(model));
    }
  });
});
