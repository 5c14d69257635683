/**
 * @module The ordered map's trees split at declared key prefixes
 * (`EngineOptions.keyHeads`, key-heads.ts) against a sorted array: keys at
 * every edge of each declared family (the prefix itself, the key just
 * before it, the least key past its family and keys just either side of
 * that), prefixes that are prefixes of one another, families emptied and
 * filled again, non-ASCII and lone surrogate keys, the empty key, clones
 * written on both sides, maps built from sorted entries and a memtable's
 * switch of order; cursors from bounds in every head in both directions.
 * Then `KeyHeads` itself: heads ascend with the keys, whatever order the
 * prefixes are declared in, and the engine's check of the option.
 */
import { describe, expect, it } from "vitest";
import { KeyHeads, keyHeadsProblems } from "../../runtime/engine/key-heads.js";
import { Memtable } from "../../runtime/engine/memtable.js";
import { OrderedMap } from "../../runtime/engine/ordered-map.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { testRandom, type TestRandom } from "../support/seed.js";
import { checkAgainst, type Mapish, MODEL_ORDERS, modelWrites, plain, type Writable } from "./fixtures/ordered-map-model.js";
import { SortedEntries } from "./fixtures/sorted-entries.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { DECLARED, past } from "./fixtures/declared-heads.js";

/** Keys at and around each prefix's edges, and others of every kind. */
function stemsOf(prefixes: readonly string[]): string[] {
  const stems = new Set<string>(["", "\u0000", "/", "a", "u", "v", "\u007f", "\u0080", "\u00e9", "\ud800", "\udfff", "\ue000", "\uffff", "\u{1f600}"]);
  for (const p of prefixes) {
    const beyond = past(p);
    for (const s of [p, p.slice(0, -1), beyond, `${beyond}\u0000`, `${p}\u0000`, `${p}\u007f`, `${p}\u00e9`, `${p}\ud800`, `${p}\uffff`, `${p}\u{1f600}`])
      stems.add(s);
  }
  return [...stems];
}

function randomKey(r: TestRandom, stems: readonly string[], wide: boolean): string {
  const usable = wide ? stems : stems.filter((s) => !/[\ud800-\uffff]/.test(s));
  const stem = usable[r.int(usable.length)]!;
  return r.int(3) === 0 ? stem : `${stem}${String(r.int(60)).padStart(2, "0")}`;
}

function check(r: TestRandom, map: Mapish, model: SortedEntries, stems: readonly string[], wide: boolean, label: string): void {
  // Every stem as a bound (each edge of each head), then random ones.
  const bounds = [...stems.filter((s) => wide || !/[\ud800-\uffff]/.test(s))];
  for (let i = 0; i < 10; i++)
    bounds.push(model.entries.length > 0 && r.int(2) === 0 ? model.entries[r.int(model.entries.length)]![0] : randomKey(r, stems, wide));
  checkAgainst(map, model, bounds, label);
}

function writes(r: TestRandom, map: Writable, model: SortedEntries, count: number, stems: readonly string[], wide: boolean, deleteShare: number): void {
  modelWrites(r, map, model, count, deleteShare, () => randomKey(r, stems, wide));
}

