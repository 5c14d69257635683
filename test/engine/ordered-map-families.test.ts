/**
 * @module The ordered map under the engine's write pattern, against a
 * model: many key families written next to their last keys (appended,
 * taken from the front, overwritten) between random inserts, deletes and
 * reads; families whose heads are prefixes of one another or have one
 * first unit and length; the empty key; keys just either side of every key
 * the map holds (so of every leaf's first and last); clones written on both
 * sides; and the leaves a queue's drain and ascending deletes leave behind.
 * A write that goes straight to the leaf its family last reached (a
 * shortcut tried for the step's writes) must pass all of it.
 */
import { describe, expect, it, vi } from "vitest";
import { Memtable } from "../../runtime/engine/memtable.js";
import { OrderedMap } from "../../runtime/engine/ordered-map.js";
import { scaledForLoad } from "../support/load.js";
import { type TestRandom, testRandom } from "../support/seed.js";

vi.setConfig({ testTimeout: scaledForLoad(30_000) });

/** Heads of key families: some are prefixes of others, some have one first unit and key length (what a family guess by both would mix up). */
const HEADS = ["j/", "j/x", "c/workflow-steps/", "c/workflow-steps/a", "u/h/run1/", "u/h/run2/", "u/s/", "u/h", "n/q", "n/r", "", "q/default/0/"];

interface Writable {
  set(key: string, value: number): boolean;
  delete(key: string): boolean;
  get(key: string): number | undefined;
  readonly size: number;
}

/** The expected state: a Map, sorted when checked. */
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
  // No leaf holds more than 32 entries: a write into a full leaf splits it.
  expect(map.leafCount(), label).toBeGreaterThanOrEqual(Math.ceil(want.length / 32));
  // A search from the root finds every key: a write into a leaf its key does not belong to would be missed here.
  for (const [k, v] of want) if (map.get(k) !== v) expect.fail(`${label}: get(${JSON.stringify(k)}) is ${map.get(k)}, expected ${v}`);
}

/** The families' next numbers and oldest live numbers: appends go past a family's last key, takes from its front. */
class Families {
  readonly next: number[] = HEADS.map(() => 0);
  readonly oldest: number[] = HEADS.map(() => 0);
  key(f: number, n: number): string {
    return HEADS[f]! + n.toString().padStart(6, "0");
  }
}

/** One random operation on `map` and `model`, checked as it goes. */
function step(r: TestRandom, fam: Families, map: Writable, model: Model, value: number): void {
  const f = r.int(HEADS.length);
  const op = r.int(10);
  if (op < 3) {
    const k = fam.key(f, fam.next[f]!++);
    expect(map.set(k, value)).toBe(model.set(k, value));
  } else if (op < 5) {
    const k = fam.key(f, fam.oldest[f]!++);
    expect(map.delete(k)).toBe(model.delete(k));
  } else if (op === 5) {
    const k = fam.key(f, Math.max(0, fam.next[f]! - 1));
    expect(map.set(k, value)).toBe(model.set(k, value));
  } else if (op === 6) {
    // Anywhere in the family, present or not.
    const k = fam.key(f, r.int(fam.next[f]! + 2));
    expect(map.set(k, value)).toBe(model.set(k, value));
  } else if (op === 7) {
    const k = fam.key(f, r.int(fam.next[f]! + 2));
    expect(map.delete(k)).toBe(model.delete(k));
  } else if (op === 8) {
    const k = fam.key(f, r.int(fam.next[f]! + 2));
    expect(map.get(k)).toBe(model.entries.get(k));
  } else {
    // A head alone, the empty key, or a key that ends inside another family's head.
    const k = HEADS[f]!.slice(0, r.int(HEADS[f]!.length + 1));
    if (r.int(2) === 0) expect(map.set(k, value)).toBe(model.set(k, value));
    else expect(map.delete(k)).toBe(model.delete(k));
  }
}

