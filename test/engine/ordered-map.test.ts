/**
 * @module The memtable's ordered map against a sorted array model: random
 * sets, overwrites and deletes (down to empty and back), clones written on
 * both sides afterwards, iteration from arbitrary bounds in both
 * directions, maps built from sorted entries, in the built-in order and
 * under `compareKeys`. Sizes reach three levels of nodes, so splits,
 * merges and root changes all happen.
 */
import { describe, expect, it } from "vitest";
import { type KeyOrder, OrderedMap } from "../../runtime/engine/ordered-map.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { keysOf, nextHigherKey } from "../support/ordered-map-keys.js";
import { testRandom, type TestRandom } from "../support/seed.js";

/** A map as a sorted array of entries: obviously right, slow. */
class Model {
  entries: [string, number][] = [];
  constructor(readonly order: (a: string, b: string) => number) {}
  /** The first index whose key is at or after `key` (-1 when none). */
  #find(key: string): number {
    let lo = 0;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.order(this.entries[mid]![0], key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo === this.entries.length ? -1 : lo;
  }
  get(key: string): number | undefined {
    const i = this.#find(key);
    return i >= 0 && this.entries[i]![0] === key ? this.entries[i]![1] : undefined;
  }
  set(key: string, value: number): boolean {
    const i = this.#find(key);
    if (i >= 0 && this.entries[i]![0] === key) {
      this.entries[i]![1] = value;
      return false;
    }
    this.entries.splice(i < 0 ? this.entries.length : i, 0, [key, value]);
    return true;
  }
  delete(key: string): boolean {
    const i = this.#find(key);
    if (i < 0 || this.entries[i]![0] !== key) return false;
    this.entries.splice(i, 1);
    return true;
  }
  from(lo: string | undefined): [string, number][] {
    if (lo === undefined) return this.entries;
    const i = this.#find(lo);
    return i < 0 ? [] : this.entries.slice(i);
  }
  downFrom(hi: string | undefined): [string, number][] {
    if (hi === undefined) return [...this.entries].reverse();
    let i = this.#find(hi);
    if (i < 0) i = this.entries.length;
    else if (this.entries[i]![0] === hi) i++;
    return this.entries.slice(0, i).reverse();
  }
  clone(): Model {
    const m = new Model(this.order);
    m.entries = this.entries.map(([k, v]) => [k, v]);
    return m;
  }
}

const plain = (a: string, b: string): number => (a === b ? 0 : a < b ? -1 : 1);

/** Keys sharing queue-like prefixes; `wide` adds the characters where UTF-16 order and code point order differ. */
function randomKey(r: TestRandom, space: number, wide: boolean): string {
  const n = r.int(space);
  const tail = wide && r.int(4) === 0 ? ["\u{1f600}", "\uffff", "\ue000", "\u00e9"][r.int(4)]! : "";
  return `${["j/", "u/run/", "c/s/"][n % 3]}${String(Math.floor(n / 3)).padStart(5, "0")}${tail}`;
}

/**
 * Fails unless `actual` lists the entries of `expected`, naming the first that differs (a deep
 * `toEqual` of thousands of pairs costs more than the rest of the test together).
 */
function same(actual: Iterable<[string, number]>, expected: readonly [string, number][]): void {
  const got = [...actual];
  const at = got.findIndex(([k, v], i) => i >= expected.length || expected[i]![0] !== k || expected[i]![1] !== v);
  if (at >= 0 || got.length !== expected.length) {
    const i = at >= 0 ? at : got.length;
    expect(got[i], `entry ${i} of ${got.length} (expected ${expected.length})`).toEqual(expected[i]);
  }
}

/** Checks every read of `map` against `model`, iteration from random bounds both ways included; probes from `keyOf` when given. */
function check(r: TestRandom, map: OrderedMap<number>, model: Model, space: number, wide: boolean, keyOf?: (c: number) => string): void {
  expect(map.size).toBe(model.entries.length);
  same(map.entries(), model.entries);
  same(map.entriesReversed(), model.downFrom(undefined));
  const seen: [string, number][] = [];
  map.forEachPair((k, v) => seen.push([k, v]));
  same(seen, model.entries);
  for (let i = 0; i < 6; i++) {
    const absent = keyOf === undefined ? randomKey(r, space, wide) : keyOf(r.int(space + 1));
    const probe = r.int(3) === 0 && model.entries.length > 0 ? model.entries[r.int(model.entries.length)]![0] : absent;
    expect(map.get(probe)).toBe(model.get(probe));
    same(map.entries(probe), model.from(probe));
    same(map.entriesReversed(probe), model.downFrom(probe));
  }
}