describe("OrderedMap's trees split at declared key prefixes", () => {
  for (const [name, order, modelOrder, wide] of MODEL_ORDERS) {
    it(`matches a sorted array across families emptied and refilled, clones and sorted builds (${name})`, () => {
      const r = testRandom(`ordered map declared heads ${name}`);
      for (let round = 0; round < 8; round++) {
        const declared = DECLARED[round % DECLARED.length]!;
        const heads = KeyHeads.of(round % 2 === 0 ? declared : [...declared].reverse());
        const stems = stemsOf(declared);
        let map = new OrderedMap<number>(order, heads);
        let model = new SortedEntries(modelOrder);
        check(r, map, model, stems, wide, `round ${round}, empty`);
        for (let phase = 0; phase < 6; phase++) {
          writes(r, map, model, 400, stems, wide, [10, 30, 60, 90, 20, 95][phase]!);
          check(r, map, model, stems, wide, `round ${round}, phase ${phase}`);
          if (phase === 2) {
            const copy = map.clone();
            const copyModel = model.clone();
            writes(r, copy, copyModel, 200, stems, wide, 50);
            writes(r, map, model, 200, stems, wide, 50);
            check(r, copy, copyModel, stems, wide, `round ${round}, clone`);
            check(r, map, model, stems, wide, `round ${round}, after its clone's writes`);
          }
          if (phase === 3) {
            map = OrderedMap.fromSorted(
              model.entries.map(([k]) => k),
              model.entries.map(([, v]) => v),
              order,
              heads,
            );
            check(r, map, model, stems, wide, `round ${round}, built from sorted entries`);
          }
          if (phase === 5) {
            // Every key of one declared family deleted (its head empty), then written again.
            const p = declared[r.int(declared.length)]!;
            for (const [k] of model.entries.filter(([k]) => k.startsWith(p))) expect(map.delete(k)).toBe(model.delete(k));
            check(r, map, model, stems, wide, `round ${round}, ${JSON.stringify(p)} emptied`);
            for (let i = 0; i < 40; i++) {
              const k = `${p}${String(r.int(60)).padStart(2, "0")}`;
              expect(map.set(k, i)).toBe(model.set(k, i));
            }
            check(r, map, model, stems, wide, `round ${round}, ${JSON.stringify(p)} refilled`);
          }
        }
        // Every key deleted: every head empty, then written again.
        for (const [k] of [...model.entries]) expect(map.delete(k)).toBe(model.delete(k));
        check(r, map, model, stems, wide, `round ${round}, emptied`);
        model = new SortedEntries(modelOrder);
        map = new OrderedMap<number>(order, heads);
        writes(r, map, model, 300, stems, wide, 10);
        check(r, map, model, stems, wide, `round ${round}, refilled`);
      }
    });
  }

  it("a memtable keeps its declared heads through the switch to code point order", () => {
    const r = testRandom("memtable declared heads switch");
    const declared = DECLARED[1]!;
    const stems = stemsOf(declared);
    const table = new Memtable<number>(KeyHeads.of(declared));
    const model = new SortedEntries(compareKeys);
    // ASCII first (the built-in order), then keys with surrogates and units above them switch it.
    writes(r, table, model, 600, stems, false, 20);
    check(r, table.tree, model, stems, false, "before the switch");
    writes(r, table, model, 600, stems, true, 20);
    expect(table.heads.prefixes).toEqual([...declared].sort());
    check(r, table.tree, model, stems, true, "after the switch");
    const built = Memtable.fromSorted(
      model.entries.map(([k]) => k),
      model.entries.map(([, v]) => v),
      table.heads,
    );
    check(r, built.tree, model, stems, true, "built from sorted entries");
  });

  it("a memtable holding keys takes new heads (withHeads): same entries, later writes right, the old table and its clone as they were", {
    timeout: HEAVY_TEST_MS,
  }, () => {
    const r = testRandom("memtable heads arriving");
    for (const wide of [false, true]) {
      // Each table takes the next set: none to some, one set to another (nested, neighbours), some to a union, back to none.
      const sets: (readonly string[])[] = [[], DECLARED[0]!, DECLARED[1]!, [...DECLARED[0]!, ...DECLARED[1]!], DECLARED[2]!, DECLARED[3]!, []];
      const stems = stemsOf(sets.flat());
      let table = new Memtable<number>(KeyHeads.of(sets[0]!));
      const model = new SortedEntries(compareKeys);
      for (let i = 1; i < sets.length; i++) {
        writes(r, table, model, 300, stems, wide, 20);
        const before = table;
        const beforeModel = model.clone();
        const snapshot = before.tree.clone();
        table = before.withHeads(KeyHeads.of(sets[i]!));
        const label = `${wide ? "code point" : "built-in"} order, to ${JSON.stringify(sets[i])}`;
        expect(table.heads.prefixes, label).toEqual([...sets[i]!].sort());
        check(r, table.tree, model, stems, wide, `${label}, as taken`);
        writes(r, table, model, 300, stems, wide, 40);
        check(r, table.tree, model, stems, wide, `${label}, after writes`);
        // The old table is never written again; it and a clone of it read what they held.
        check(r, before.tree, beforeModel, stems, wide, `${label}, the table before`);
        check(r, snapshot, beforeModel, stems, wide, `${label}, a clone of the table before`);
      }
      // A table of ASCII keys still switches its order at the first key that needs it, keeping its new heads.
      if (!wide) {
        writes(r, table, model, 300, stems, true, 10);
        check(r, table.tree, model, stems, true, "switched after taking heads");
      }
    }
  });

  it("refuses sorted entries that are not ordered by their declared head", () => {
    const heads = KeyHeads.of(["u/w/"]);
    // Ascending in a reversed order: "u/w/1" is in a later head than "u/x".
    const reversed = (a: string, b: string): number => plain(b, a);
    expect(() => OrderedMap.fromSorted(["u/x", "u/w/1"], [1, 2], reversed, heads)).toThrow(RangeError);
    expect(OrderedMap.fromSorted(["u/a", "u/w/1", "u/x"], [1, 2, 3], undefined, heads).size).toBe(3);
  });
});