describe("OrderedMap under key families written next to their last keys", () => {
  it("matches a model through seeded appends, takes from the front, overwrites, random writes, reads and clones written on both sides", () => {
    const r = testRandom("ordered-map-families: families");
    for (let round = 0; round < 3; round++) {
      const map = new OrderedMap<number>();
      const model = new Model();
      const fam = new Families();
      const clones: { map: OrderedMap<number>; model: Model; fam: Families }[] = [];
      for (let i = 0; i < 8000; i++) {
        step(r, fam, map, model, i);
        if (r.int(1500) === 0) {
          const c = { map: map.clone(), model: model.copy(), fam: new Families() };
          c.fam.next.splice(0, HEADS.length, ...fam.next);
          c.fam.oldest.splice(0, HEADS.length, ...fam.oldest);
          clones.push(c);
        }
        // The clones are written too, each next to keys the original wrote.
        for (const c of clones) if (r.int(4) === 0) step(r, c.fam, c.map, c.model, -i);
        if (i % 2000 === 1999) expectSame(map, model, `round ${round} op ${i}`);
      }
      expectSame(map, model, `round ${round} end`);
      for (const [n, c] of clones.entries()) expectSame(c.map, c.model, `round ${round} clone ${n}`);
    }
  });

  it("sets and deletes the keys just before and just after every key it holds, so each leaf's first and last", () => {
    const r = testRandom("ordered-map-families: boundaries");
    const map = new OrderedMap<number>();
    const model = new Model();
    const fam = new Families();
    for (let i = 0; i < 3000; i++) {
      const f = r.int(HEADS.length);
      const k = fam.key(f, fam.next[f]!++);
      map.set(k, i);
      model.set(k, i);
    }
    const held = [...model.entries.keys()];
    for (const [i, k] of held.entries()) {
      // Just after `k`, then `k` less its last unit (just before it, or a key of its own), then `k` over again.
      const after = `${k}\u0000`;
      const before = k.slice(0, -1);
      expect(map.set(after, i)).toBe(model.set(after, i));
      expect(map.set(before, i)).toBe(model.set(before, i));
      expect(map.set(k, -i)).toBe(model.set(k, -i));
    }
    expectSame(map, model, "after the sets either side");
    for (const k of held) {
      const after = `${k}\u0000`;
      expect(map.delete(after)).toBe(model.delete(after));
      expect(map.delete(k)).toBe(model.delete(k));
      if (r.int(3) === 0) expect(map.delete(k.slice(0, -1))).toBe(model.delete(k.slice(0, -1)));
    }
    expectSame(map, model, "after the deletes");
  });

  it("does not write a clone's entries through a leaf a write reached before the clone was taken", () => {
    const map = new OrderedMap<number>();
    for (let i = 0; i < 1000; i++) map.set(`k/${i.toString().padStart(5, "0")}`, i);
    // A write just before the clone, next to the ones after it: a shortcut to its leaf must not outlive the clone.
    map.set("k/00500", -1);
    const frozen = map.clone();
    map.set("k/00500a", 1);
    map.set("k/00500", -2);
    expect(map.delete("k/00501")).toBe(true);
    expect(frozen.get("k/00500a")).toBeUndefined();
    expect(frozen.get("k/00500")).toBe(-1);
    expect(frozen.get("k/00501")).toBe(501);
    expect(frozen.size).toBe(1000);
    // And the other way round: the clone's writes leave the original as it was.
    frozen.set("k/00600", -3);
    frozen.set("k/00600a", 2);
    expect(frozen.delete("k/00601")).toBe(true);
    expect(map.get("k/00600")).toBe(600);
    expect(map.get("k/00600a")).toBeUndefined();
    expect(map.get("k/00601")).toBe(601);
    expect(map.get("k/00500a")).toBe(1);
    expect(map.size).toBe(1000);
  });

  it("a queue's drain (appends past the family's last key, takes from its front) leaves as few leaves as searches from the root would", () => {
    const r = testRandom("ordered-map-families: drain");
    const map = new OrderedMap<number>();
    const model = new Model();
    const fam = new Families();
    const pending = HEADS.indexOf("q/default/0/");
    // A table of other families first, so the queue's family sits between others, not at the map's end.
    for (let i = 0; i < 2000; i++) {
      const f = r.int(HEADS.length);
      if (f === pending) continue;
      const k = fam.key(f, fam.next[f]!++);
      map.set(k, i);
      model.set(k, i);
    }
    for (let i = 0; i < 3000; i++) {
      const k = fam.key(pending, fam.next[pending]!++);
      map.set(k, i);
      model.set(k, i);
    }
    for (let i = 0; i < 20_000; i++) {
      const add = fam.key(pending, fam.next[pending]!++);
      map.set(add, i);
      model.set(add, i);
      for (let t = 0; t < (i < 10_000 ? 1 : 2) && fam.oldest[pending]! < fam.next[pending]!; t++) {
        const k = fam.key(pending, fam.oldest[pending]!++);
        expect(map.delete(k)).toBe(model.delete(k));
      }
    }
    expectSame(map, model, "drained");
    // A leaf below half full merges with a neighbour when both fit: about one leaf per 16 keys or better.
    expect(map.leafCount()).toBeLessThanOrEqual(Math.ceil(map.size / 16) + 2);
  });

  it("keys written one after another between two held keys split the leaf they go to when it fills", () => {
    const map = new OrderedMap<number>();
    const model = new Model();
    for (const k of ["a/", "a/~", "b/"]) {
      map.set(k, 0);
      model.set(k, 0);
    }
    // Each next key lands right after the one written before it, in the leaf the last write reached.
    for (let i = 0; i < 1000; i++) {
      const k = `a/${i.toString().padStart(4, "0")}`;
      expect(map.set(k, i)).toBe(model.set(k, i));
    }
    expectSame(map, model, "ascending between two keys");
  });

  it("deleting seven keys in eight in ascending order merges the leaves it leaves below half full", () => {
    const map = new OrderedMap<number>();
    const key = (i: number) => `q/${i.toString().padStart(6, "0")}`;
    // Inserted out of order, so the leaves hold their keys as strings and split in halves.
    const values = new Map<string, number>();
    for (let i = 0; i < 4000; i++) {
      map.set(key((i * 7919) % 4000), i);
      values.set(key((i * 7919) % 4000), i);
    }
    for (let i = 0; i < 4000; i++) if (i % 8 !== 0) expect(map.delete(key(i))).toBe(true);
    expect(map.size).toBe(500);
    // Deletes searched from the root leave 18 leaves here; each next delete lands in the leaf the last one reached, and must merge as they do.
    expect(map.leafCount()).toBeLessThanOrEqual(21);
    for (let i = 0; i < 4000; i++) expect(map.get(key(i))).toBe(i % 8 === 0 ? values.get(key(i)) : undefined);
  });

  it("a memtable keeps its entries through family writes and the switch to code point order", () => {
    const r = testRandom("ordered-map-families: memtable");
    const table = new Memtable<number>();
    const model = new Model();
    const fam = new Families();
    const view: Writable = table;
    for (let i = 0; i < 6000; i++) {
      step(r, fam, view, model, i);
      if (i === 3000) {
        // A key past U+D7FF switches the table's order mid-stream.
        expect(table.set("z\ud800", i)).toBe(model.set("z\ud800", i));
      }
    }
    expectSame(table.tree, model, "memtable");
  });
});
