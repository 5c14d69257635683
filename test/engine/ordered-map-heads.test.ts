/**
 * @module The ordered map's trees per key head (the first code unit below
 * 128, one head for every other key) against a sorted array: random sets,
 * overwrites and deletes of keys whose first units sit at and around every
 * head's edge (the empty key, U+0000, U+007F, U+0080, surrogates, U+FFFF),
 * heads emptied and filled again, clones written on both sides, maps built
 * from sorted entries, and cursors from bounds in heads that hold no key,
 * in both directions, in the built-in order and under `compareKeys`.
 */
import { describe, expect, it } from "vitest";
import { OrderedMap } from "../../runtime/engine/ordered-map.js";
import { testRandom, type TestRandom } from "../support/seed.js";
import { checkAgainst, MODEL_ORDERS, modelWrites, plain } from "./fixtures/ordered-map-model.js";
import { SortedEntries } from "./fixtures/sorted-entries.js";

/** First units at the heads' edges and a few ordinary ones; some heads stay empty for long stretches. */
const FIRSTS = ["", "\u0000", "\u0001", "/", "a", "b", "j", "u", "\u007e", "\u007f", "\u0080", "\u00e9", "\ud7ff", "\ue000", "\uffff", "\u{1f600}"];

function randomKey(r: TestRandom, wide: boolean, heads: number): string {
  const firsts = wide ? FIRSTS : FIRSTS.filter((f) => f.length === 0 || f.charCodeAt(0) < 0xd800);
  const first = firsts[r.int(Math.min(heads, firsts.length))]!;
  if (first === "" && r.int(3) === 0) return "";
  return `${first}/${String(r.int(400)).padStart(3, "0")}`;
}

/** Bounds for cursors: held keys, keys next to them, and keys in every head whether it holds keys or not. */
function randomBound(r: TestRandom, held: readonly [string, number][], wide: boolean): string {
  const pick = r.int(4);
  if (pick === 0 && held.length > 0) return held[r.int(held.length)]![0];
  if (pick === 1 && held.length > 0) return `${held[r.int(held.length)]![0]}\u0000`;
  if (pick === 2) return FIRSTS[r.int(wide ? FIRSTS.length : 13)]!;
  return randomKey(r, wide, FIRSTS.length);
}

function check(r: TestRandom, map: OrderedMap<number>, model: SortedEntries, wide: boolean, label: string): void {
  checkAgainst(
    map,
    model,
    Array.from({ length: 12 }, () => randomBound(r, model.entries, wide)),
    label,
  );
}

function writes(r: TestRandom, map: OrderedMap<number>, model: SortedEntries, count: number, wide: boolean, heads: number, deleteShare: number): void {
  modelWrites(r, map, model, count, deleteShare, () => randomKey(r, wide, heads));
}

describe("OrderedMap's trees per key head", () => {
  for (const [name, order, modelOrder, wide] of MODEL_ORDERS) {
    it(`matches a sorted array across heads emptied and filled again, clones and sorted builds (${name})`, () => {
      const r = testRandom(`ordered map heads ${name}`);
      for (let round = 0; round < 12; round++) {
        // Few heads in some rounds (long trees, most heads empty), all of them in others.
        const heads = [2, 5, FIRSTS.length][round % 3]!;
        let map = new OrderedMap<number>(order);
        let model = new SortedEntries(modelOrder);
        check(r, map, model, wide, `round ${round}, empty`);
        for (let phase = 0; phase < 6; phase++) {
          writes(r, map, model, 300, wide, heads, [10, 30, 60, 90, 20, 95][phase]!);
          check(r, map, model, wide, `round ${round}, phase ${phase}`);
          if (phase === 2) {
            const copy = map.clone();
            const copyModel = model.clone();
            writes(r, copy, copyModel, 200, wide, heads, 50);
            writes(r, map, model, 200, wide, heads, 50);
            check(r, copy, copyModel, wide, `round ${round}, clone`);
            check(r, map, model, wide, `round ${round}, after its clone's writes`);
          }
          if (phase === 3) {
            map = OrderedMap.fromSorted(
              model.entries.map(([k]) => k),
              model.entries.map(([, v]) => v),
              order,
            );
            check(r, map, model, wide, `round ${round}, built from sorted entries`);
          }
          if (phase === 5 && r.int(2) === 0) {
            // Every key deleted: every head empty, then written again.
            for (const [k] of [...model.entries]) expect(map.delete(k)).toBe(model.delete(k));
            check(r, map, model, wide, `round ${round}, emptied`);
            model = new SortedEntries(modelOrder);
            map = new OrderedMap<number>(order);
          }
        }
      }
    });
  }

  it("refuses sorted entries whose first units are out of head order for the map's order", () => {
    // Ascending under a reversed order, but not by head: the map cannot hold them.
    const reversed = (a: string, b: string): number => plain(b, a);
    expect(() => OrderedMap.fromSorted(["b", "a"], [1, 2], reversed)).toThrow(RangeError);
    expect(OrderedMap.fromSorted(["a/1", "a/2", "b"], [1, 2, 3]).size).toBe(3);
  });
});
