/**
 * @module The ordered map with keys that share long prefixes, as the
 * engine's do: keys that differ right past a shared prefix or end inside
 * one another, odd code units (NUL, U+7FFE..U+8000, surrogates,
 * U+E000, U+FFFF, an astral character), against a sorted array, through clones written on both sides, a queue's pattern of appends
 * at one end and deletes at the other, and a branch whose first separator
 * falls below the prefix its other keys share.
 */
import { describe, expect, it, vi } from "vitest";
import { type KeyOrder, OrderedMap } from "../../runtime/engine/ordered-map.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { testRandom, type TestRandom } from "../support/seed.js";
import { scaledForLoad } from "../support/load.js";
import { SortedEntries } from "./fixtures/sorted-entries.js";

// CPU-bound rounds that took 23-32 s at a load of 38 on two cores, past the default 30 s: the limit is only a backstop.
vi.setConfig({ testTimeout: scaledForLoad(30_000) });

const builtIn = (a: string, b: string): number => (a === b ? 0 : a < b ? -1 : 1);

const HEADS = ["u/workflow/history/workflow-steps/01M8TVYTZPV71T97", "u/workflow/history/workflow-steps/01M8TVYTZPV71T98", "q/default/0/", ""];
const UNITS = ["", "\u0000", "\u0001", "0", "1", "a", "\u007f", "\u7ffe", "\u7fff", "\u8000", "\ud7ff", "\ue000", "\uffff", "\u{1f600}", "\u00e9"];

/** A key of one of a few long heads and up to five odd units, so keys differ right past a shared prefix or end inside another key. */
function oddKey(r: TestRandom): string {
  let k = HEADS[r.int(HEADS.length)]!;
  const n = r.int(6);
  for (let i = 0; i < n; i++) k += UNITS[r.int(UNITS.length)]!;
  return k;
}

function firstDifference(got: [string, number][], want: [string, number][]): string | undefined {
  const n = Math.max(got.length, want.length);
  for (let i = 0; i < n; i++) {
    const g = got[i];
    const w = want[i];
    if (g?.[0] !== w?.[0] || g?.[1] !== w?.[1]) return `entry ${i}: got ${JSON.stringify(g)}, want ${JSON.stringify(w)}`;
  }
  return undefined;
}

/** Every read of `map` against `want`: gets of present and absent keys, whole iterations and iterations from bounds both ways. */
function check(r: TestRandom, map: OrderedMap<number>, want: SortedEntries): void {
  expect(map.size).toBe(want.entries.length);
  expect(firstDifference([...map.entries()], want.entries)).toBeUndefined();
  expect(firstDifference([...map.entriesReversed()], [...want.entries].reverse())).toBeUndefined();
  for (const [k, v] of want.entries) if (map.get(k) !== v) expect.fail(`get ${JSON.stringify(k)}: got ${map.get(k)}, want ${v}`);
  for (let i = 0; i < 40; i++) {
    const probe = oddKey(r);
    const at = want.find(probe);
    const present = want.entries[at]?.[0] === probe;
    expect(map.get(probe)).toBe(present ? want.entries[at]![1] : undefined);
    expect(firstDifference([...map.entries(probe)], want.entries.slice(at))).toBeUndefined();
    expect(firstDifference([...map.entriesReversed(probe)], want.entries.slice(0, present ? at + 1 : at).reverse())).toBeUndefined();
  }
}

function writes(r: TestRandom, map: OrderedMap<number>, want: SortedEntries, count: number, deleteShare: number): void {
  for (let i = 0; i < count; i++) {
    const key = oddKey(r);
    if (r.int(100) < deleteShare) {
      if (map.delete(key) !== want.delete(key)) expect.fail(`delete ${JSON.stringify(key)}`);
    } else {
      const value = r.int(1_000_000);
      if (map.set(key, value) !== want.set(key, value)) expect.fail(`set ${JSON.stringify(key)}`);
    }
  }
}

describe("OrderedMap with keys sharing long prefixes", () => {
  for (const [name, order, model] of [
    ["the built-in order", undefined, builtIn],
    ["compareKeys", compareKeys, compareKeys],
  ] as [string, KeyOrder, (a: string, b: string) => number][]) {
    it(`orders keys that differ right past a shared prefix, end inside one another or hold odd units; clones stay apart (${name})`, () => {
      const r = testRandom(`ordered map prefixes ${name}`);
      for (let round = 0; round < 6; round++) {
        let map = new OrderedMap<number>(order);
        let want = new SortedEntries(model);
        if (round % 3 === 1) {
          writes(r, map, want, 1500, 0);
          map = OrderedMap.fromSorted(
            want.entries.map(([k]) => k),
            want.entries.map(([, v]) => v),
            order,
          );
        }
        for (let phase = 0; phase < 4; phase++) {
          writes(r, map, want, 1500, [10, 45, 30, 70][phase]!);
          check(r, map, want);
          const copy = map.clone();
          const copyWant = want.clone();
          writes(r, map, want, 700, 40);
          writes(r, copy, copyWant, 700, 40);
          check(r, map, want);
          check(r, copy, copyWant);
          if (r.int(2) === 0) {
            map = copy;
            want = copyWant;
          }
        }
      }
    });
  }

  it("keeps order while keys are appended past every key and taken from the front, as a queue does, with a clone held midway", () => {
    const r = testRandom("ordered map prefixes queue");
    const map = new OrderedMap<number>();
    const want = new SortedEntries(builtIn);
    const head = "q/default/pending/0000000000001/";
    let next = 0;
    let clone: OrderedMap<number> | undefined;
    let cloneWant: SortedEntries | undefined;
    for (let step = 0; step < 20_000; step++) {
      if (r.int(3) > 0 || want.entries.length === 0) {
        // Ids pass from 9 to 10 digits midway: later keys then sort before the earlier ones, at the front.
        const key = `${head}${String(999_990_000 + next++)}`;
        map.set(key, step);
        want.set(key, step);
      } else {
        const [key] = want.entries[0]!;
        expect(map.delete(key)).toBe(true);
        want.delete(key);
      }
      if (step === 10_000) {
        clone = map.clone();
        cloneWant = want.clone();
      }
    }
    check(r, map, want);
    check(r, clone!, cloneWant!);
  });

  it("a branch whose first key falls to a key of another prefix (its first leaf's largest keys deleted) still routes keys past that prefix", () => {
    // The first leaf holds a/00..a/19 and b/0000..b/0005; the branch above it starts at b/0005 and
    // shares b/0 with its other separators until those six are deleted.
    const keys = [
      ...Array.from({ length: 20 }, (_, i) => `a/${String(i).padStart(2, "0")}`),
      ...Array.from({ length: 1000 }, (_, i) => `b/${String(i).padStart(4, "0")}`),
    ];
    const map = OrderedMap.fromSorted(
      keys,
      keys.map((_, i) => i),
    );
    const want = new SortedEntries(builtIn);
    for (const [i, k] of keys.entries()) want.set(k, i);
    for (let i = 5; i >= 0; i--) {
      const k = `b/${String(i).padStart(4, "0")}`;
      expect(map.delete(k)).toBe(true);
      want.delete(k);
    }
    // Past a/19 and before every b/ key, but its units past "b/0" compare above theirs.
    for (const k of ["a/9zzzz", "a/2", "a/19\uffff", "a/190"]) {
      expect(map.set(k, -1)).toBe(true);
      want.set(k, -1);
    }
    check(testRandom("ordered map prefixes branch"), map, want);
  });
});
