/**
 * @module Keys that carry their family's head (key-family.ts) against the
 * search they replace (`KeyHeads.headOf`): over declared sets with nested
 * and neighbouring prefixes, families at every edge of every bound (a
 * declared prefix, a part of one, one extended, the least key past one,
 * non-ASCII units, U+FFFF last) and random ones, every key a family makes
 * is placed where the search places it, and a family the heads do not
 * split is placed with no search. A hint made for another key string is
 * not taken; a headed key is made only by its family; maps written with
 * hints, without them and through a change of heads hold the same entries
 * where a plain model does.
 */
import { describe, expect, it } from "vitest";
import { HeadedKey, hintedHead, KeyFamily } from "../../runtime/engine/key-family.js";
import { KeyHeads } from "../../runtime/engine/key-heads.js";
import { Memtable } from "../../runtime/engine/memtable.js";
import { firstDifference } from "../support/first-difference.js";
import { testRandom, type TestRandom } from "../support/seed.js";
import { DECLARED, past } from "./fixtures/declared-heads.js";

/** Families at the edges of each declared prefix, and others of every kind. */
function familiesOf(prefixes: readonly string[]): string[] {
  const out = new Set<string>(["", "\u0000", "/", "a", "u", "u/", "u/workflow/", "v", "\u007f", "\u0080", "\u00e9", "\ud800", "\uffff", "\u{1f600}"]);
  for (const p of prefixes) {
    for (let n = 1; n <= p.length; n++) out.add(p.slice(0, n));
    for (const s of [past(p), `${p}0`, `${p}q/`, `${p}\u0000`, `${p}\u007f`, `${p}\u00e9`, `${p}\uffff`, `${p.slice(0, -1)}\uffff`]) out.add(s);
  }
  return [...out];
}

const SUFFIXES = ["", "\u0000", "0", "/", "q/01J", "\u007f", "\u0080", "\ud800\udc00", "\uffff", "zzzz"];

function randomString(r: TestRandom, units: string, length: number): string {
  let s = "";
  for (let i = 0; i < length; i++) s += units[r.int(units.length)];
  return s;
}

/** Whether a declared bound (a prefix or the least key past one) longer than `family` starts with it: the heads split its keys. */
function split(prefixes: readonly string[], family: string): boolean {
  if (family.length === 0) return true;
  return prefixes.some((p) => [p, past(p)].some((b) => b.length > family.length && b.startsWith(family) && b.charCodeAt(0) === p.charCodeAt(0)));
}