/**
 * `key` set to `value` in `map` and `model` alike; fails when they answer
 * differently (`expect` only on a mismatch: one per operation would cost
 * more than the map and the model).
 */
function setBoth(map: OrderedMap<number>, model: Model, key: string, value: number): void {
  const got = map.set(key, value);
  const want = model.set(key, value);
  if (got !== want) expect(got, `set ${key}`).toBe(want);
}

/** `key` deleted from `map` and `model` alike; fails when they answer differently. */
function deleteBoth(map: OrderedMap<number>, model: Model, key: string): void {
  const got = map.delete(key);
  const want = model.delete(key);
  if (got !== want) expect(got, `delete ${key}`).toBe(want);
}

/** Random writes to `map` and `model` alike. */
function writes(r: TestRandom, map: OrderedMap<number>, model: Model, count: number, space: number, wide: boolean, deleteShare: number): void {
  for (let i = 0; i < count; i++) {
    const key = randomKey(r, space, wide);
    if (r.int(100) < deleteShare) deleteBoth(map, model, key);
    else setBoth(map, model, key, r.int(1_000_000));
  }
}

/** Key families for the packed leaves: each key is ascending in its counter `c`, so runs of rising counters append past every key. */
const FAMILIES: Record<string, (c: number, r: TestRandom) => string> = {
  // One length, as job keys: the packed form without offsets.
  "one length": (c) => `j/jobs/${String(c).padStart(16, "0")}`,
  // Tails of 0-5 units after the counter: the packed form with offsets.
  "different lengths": (c, r) => `q/${String(c).padStart(7, "0")}${["", "a", "zz", "~", "é", "b0c1d"][r.int(6)]!}`,
  // Units up to U+D7FF (the map stays in the built-in order), one and two bytes a unit in V8.
  "non-ASCII": (c, r) => `é/中/${String(c).padStart(6, "0")}${["", "Ω", "\u00ff", "\ud7ff", "x中"][r.int(5)]!}`,
  // The first unit changes every 8 counters (up into two-byte units): leaves whose keys share no prefix.
  "no shared prefix": (c, r) => `${String.fromCharCode(0x30 + (c >> 3))}${c & 7}${r.int(3) === 0 ? "." : ""}`,
};

/** Keys from `family` with rising counters from `from`: ascending inserts (the form that packs leaves) and overwrites of the last. */
function ascendingRun(r: TestRandom, map: OrderedMap<number>, model: Model, key: (c: number) => string, from: number, count: number): number {
  let c = from;
  for (let i = 0; i < count; i++) {
    c += 1 + r.int(3);
    setBoth(map, model, key(c), r.int(1_000_000));
  }
  return c;
}

/** Random inserts between held keys, overwrites of held keys, and deletes (random and from the front): into leaves of either form. */
function scattered(r: TestRandom, map: OrderedMap<number>, model: Model, key: (c: number) => string, top: number, count: number, deleteShare: number): void {
  for (let i = 0; i < count; i++) {
    const held = model.entries.length > 0 && r.int(2) === 0 ? model.entries[r.int(model.entries.length)]![0] : undefined;
    const k = r.int(10) === 0 && model.entries.length > 0 ? model.entries[0]![0] : (held ?? key(r.int(top + 1)));
    if (r.int(100) < deleteShare) deleteBoth(map, model, k);
    else setBoth(map, model, k, r.int(1_000_000));
  }
}

/** Deletes `count` held keys downward from a random one: a leaf emptied from its end merges with the one before it, packed or not. */
function descendingDeletes(r: TestRandom, map: OrderedMap<number>, model: Model, count: number): void {
  if (model.entries.length === 0) return;
  const from = r.int(model.entries.length);
  const keys = model.entries.slice(Math.max(0, from - count), from + 1).map(([k]) => k);
  for (let i = keys.length - 1; i >= 0; i--) {
    const k = keys[i]!;
    if (!map.delete(k)) expect.fail(`${k} was not deleted`);
    model.delete(k);
  }
}

