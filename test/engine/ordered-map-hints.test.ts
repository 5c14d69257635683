/**
 * @module The ordered map's hinted writes (`setNear`, `deleteNear`) against
 * a model: seeded random inserts, deletes and reads through hints of many
 * families, interleaved with plain writes; families whose heads are
 * prefixes of one another; the empty key; keys just either side of every
 * held key (each leaf's first and last); a hint passed between families
 * and between maps; clones written on both sides with hints taken before
 * the clone; leaves merged away under a hint; packed leaves; and the
 * memtable's switch of order.
 */
import { describe, expect, it, vi } from "vitest";
import { Memtable } from "../../runtime/engine/memtable.js";
import { LeafHint, OrderedMap } from "../../runtime/engine/ordered-map.js";
import { scaledForLoad } from "../support/load.js";
import { type TestRandom, testRandom } from "../support/seed.js";

vi.setConfig({ testTimeout: scaledForLoad(30_000) });

/** Heads of key families: some are prefixes of others, one is empty, two share 50 leading characters. */
const HEADS = [
  "j/",
  "j/x",
  "c/workflow-steps/",
  "c/workflow-steps/a",
  "u/workflow/history/workflow-steps/01M8TVYTZPV71T970000000001/",
  "u/workflow/history/workflow-steps/01M8TVYTZPV71T970000000002/",
  "u/workflow/steps/",
  "u/h",
  "n/q",
  "",
  "q/default/0/",
];

interface Writable {
  set(key: string, value: number): boolean;
  setNear(key: string, value: number, hint: LeafHint): boolean;
  delete(key: string): boolean;
  deleteNear(key: string, hint: LeafHint): boolean;
  get(key: string): number | undefined;
  readonly size: number;
}