describe("KeyHeads", () => {
  it("merges declared prefixes: repeats and order change nothing, the set only grows", () => {
    const a = KeyHeads.of(["u/b/", "u/a/"]);
    expect(a.union(["u/a/"])).toBe(a.prefixes);
    expect(a.union([])).toBe(a.prefixes);
    expect(a.union(["u/c/", "u/b/"])).toEqual(["u/a/", "u/b/", "u/c/"]);
    expect(KeyHeads.of(KeyHeads.of(["u/c/"]).union(["u/b/", "u/a/"])).prefixes).toEqual(KeyHeads.of(a.union(["u/c/"])).prefixes);
    expect(KeyHeads.NONE.union(["x/"])).toEqual(["x/"]);
  });

  it("gives keys heads that ascend with them in both orders, whatever order the prefixes are declared in", () => {
    const r = testRandom("key heads ascend");
    for (const declared of DECLARED) {
      const stems = stemsOf(declared);
      const keys = [...new Set(Array.from({ length: 3000 }, () => randomKey(r, stems, true)).concat(stems))];
      const a = KeyHeads.of(declared);
      const b = KeyHeads.of([...declared].reverse());
      expect(b.count).toBe(a.count);
      for (const order of [plain, compareKeys]) {
        const sorted = [...keys].sort(order);
        for (let i = 1; i < sorted.length; i++) {
          expect(a.headOf(sorted[i - 1]!), `${JSON.stringify(sorted[i - 1])} then ${JSON.stringify(sorted[i])}`).toBeLessThanOrEqual(a.headOf(sorted[i]!));
        }
      }
      for (const k of keys) expect(b.headOf(k)).toBe(a.headOf(k));
      // A declared family's keys (outside the families nested in it) are in heads no other key is in.
      for (const p of declared) {
        if (p.length < 2) continue;
        const nested = declared.filter((q) => q !== p && q.startsWith(p));
        const own = new Set(keys.filter((k) => k.startsWith(p) && !nested.some((q) => k.startsWith(q))).map((k) => a.headOf(k)));
        expect(own.size, p).toBeLessThanOrEqual(nested.length + 1);
        for (const k of keys) if (!k.startsWith(p)) expect(own.has(a.headOf(k)), `${JSON.stringify(k)} in a head of ${JSON.stringify(p)}`).toBe(false);
      }
      expect(a.headOf("")).toBe(0);
    }
  });

  it("puts each key in the head a count of head starts at or before it gives, by the built-in comparison", () => {
    const r = testRandom("key heads by count");
    const sets = [...DECLARED, ["ab", "abc", "abd", "abcd/"], ["q/a/b/c/", "q/a/b/d/", "q/a/"], ["x\u007f\u007f/", "x\u007f"]];
    for (const declared of sets) {
      const heads = KeyHeads.of(declared);
      // Where each head starts, as an independent model: the empty key (unit 0's head), each other unit below 128, U+0080
      // (every other key), and each prefix of two units or more with the least key past its family, when that has its first unit.
      const starts = ["", ...Array.from({ length: 128 }, (_, u) => String.fromCharCode(u + 1))];
      for (const p of declared) if (p.length >= 2) starts.push(p, ...(past(p).charCodeAt(0) === p.charCodeAt(0) ? [past(p)] : []));
      const distinct = [...new Set(starts)];
      const model = (k: string) => distinct.filter((s) => s <= k).length - 1;
      // Every beginning of every start, each with units just below, at and above the next one, then random keys.
      const keys = new Set(stemsOf(declared));
      for (const s of starts) {
        for (let i = 0; i <= s.length; i++) {
          const head = s.slice(0, i);
          keys.add(head);
          const c = s.charCodeAt(i);
          if (i < s.length) for (const d of [c - 1, c, c + 1]) if (d >= 0) keys.add(head + String.fromCharCode(d) + (r.int(2) === 0 ? "" : "z"));
        }
      }
      for (let i = 0; i < 2000; i++) keys.add(randomKey(r, stemsOf(declared), true));
      for (const k of keys) expect(heads.headOf(k), JSON.stringify(k)).toBe(model(k));
      expect(heads.count).toBe(distinct.length);
    }
  });

  it("without declared prefixes has a head per first unit below 128 and one for every other key", () => {
    const none = KeyHeads.of([]);
    expect(none).toBe(KeyHeads.NONE);
    expect(none.count).toBe(129);
    expect(none.headOf("")).toBe(0);
    expect(none.headOf("\u0000")).toBe(0);
    expect(none.headOf("u/workflow/runs/x")).toBe(0x75);
    expect(none.headOf("\u007f")).toBe(127);
    for (const k of ["\u0080", "\u00e9", "\ud800", "\uffff", "\u{1f600}"]) expect(none.headOf(k)).toBe(128);
  });

  it("checks declared prefixes: strings, 1 to 256 ASCII units, no repeats, at most 32", () => {
    expect(keyHeadsProblems(["b/", "a/", "a/b"], "keyHeads")).toEqual([]);
    expect(keyHeadsProblems(["a/", 7, "", "x".repeat(257), "é/", "\ud800", "a/"], "keyHeads")).toEqual([
      "keyHeads[1] must be a string, got number",
      "keyHeads[2] must be 1 to 256 characters long, got 0",
      "keyHeads[3] must be 1 to 256 characters long, got 257",
      'keyHeads[4] must be ASCII (code units below 128), got "é/"',
      'keyHeads[5] must be ASCII (code units below 128), got "\\ud800"',
      'keyHeads[6] repeats the prefix "a/"',
    ]);
    expect(
      keyHeadsProblems(
        Array.from({ length: 33 }, (_, i) => `p${i}/`),
        "keyHeads",
      ),
    ).toEqual(["keyHeads may hold at most 32 prefixes, got 33"]);
  });
});
