/**
 * @module The memtable's shortcut for a key past every key, at its edges:
 * appends then keys anywhere, deletes of the last key before the next
 * append, a key equal to the last, keys that are prefixes of the last (and
 * the last extended), keys whose order in UTF-16 and in code points differ,
 * and a freeze (a clone of the tree) between them that must not change.
 * Every read and scan is compared with a plain sorted model.
 */
import { describe, expect, it } from "vitest";
import { Memtable } from "../../runtime/engine/memtable.js";
import type { OrderedMap } from "../../runtime/engine/ordered-map.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import { testRandom, type TestRandom } from "../support/seed.js";

/** The memtable's entries as a sorted array in `compareKeys` order. */
class SortedModel {
  constructor(public entries: [string, number][] = []) {}
  #at(key: string): number {
    let lo = 0;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (compareKeys(this.entries[mid]![0], key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
  get(key: string): number | undefined {
    const e = this.entries[this.#at(key)];
    return e !== undefined && e[0] === key ? e[1] : undefined;
  }
  set(key: string, value: number): boolean {
    const i = this.#at(key);
    if (this.entries[i]?.[0] === key) {
      this.entries[i] = [key, value];
      return false;
    }
    this.entries.splice(i, 0, [key, value]);
    return true;
  }
  delete(key: string): boolean {
    const i = this.#at(key);
    if (this.entries[i]?.[0] !== key) return false;
    this.entries.splice(i, 1);
    return true;
  }
  last(): string | undefined {
    return this.entries[this.entries.length - 1]?.[0];
  }
  from(lo: string): [string, number][] {
    return this.entries.slice(this.#at(lo));
  }
  downFrom(hi: string): [string, number][] {
    const i = this.#at(hi);
    return this.entries.slice(0, this.entries[i]?.[0] === hi ? i + 1 : i).reverse();
  }
  copy(): SortedModel {
    return new SortedModel([...this.entries]);
  }
}

/** The first place `actual` and `expected` part, or undefined when they list the same entries. */
function firstDifference(actual: Iterable<[string, number]>, expected: [string, number][]): string | undefined {
  let i = 0;
  for (const [k, v] of actual) {
    const e = expected[i];
    if (e === undefined || e[0] !== k || e[1] !== v) return `at ${i}: ${JSON.stringify([k, v])}, expected ${JSON.stringify(e)}`;
    i++;
  }
  return i === expected.length ? undefined : `ended at ${i} of ${expected.length}`;
}

/** Every entry, point reads of held and absent keys, and scans both ways from bounds held and not. */
function compare(r: TestRandom, what: string, tree: OrderedMap<number>, model: SortedModel, probes: readonly string[]): void {
  expect(tree.size, `${what}: size`).toBe(model.entries.length);
  const all = firstDifference(tree.entries(), model.entries);
  if (all !== undefined) expect.fail(`${what}: entries ${all}`);
  // Point reads of the model from a map: a search of the sorted array per probe was most of the file's time.
  const held = new Map(model.entries);
  for (const probe of probes) {
    if (tree.get(probe) !== held.get(probe)) expect(tree.get(probe), `${what}: get ${JSON.stringify(probe)}`).toBe(held.get(probe));
  }
  for (let i = 0; i < 6; i++) {
    const bound = i < 3 && model.entries.length > 0 ? model.entries[r.int(model.entries.length)]![0] : probes[r.int(probes.length)]!;
    const up = firstDifference(tree.entries(bound), model.from(bound));
    if (up !== undefined) expect.fail(`${what}: entries from ${JSON.stringify(bound)} ${up}`);
    const down = firstDifference(tree.entriesReversed(bound), model.downFrom(bound));
    if (down !== undefined) expect.fail(`${what}: entries down from ${JSON.stringify(bound)} ${down}`);
  }
}

/** Appending keys: one family whose counter rises, as a queue's pending keys do. */
const appended = (c: number) => `p/q/${String(c).padStart(7, "0")}`;

/** Tails that order differently in UTF-16 and in code points (the memtable switches its order on the first). */
const WIDE_TAILS = ["\uffff", "\u{1f600}", "\ue000", "\ud7ff"];

describe("the memtable's append past the last key", () => {
  for (const wide of [false, true]) {
    it(`matches a sorted model through appends, keys anywhere, deletes of the last, the last again, its prefixes and extensions, and freezes between (${wide ? "keys past U+D7FF" : "ASCII keys"})`, {
      timeout: HEAVY_TEST_MS,
    }, () => {
      const r = testRandom(`memtable append edges ${wide}`);
      const table = new Memtable<number>();
      const model = new SortedModel();
      const frozen: { tree: OrderedMap<number>; model: SortedModel }[] = [];
      const probes = new Set<string>(["", "p/", "p/q/", "p/q/\uffff", "p/q/\u{1f600}", "z"]);
      const set = (key: string, value: number) => {
        probes.add(key);
        const got = table.set(key, value);
        const want = model.set(key, value);
        if (got !== want) expect(got, `set ${JSON.stringify(key)}`).toBe(want);
      };
      const del = (key: string) => {
        const got = table.delete(key);
        const want = model.delete(key);
        if (got !== want) expect(got, `delete ${JSON.stringify(key)}`).toBe(want);
      };
      let c = 0;
      for (let op = 0; op < 12_000; op++) {
        const last = model.last();
        const pick = r.int(100);
        if (pick < 55 || last === undefined) set(appended(++c), op);
        else if (pick < 63) {
          // Random keys anywhere, before and among the appended family.
          set(r.int(2) === 0 ? `a/${r.int(5000)}` : appended(r.int(c + 1)), op);
        } else if (pick < 70) {
          // The last key deleted, then appends go on past the key before it.
          del(last);
        } else if (pick < 76) set(last, -op);
        else if (pick < 81) {
          // A prefix of the last: it sorts before the last, maybe before keys of the family too.
          set(last.slice(0, 1 + r.int(last.length - 1)), op);
        } else if (pick < 86) {
          // The last extended: past it by one unit or more.
          const tail = wide && r.int(3) === 0 ? WIDE_TAILS[r.int(WIDE_TAILS.length)]! : ["\u0000", "0", "~", "00"][r.int(4)]!;
          set(`${last}${tail}`, op);
        } else if (pick < 90) {
          // Deletes from the front, as a queue takes its oldest.
          const first = model.entries[0];
          if (first !== undefined) del(first[0]);
        } else if (pick < 92) del(appended(r.int(c + 2)));
        else if (pick < 93) {
          // A freeze: the tree as it is now must stay so while the table is written on.
          frozen.push({ tree: table.tree.clone(), model: model.copy() });
        } else if (pick < 95 && wide) set(`p/q/${String(c).padStart(7, "0")}${WIDE_TAILS[r.int(WIDE_TAILS.length)]!}`, op);
        else set(appended(++c), op);
        if (op % 1500 === 1499) compare(r, `after ${op + 1} writes`, table.tree, model, [...probes]);
      }
      compare(r, "at the end", table.tree, model, [...probes]);
      expect(frozen.length).toBeGreaterThan(0);
      for (const [i, f] of frozen.entries()) compare(r, `freeze ${i}`, f.tree, f.model, [...probes]);
      // A frozen tree written on afterwards (a clone taken from it) leaves the table as it was.
      const before = model.copy();
      const after = frozen[frozen.length - 1]!;
      const written = after.tree.clone();
      for (let i = 0; i < 200; i++) written.set(appended(c + 1 + i), i);
      compare(r, "the table after its freeze's clone was written", table.tree, before, [...probes]);
    });
  }

  it("deletes every key from the end, then appends past a key that was deleted: the map stays in order", () => {
    const table = new Memtable<number>();
    const model = new SortedModel();
    for (let c = 0; c < 2000; c++) {
      table.set(appended(c), c);
      model.set(appended(c), c);
    }
    // Down to a few keys from the end, so the right edge's largest keys go down step by step.
    for (let c = 1999; c >= 3; c--) {
      expect(table.delete(appended(c))).toBe(true);
      model.delete(appended(c));
    }
    // Keys below every deleted one but past the last held one, then the deleted ones again.
    for (let c = 0; c < 2000; c++) {
      const key = `${appended(2)}${String(c).padStart(4, "0")}`;
      table.set(key, -c);
      model.set(key, -c);
    }
    for (let c = 3; c < 500; c++) {
      table.set(appended(c), c);
      model.set(appended(c), c);
    }
    const r = testRandom("memtable deletes from the end");
    compare(r, "after deletes from the end and appends", table.tree, model, [appended(2), appended(3), appended(499), appended(1999), "p/q/"]);
  });
});