describe("KeyFamily", () => {
  it("places every key a family makes where the search does, and with no search when the heads do not split the family", () => {
    const r = testRandom("key family placement");
    const sets = [...DECLARED, []];
    // Random declared sets over a few units, so prefixes nest and neighbour one another.
    for (let i = 0; i < 20; i++) {
      const n = 1 + r.int(6);
      const set = new Set<string>();
      while (set.size < n) set.add(randomString(r, "ab/u\u007f", 1 + r.int(4)));
      sets.push([...set]);
    }
    let hinted = 0;
    for (const prefixes of sets) {
      const heads = KeyHeads.of(prefixes);
      const families = familiesOf(prefixes);
      for (let i = 0; i < 30; i++) families.push(randomString(r, "ab/u\u007f\u0080", r.int(6)));
      for (const prefix of families) {
        const family = new KeyFamily(prefix);
        const given = family.headUnder(heads);
        const want = split(prefixes, prefix) ? -1 : heads.headOf(prefix);
        // Each check calls expect only on a difference: vitest's expect per key was most of the test's time.
        if (given !== want) expect(given, `family ${JSON.stringify(prefix)} under ${JSON.stringify(prefixes)}`).toBe(want);
        const suffixes = [...SUFFIXES, ...Array.from({ length: 10 }, () => randomString(r, "ab/u\u007f\u0080\uffff", r.int(5)))];
        for (const suffix of suffixes) {
          const k = family.key(suffix);
          if (k.key !== prefix + suffix) expect(k.key).toBe(prefix + suffix);
          const h = hintedHead(heads, k.key, k);
          if (h !== given) expect(h, `hint of key ${JSON.stringify(k.key)} under ${JSON.stringify(prefixes)}`).toBe(given);
          if (h >= 0) {
            hinted++;
            if (h !== heads.headOf(k.key)) expect(h, `key ${JSON.stringify(k.key)} under ${JSON.stringify(prefixes)}`).toBe(heads.headOf(k.key));
          }
        }
      }
    }
    expect(hinted).toBeGreaterThan(1000);
  });

  it("takes no hint made for another key string, and makes headed keys only through a family", () => {
    const heads = KeyHeads.of(["u/workflow/runs/", "u/workflow/steps/"]);
    const runs = new KeyFamily("u/workflow/runs/");
    const k = runs.key("q/1");
    expect(hintedHead(heads, "u/workflow/steps/q/1", k)).toBe(-1);
    expect(hintedHead(heads, "u/workflow/runs/q/2", k)).toBe(-1);
    expect(hintedHead(heads, "u/workflow/steps/q/1", undefined)).toBe(-1);
    // An equal string made again is the same key.
    expect(hintedHead(heads, ["u/workflow/runs/", "q/1"].join(""), k)).toBe(heads.headOf(k.key));
    expect(() => new HeadedKey(Symbol("headed key"), "u/workflow/steps/x", runs)).toThrow(TypeError);
    expect(() => Reflect.construct(k.constructor, [Symbol("headed key"), "x", runs])).toThrow(TypeError);
    expect(Object.isFrozen(k)).toBe(true);
    expect(() => {
      (k as { key: string }).key = "u/workflow/steps/q/1";
    }).toThrow(TypeError);

    // A map given a hint for another key places the key by the search: a plain get finds it.
    const t = new Memtable<number>(heads);
    t.set("u/workflow/steps/q/1", 1, false, k);
    expect(t.get("u/workflow/steps/q/1")).toBe(1);
    expect(t.get(k.key)).toBeUndefined();
    expect(t.delete("u/workflow/steps/q/1", k)).toBe(true);
    expect(t.size).toBe(0);
  });

  it("works a family's head out again when the heads change, and keeps the map's entries where a model has them", () => {
    const r = testRandom("key family writes");
    const setsInTurn = [[], ["u/workflow/runs/"], ["u/workflow/runs/", "u/workflow/runs/q/0"], ["u/workflow/runs/q/", "u/workflow/"], ["u/"]];
    const families = ["u/workflow/runs/", "u/workflow/runs/q/", "u/workflow/runs/q/0", "u/workflow/", "u/", "u/workflow/runs0", "v/"].map(
      (p) => new KeyFamily(p),
    );
    const model = new Map<string, number>();
    let t = new Memtable<number>(KeyHeads.NONE);
    for (let round = 0; round < 40; round++) {
      // A declaration rebuilds the table with the merged heads, as the engine's does.
      if (round % 8 === 0) t = t.withHeads(KeyHeads.of(setsInTurn[(round / 8) % setsInTurn.length]!));
      for (let i = 0; i < 200; i++) {
        const family = families[r.int(families.length)]!;
        const k = family.key(randomString(r, "0q/1\u0080", r.int(5)));
        const plain = r.int(4) === 0;
        const what = `${plain ? "plain" : "hinted"} op ${i} of round ${round} on ${JSON.stringify(k.key)}`;
        if (r.int(3) === 0) {
          const deleted = model.has(k.key);
          const got = plain ? t.delete(k.key) : t.delete(k.key, k);
          model.delete(k.key);
          if (got !== deleted) expect(got, `delete, ${what}`).toBe(deleted);
        } else {
          const v = r.int(1000);
          const added = !model.has(k.key);
          const got = plain ? t.set(k.key, v) : t.set(k.key, v, false, k);
          model.set(k.key, v);
          if (got !== added) expect(got, `set, ${what}`).toBe(added);
        }
        const want = model.get(k.key);
        if (t.get(k.key) !== want) expect(t.get(k.key), `get, ${what}`).toBe(want);
        if (t.get(k.key, k) !== want) expect(t.get(k.key, k), `hinted get, ${what}`).toBe(want);
      }
      const entries: [string, number][] = [];
      t.tree.forEachPair((key, v) => entries.push([key, v]));
      const diff = firstDifference(
        entries,
        [...model.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)),
      );
      if (diff !== undefined) expect.fail(`the map's entries after round ${round}: ${diff}`);
      for (const [key, v] of model) if (t.get(key) !== v) expect(t.get(key), `get ${JSON.stringify(key)} after round ${round}`).toBe(v);
    }
  });
});