class Model {
  readonly entries = new Map<string, number>();
  set(key: string, value: number): boolean {
    const added = !this.entries.has(key);
    this.entries.set(key, value);
    return added;
  }
  delete(key: string): boolean {
    return this.entries.delete(key);
  }
  copy(): Model {
    const m = new Model();
    for (const [k, v] of this.entries) m.entries.set(k, v);
    return m;
  }
  sorted(): [string, number][] {
    return [...this.entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  }
}

function expectSame(map: OrderedMap<number>, model: Model, label: string): void {
  const want = model.sorted();
  expect(map.size, label).toBe(want.length);
  expect([...map.entries()], label).toEqual(want);
  expect([...map.entriesReversed()], label).toEqual(want.reverse());
  want.reverse();
  expect(map.leafCount(), label).toBeGreaterThanOrEqual(Math.ceil(want.length / 32));
  // A search from the root finds every key: a hinted write into a leaf the key does not belong to is missed here.
  for (const [k, v] of want) if (map.get(k) !== v) expect.fail(`${label}: get(${JSON.stringify(k)}) is ${map.get(k)}, expected ${v}`);
}

/** A family's next number and its oldest live one, and its hints (one for sets, one for deletes). */
class Families {
  readonly next: number[] = HEADS.map(() => 0);
  readonly oldest: number[] = HEADS.map(() => 0);
  readonly sets: LeafHint[] = HEADS.map(() => new LeafHint());
  readonly deletes: LeafHint[] = HEADS.map(() => new LeafHint());
  key(f: number, n: number): string {
    return HEADS[f]! + n.toString().padStart(6, "0");
  }
  copy(): Families {
    const c = new Families();
    c.next.splice(0, HEADS.length, ...this.next);
    c.oldest.splice(0, HEADS.length, ...this.oldest);
    return c;
  }
}

/** A hint for family `f`'s set: mostly its own, sometimes another family's or a fresh one. */
function setHint(r: TestRandom, fam: Families, f: number): LeafHint {
  const roll = r.int(20);
  if (roll === 0) return new LeafHint();
  if (roll === 1) return fam.sets[r.int(HEADS.length)]!;
  if (roll === 2) return fam.deletes[f]!;
  return fam.sets[f]!;
}

/** One random operation on `map` and `model`, hinted or plain, checked as it goes. */
function step(r: TestRandom, fam: Families, map: Writable, model: Model, value: number): void {
  const f = r.int(HEADS.length);
  const op = r.int(12);
  const plain = r.int(4) === 0;
  const set = (k: string) => expect(plain ? map.set(k, value) : map.setNear(k, value, setHint(r, fam, f))).toBe(model.set(k, value));
  const del = (k: string) => expect(plain ? map.delete(k) : map.deleteNear(k, fam.deletes[f]!)).toBe(model.delete(k));
  if (op < 3) set(fam.key(f, fam.next[f]!++));
  else if (op < 5) del(fam.key(f, fam.oldest[f]!++));
  else if (op === 5) set(fam.key(f, Math.max(0, fam.next[f]! - 1)));
  else if (op === 6) set(fam.key(f, r.int(fam.next[f]! + 2)));
  else if (op === 7) del(fam.key(f, r.int(fam.next[f]! + 2)));
  else if (op === 8) {
    const k = fam.key(f, r.int(fam.next[f]! + 2));
    expect(map.get(k)).toBe(model.entries.get(k));
  } else if (op === 9) {
    // Just after or just before a key the family wrote (the keys either side of a leaf's first and last).
    const k = fam.key(f, r.int(fam.next[f]! + 1));
    const near = r.int(2) === 0 ? `${k}\u0000` : k.slice(0, -1);
    if (r.int(2) === 0) set(near);
    else del(near);
  } else {
    // A head alone, the empty key, or a key that ends inside another family's head.
    const k = HEADS[f]!.slice(0, r.int(HEADS[f]!.length + 1));
    if (r.int(2) === 0) set(k);
    else del(k);
  }
}

describe("OrderedMap's hinted writes", () => {
  it("match a model through seeded hinted and plain writes of many families, reads, and clones written on both sides", () => {
    const r = testRandom("ordered-map-hints: families");
    for (let round = 0; round < 3; round++) {
      const map = new OrderedMap<number>();
      const model = new Model();
      const fam = new Families();
      const clones: { map: OrderedMap<number>; model: Model; fam: Families }[] = [];
      for (let i = 0; i < 8000; i++) {
        step(r, fam, map, model, i);
        if (r.int(1000) === 0) {
          // The clone's writer starts with the original's hints: leaves the original reached, never the clone's to write.
          const c = { map: map.clone(), model: model.copy(), fam: fam.copy() };
          c.fam.sets.splice(0, HEADS.length, ...fam.sets);
          c.fam.deletes.splice(0, HEADS.length, ...fam.deletes);
          clones.push(c);
        }
        for (const c of clones) if (r.int(4) === 0) step(r, c.fam, c.map, c.model, -i);
        if (i % 2000 === 1999) expectSame(map, model, `round ${round} op ${i}`);
      }
      expectSame(map, model, `round ${round} end`);
      for (const [n, c] of clones.entries()) expectSame(c.map, c.model, `round ${round} clone ${n}`);
    }
  });

  it("leave a clone taken after the hinted write as it was, and the original as it was after the clone's writes", () => {
    const map = new OrderedMap<number>();
    const hint = new LeafHint();
    for (let i = 0; i < 1000; i++) map.set(`k/${i.toString().padStart(5, "0")}`, i);
    map.setNear("k/00500", -1, hint);
    const frozen = map.clone();
    // The hint's leaf is the clone's too now.
    expect(map.setNear("k/00500a", 1, hint)).toBe(true);
    expect(map.setNear("k/00500", -2, hint)).toBe(false);
    expect(map.deleteNear("k/00501", hint)).toBe(true);
    expect(frozen.get("k/00500a")).toBeUndefined();
    expect(frozen.get("k/00500")).toBe(-1);
    expect(frozen.get("k/00501")).toBe(501);
    expect(frozen.size).toBe(1000);
    // The same hint passed to the clone: reached in another map, so never written through.
    expect(frozen.setNear("k/00500b", 2, hint)).toBe(true);
    expect(frozen.deleteNear("k/00502", hint)).toBe(true);
    expect(map.get("k/00500b")).toBeUndefined();
    expect(map.get("k/00502")).toBe(502);
    expect(map.get("k/00500a")).toBe(1);
    expect(map.size).toBe(1000);
    expect(frozen.size).toBe(1000);
  });

  it("do not write into a leaf a merge took out of the map", () => {
    const map = new OrderedMap<number>();
    const model = new Model();
    const key = (i: number) => `q/${i.toString().padStart(6, "0")}`;
    // Out of order, so the leaves hold strings and split in halves.
    for (let i = 0; i < 2000; i++) {
      const k = key((i * 7919) % 2000);
      map.set(k, i);
      model.set(k, i);
    }
    const hints = Array.from({ length: 2000 }, () => new LeafHint());
    // A hint into every leaf, each at its own key.
    for (let i = 0; i < 2000; i++) expect(map.setNear(key(i), -i, hints[i]!)).toBe(model.set(key(i), -i));
    // Plain deletes merge the leaves (a leaf below half full joins its left neighbour when both fit).
    for (let i = 0; i < 2000; i++) if (i % 8 !== 0) expect(map.delete(key(i))).toBe(model.delete(key(i)));
    // Each old hint writes next to its key: a leaf merged away must not take it.
    for (let i = 0; i < 2000; i += 8) {
      const k = `${key(i)}a`;
      expect(map.setNear(k, i, hints[i + 3]!)).toBe(model.set(k, i));
      expect(map.deleteNear(key(i), hints[i + 5]!)).toBe(model.delete(key(i)));
    }
    expectSame(map, model, "after the merges");
  });

  it("fill a leaf between two held keys and split it, and delete down to merges, as plain writes do", () => {
    const map = new OrderedMap<number>();
    const model = new Model();
    const set = new LeafHint();
    const del = new LeafHint();
    for (const k of ["a/", "a/~", "b/"]) {
      map.set(k, 0);
      model.set(k, 0);
    }
    for (let i = 0; i < 1000; i++) {
      const k = `a/${i.toString().padStart(4, "0")}`;
      expect(map.setNear(k, i, set)).toBe(model.set(k, i));
    }
    expectSame(map, model, "ascending between two keys");
    // Seven keys in eight taken in ascending order: the leaves must merge as deletes from the root merge them.
    for (let i = 0; i < 1000; i++) {
      const k = `a/${i.toString().padStart(4, "0")}`;
      if (i % 8 !== 0) expect(map.deleteNear(k, del)).toBe(model.delete(k));
    }
    expectSame(map, model, "after the deletes");
    expect(map.leafCount()).toBeLessThanOrEqual(Math.ceil(map.size / 16) + 2);
  });

  it("deleting seven keys in eight in ascending order through one hint merges the leaves as deletes from the root do", () => {
    const map = new OrderedMap<number>();
    const key = (i: number) => `q/${i.toString().padStart(6, "0")}`;
    // Inserted out of order, so the leaves hold their keys as strings, between half full and full.
    for (let i = 0; i < 4000; i++) map.set(key((i * 7919) % 4000), (i * 7919) % 4000);
    const hint = new LeafHint();
    for (let i = 0; i < 4000; i++) if (i % 8 !== 0) expect(map.deleteNear(key(i), hint)).toBe(true);
    expect(map.size).toBe(500);
    // Deletes from the root leave 18 leaves here; a hinted delete that took a leaf below half full would leave one per eight keys.
    expect(map.leafCount()).toBeLessThanOrEqual(21);
    for (let i = 0; i < 4000; i++) expect(map.get(key(i))).toBe(i % 8 === 0 ? i : undefined);
  });

  it("write next to keys of packed leaves (a map built from sorted keys) and at the map's ends", () => {
    const keys = Array.from({ length: 3000 }, (_, i) => `j/${i.toString().padStart(6, "0")}`);
    const map = OrderedMap.fromSorted(
      keys,
      keys.map((_, i) => i),
    );
    expect(map.packedLeafCount()).toBeGreaterThan(0);
    const model = new Model();
    for (const [i, k] of keys.entries()) model.set(k, i);
    const hint = new LeafHint();
    for (let i = 0; i < 3000; i += 7) {
      expect(map.setNear(keys[i]!, -i, hint)).toBe(model.set(keys[i]!, -i));
      expect(map.setNear(`${keys[i]!}\u0000`, i, hint)).toBe(model.set(`${keys[i]!}\u0000`, i));
      expect(map.deleteNear(keys[i + 1] ?? "j/", hint)).toBe(model.delete(keys[i + 1] ?? "j/"));
    }
    // Before the first key and past the last, through the hint the writes above left.
    for (const k of ["", "a", "j/", "z", "z/1", "z/0"]) expect(map.setNear(k, 1, hint)).toBe(model.set(k, 1));
    for (const k of ["", "z/0", "z/1", "zz"]) expect(map.deleteNear(k, hint)).toBe(model.delete(k));
    expectSame(map, model, "packed");
  });

  it("an empty map and a map of one leaf take hinted writes", () => {
    const map = new OrderedMap<number>();
    const hint = new LeafHint();
    expect(map.deleteNear("", hint)).toBe(false);
    expect(map.setNear("", 1, hint)).toBe(true);
    expect(map.setNear("", 2, hint)).toBe(false);
    expect(map.setNear("b", 3, hint)).toBe(true);
    expect(map.setNear("a", 4, hint)).toBe(true);
    expect([...map.entries()]).toEqual([
      ["", 2],
      ["a", 4],
      ["b", 3],
    ]);
    expect(map.deleteNear("a", hint)).toBe(true);
    expect(map.deleteNear("a", hint)).toBe(false);
    expect(map.deleteNear("", hint)).toBe(true);
    expect(map.deleteNear("b", hint)).toBe(true);
    expect(map.size).toBe(0);
    expect([...map.entries()]).toEqual([]);
  });

  it("a memtable keeps its entries through hinted writes and the switch to code point order", () => {
    const r = testRandom("ordered-map-hints: memtable");
    const table = new Memtable<number>();
    const model = new Model();
    const fam = new Families();
    for (let i = 0; i < 6000; i++) {
      step(r, fam, table, model, i);
      // A key past U+D7FF switches the table's order mid-stream; the hints held stay with the old tree.
      if (i === 3000) expect(table.setNear("z\ud800", i, fam.sets[0]!)).toBe(model.set("z\ud800", i));
    }
    expectSame(table.tree, model, "memtable");
  });
});