describe("OrderedMap", () => {
  for (const [family, key] of Object.entries(FAMILIES)) {
    it(`matches a sorted array with leaves packed and not: ascending runs, bulk loads, inserts, deletes, overwrites, clones and cursors across them (${family})`, () => {
      const r = testRandom(`ordered map packed ${family}`);
      const keyOf = (c: number) => key(c, r);
      let everPacked = 0;
      let everMixed = 0;
      for (let round = 0; round < 6; round++) {
        let map = new OrderedMap<number>();
        let m = new Model(plain);
        let top = ascendingRun(r, map, m, keyOf, 0, [200, 1500, 4000][round % 3]!);
        check(r, map, m, top, false, keyOf);
        for (let phase = 0; phase < 5; phase++) {
          if (round % 2 === 1 && phase === 1) {
            // A held table as a freeze builds it: every leaf packed.
            const kept = m.entries.filter(() => r.int(4) !== 0);
            map = OrderedMap.fromSorted(
              kept.map(([k]) => k),
              kept.map(([, v]) => v),
            );
            m.entries = kept.map(([k, v]) => [k, v]);
            expect(map.packedLeafCount()).toBe(map.leafCount());
            descendingDeletes(r, map, m, 20 + r.int(40));
          }
          // A cursor part-way through, then a clone written with scattered writes and appends: the
          // cursor (over the original's leaves, packed ones among them) still yields what it held.
          const reversed = r.int(2) === 0;
          const bound = m.entries.length > 0 && r.int(4) !== 0 ? m.entries[r.int(m.entries.length)]![0] : r.int(2) === 0 ? keyOf(r.int(top + 1)) : undefined;
          const wanted = (reversed ? m.downFrom(bound) : m.from(bound)).map(([k, v]): [string, number] => [k, v]);
          const cursor = reversed ? map.entriesReversed(bound) : map.entries(bound);
          const first = cursor.next();
          const copy = map.clone();
          const copyModel = m.clone();
          scattered(r, copy, copyModel, keyOf, top, 300, [10, 50, 30, 70, 20][phase]!);
          const packed = map.packedLeafCount();
          everPacked += packed;
          everMixed += packed > 0 && packed < map.leafCount() ? 1 : 0;
          top = ascendingRun(r, copy, copyModel, keyOf, top, 100 + r.int(200));
          same(first.done ? [] : [first.value, ...cursor], wanted);
          check(r, map, m, top, false, keyOf);
          check(r, copy, copyModel, top, false, keyOf);
          // The original written too: its packed leaves are copied or unpacked, the clone's stay.
          scattered(r, map, m, keyOf, top, 200, 40);
          check(r, map, m, top, false, keyOf);
          check(r, copy, copyModel, top, false, keyOf);
          if (r.int(2) === 0) {
            map = copy;
            m = copyModel;
          }
        }
        // Drained from the front as a queue takes its oldest: packed leaves unpacked one by one, merged.
        const keys = m.entries.map(([k]) => k);
        const before = map.clone();
        const beforeModel = m.clone();
        for (const k of keys) if (!map.delete(k)) expect.fail(`${k} was not deleted`);
        m.entries = [];
        check(r, map, m, top, false, keyOf);
        check(r, before, beforeModel, top, false, keyOf);
      }
      // Both forms were met, in the same map.
      expect(everPacked).toBeGreaterThan(0);
      expect(everMixed).toBeGreaterThan(0);
    });
  }

  for (const [name, order, model, wide] of [
    ["the built-in order", undefined, plain, false],
    ["compareKeys", compareKeys, compareKeys, true],
  ] as [string, KeyOrder, (a: string, b: string) => number, boolean][]) {
    it(`matches a sorted array through sets, deletes to empty, clones written on both sides and bulk loads (${name})`, () => {
      const r = testRandom(`ordered map ${name}`);
      for (let round = 0; round < 9; round++) {
        const space = [60, 600, 2400][round % 3]!;
        let map = new OrderedMap<number>(order);
        let m = new Model(model);
        if (round % 4 === 1) {
          writes(r, map, m, space, space, wide, 0);
          const keys = m.entries.map(([k]) => k);
          map = OrderedMap.fromSorted(
            keys,
            m.entries.map(([, v]) => v),
            order,
          );
        }
        for (let phase = 0; phase < 4; phase++) {
          writes(r, map, m, space, space, wide, [20, 50, 35, 80][phase]!);
          check(r, map, m, space, wide);
          // A clone, then writes on both sides: neither sees the other's.
          const copy = map.clone();
          const copyModel = m.clone();
          writes(r, map, m, space >> 1, space, wide, 40);
          writes(r, copy, copyModel, space >> 1, space, wide, 40);
          check(r, map, m, space, wide);
          check(r, copy, copyModel, space, wide);
          if (r.int(2) === 0) {
            map = copy;
            m = copyModel;
          }
        }
        // Everything deleted, in random order or from the front as a queue drains (nodes the
        // clone shares merge into ones it does not), then written again.
        const keys = m.entries.map(([k]) => k);
        const before = map.clone();
        const beforeModel = m.clone();
        for (let i = round % 2 === 0 ? keys.length - 1 : 0; i > 0; i--) {
          const j = r.int(i + 1);
          [keys[i], keys[j]] = [keys[j]!, keys[i]!];
        }
        for (const k of keys) if (!map.delete(k)) expect.fail(`${k} was not deleted`);
        m.entries = [];
        check(r, map, m, space, wide);
        expect(map.delete(keys[0] ?? "x")).toBe(false);
        writes(r, map, m, 50, space, wide, 10);
        check(r, map, m, space, wide);
        check(r, before, beforeModel, space, wide);
      }
    });
  }

  it("packs keys that are prefixes of each other and an empty key, and leaves keys too long to address as strings", () => {
    const check = (keys: string[], probes: string[]): OrderedMap<number> => {
      const map = new OrderedMap<number>();
      const model = new Model(plain);
      for (const [i, k] of keys.entries()) {
        map.set(k, i);
        model.set(k, i);
      }
      same(map.entries(), model.entries);
      for (const p of probes) {
        expect(map.get(p), p.slice(0, 20)).toBe(model.get(p));
        same(map.entries(p), model.from(p));
        same(map.entriesReversed(p), model.downFrom(p));
      }
      return map;
    };
    // "", "a", "aa", ... : each key a prefix of the next; the first leaf shares the empty prefix.
    const nested = Array.from({ length: 100 }, (_, i) => "a".repeat(i));
    const map = check(nested, ["", "a", "a".repeat(50), `${"a".repeat(50)}b`, "b", "`", "a".repeat(200)]);
    expect(map.packedLeafCount()).toBeGreaterThan(0);
    // 40 keys of 3,000 units past their shared prefix: more than one leaf's offsets can address (one
    // first character, so they share one tree).
    const long = Array.from({ length: 40 }, (_, i) => `k${String(i).padStart(2, "0")}${"x".repeat(2999 + (i % 2))}`);
    const longMap = check(long, [long[5]!, `${long[5]!}x`, long[5]!.slice(0, 100), "", "zz"]);
    expect(longMap.packedLeafCount()).toBe(0);
    expect(longMap.leafCount()).toBe(2);
  });

  it("sets a key it holds again in place: false, the same size, the new value, the same order", () => {
    const map = new OrderedMap<number>();
    for (let i = 0; i < 200; i++) map.set(`k/${String(i).padStart(3, "0")}`, i);
    // An equal string made again, as a checkpoint decodes its keys.
    expect(map.set(Buffer.from("k/000").toString(), 7)).toBe(false);
    expect(map.size).toBe(200);
    expect(map.get("k/000")).toBe(7);
    expect(keysOf(map)[0]).toBe("k/000");
    expect(keysOf(map)[1]).toBe("k/001");
  });

  it("keys set in ascending order fill the nodes they leave behind, and every key still reads and iterates in order", () => {
    const map = new OrderedMap<number>();
    const keys = Array.from({ length: 10_000 }, (_, i) => `j/${String(i).padStart(6, "0")}`);
    for (const [i, k] of keys.entries()) map.set(k, i);
    // Full nodes of 32 entries (an even split leaves them with 16 or 17: about 600 leaves).
    expect(map.leafCount()).toBeLessThanOrEqual(Math.ceil(10_000 / 32) + 1);
    expect(keysOf(map)).toEqual(keys);
    expect(keys.every((k, i) => map.get(k) === i)).toBe(true);
    // Inserts between them and deletes still work on the full nodes.
    for (let i = 0; i < 10_000; i += 7) map.set(`${keys[i]!}a`, -i);
    for (let i = 0; i < 10_000; i += 3) map.delete(keys[i]!);
    const model = new Map<string, number>();
    keys.forEach((k, i) => {
      if (i % 3 !== 0) model.set(k, i);
      if (i % 7 === 0) model.set(`${k}a`, -i);
    });
    const sorted = [...model.keys()].sort();
    expect(keysOf(map)).toEqual(sorted);
    expect(sorted.every((k) => map.get(k) === model.get(k))).toBe(true);
  });

  it("builds from sorted entries and refuses keys out of order or a count mismatch, in its order", () => {
    expect(() => OrderedMap.fromSorted(["b", "a"], [1, 2])).toThrow(RangeError);
    expect(() => OrderedMap.fromSorted(["a", "a"], [1, 2])).toThrow(/strictly ascending at index 1/);
    expect(() => OrderedMap.fromSorted(["a"], [1, 2])).toThrow(/1 keys but 2 values/);
    // U+FFFF is before an astral character in the built-in order, after it in code point order.
    expect(() => OrderedMap.fromSorted(["\u{1f600}", "\uffff"], [1, 2], compareKeys)).toThrow(RangeError);
    expect(() => OrderedMap.fromSorted(["\uffff", "\u{1f600}"], [1, 2])).toThrow(RangeError);
    const keys = Array.from({ length: 2000 }, (_, i) => `k/${String(i).padStart(4, "0")}`);
    const map = OrderedMap.fromSorted(
      keys,
      keys.map((_, i) => i),
    );
    expect(map.size).toBe(2000);
    expect(keysOf(map)).toEqual(keys);
    expect(nextHigherKey(map, "k/0999")).toBe("k/1000");
    expect(nextHigherKey(map, "k/1999")).toBeUndefined();
    expect(OrderedMap.fromSorted([], []).size).toBe(0);
  });

  for (const [name, order] of [
    ["the built-in order", undefined],
    ["compareKeys", compareKeys],
  ] as const) {
    it(`appends keys past its last one as a fill's batches do, with clones written on both sides and deletes between, no leaf past 32 entries (${name})`, () => {
      const r = testRandom(`ordered map appends ${name}`);
      const model = new Model(order ?? plain);
      let map = new OrderedMap<number>(order);
      // Two families whose counters rise in step, the second sorting after every key of the first.
      const record = (c: number) => `j/${String(c).padStart(8, "0")}`;
      const pending = (c: number) => `p/jobs/0000001000/${String(c).padStart(8, "0")}`;
      let clone: { map: OrderedMap<number>; model: Model } | undefined;
      for (let c = 0; c < 6000; c++) {
        setBoth(map, model, record(c), c);
        setBoth(map, model, pending(c), -c);
        // Overwrites of the last key appended and of an earlier one: nothing new, the size stays.
        if (r.int(5) === 0) setBoth(map, model, pending(c), c);
        if (r.int(9) === 0) setBoth(map, model, pending(r.int(c + 1)), 7);
        if (r.int(11) === 0) deleteBoth(map, model, pending(r.int(c + 1)));
        // A key past every one, then taken away: the right edge's largest keys go back down.
        if (r.int(13) === 0) {
          setBoth(map, model, `z/${c}`, c);
          deleteBoth(map, model, `z/${c}`);
        }
        if (r.int(400) === 0) {
          if (clone !== undefined) check(r, clone.map, clone.model, 6000, false, pending);
          clone = { map: map.clone(), model: model.clone() };
          // The copy goes on as the map: both sides are written from here.
          if (r.int(2) === 0) [map, clone.map] = [clone.map, map];
        }
        if (clone !== undefined && r.int(3) === 0) setBoth(clone.map, clone.model, pending(6000 + c), c);
      }
      check(r, map, model, 6000, false, pending);
      if (clone !== undefined) check(r, clone.map, clone.model, 12_000, false, pending);
      for (const [k, v] of model.entries) if (map.get(k) !== v) expect(map.get(k), k).toBe(v);
      // Appends alone: a full last leaf splits as any leaf does, so no leaf holds more than 32.
      const appended = new OrderedMap<number>(order);
      for (let c = 0; c < 3200; c++) appended.set(pending(c), c);
      expect(appended.leafCount()).toBeGreaterThanOrEqual(100);
      expect(keysOf(appended)).toEqual(Array.from({ length: 3200 }, (_, c) => pending(c)));
    });
  }
});
