/**
 * @module A packed leaf's search against a binary search of its keys as
 * strings: keys whose shared prefix is empty, short, as long as a step
 * pointer's or longer than one copy of it is made in (thousands of units),
 * ending in the lowest and highest units the built-in order holds; searched
 * for with every held key, the prefix itself and its neighbours, keys that
 * end inside the prefix, the least key past every key with the prefix and
 * keys around it, after keys are dropped from either end and in copies.
 */
import { describe, expect, it } from "vitest";
import { PackedKeys } from "../../runtime/engine/packed-keys.js";
import { type TestRandom, testRandom } from "../support/seed.js";

/** Where `key` is in `keys` (ascending) as `PackedKeys.find` answers: its index, or `-(i + 1)` for the first key after it. */
function expected(keys: readonly string[], key: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid]! < key) lo = mid + 1;
    else hi = mid;
  }
  return lo < keys.length && keys[lo] === key ? lo : -(lo + 1);
}

/** Units of every range: the map packs leaves under the built-in order, whichever units its keys hold. */
const UNITS = [
  "\u0000",
  "\u0001",
  "/",
  "0",
  "9",
  "a",
  "z",
  "\u007f",
  "\u0080",
  "\u00ff",
  "\u0100",
  "\u7fff",
  "\ud7fe",
  "\ud7ff",
  "\ud800",
  "\ue000",
  "\ufffe",
  "\uffff",
];

const unit = (r: TestRandom): string => UNITS[r.int(UNITS.length)]!;

/** `count` distinct keys (at least two) starting with `head`, then `tail` more units each (one to `tail` with `sameLength` false), ascending; `UNITS.length ** tail` must exceed `count`. */
function keysUnder(r: TestRandom, head: string, count: number, tail: number, sameLength: boolean): string[] {
  const set = new Set<string>();
  while (set.size < count) {
    const n = sameLength ? tail : 1 + r.int(tail);
    let k = head;
    for (let i = 0; i < n; i++) k += unit(r);
    set.add(k);
  }
  return [...set].sort();
}

/** The least string after every string starting with `s` (not empty): its last unit one higher. */
const pastOf = (s: string): string => s.slice(0, -1) + String.fromCharCode(Math.min(0xffff, s.charCodeAt(s.length - 1) + 1));

/** Keys to search for around `keys`, whose first and last share `prefix`. */
function probes(r: TestRandom, keys: readonly string[], prefix: string): string[] {
  const out = [...keys, "", prefix, `${prefix}\u0000`];
  for (const k of keys) out.push(`${k}\u0000`, k.slice(0, -1), pastOf(k));
  if (prefix.length > 0) {
    const past = pastOf(prefix);
    const below = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) - 1);
    out.push(past, `${past}\u0000`, `${past}a`, below, `${below}\uffff`, prefix.slice(0, -1), prefix.slice(0, prefix.length >> 1));
    // A unit changed inside the prefix, either way: the key sorts before or after every key held.
    for (let i = 0; i < 4; i++) {
      const at = r.int(prefix.length);
      const c = prefix.charCodeAt(at);
      for (const d of [-1, 1]) {
        if (c + d < 0 || c + d > 0xffff) continue;
        out.push(prefix.slice(0, at) + String.fromCharCode(c + d) + prefix.slice(at + 1) + unit(r));
      }
    }
  }
  for (let i = 0; i < 20; i++) {
    const k = keys[r.int(keys.length)]!;
    out.push(k.slice(0, r.int(k.length + 1)) + unit(r) + unit(r));
  }
  return out;
}

function checkAll(r: TestRandom, packed: PackedKeys, keys: readonly string[], prefix: string): void {
  expect(packed.count).toBe(keys.length);
  expect(packed.keys()).toEqual(keys);
  for (const key of probes(r, keys, prefix)) {
    const got = packed.find(key);
    if (got !== expected(keys, key)) expect({ key: JSON.stringify(key), got }).toEqual({ key: JSON.stringify(key), got: expected(keys, key) });
  }
}

describe("PackedKeys.find", () => {
  const heads: [string, string][] = [
    ["no shared prefix", ""],
    ["a one-unit prefix", "j"],
    ["a step pointer's prefix", "u/workflow/steps/workflow-steps/01M8TVYTZPV71T970000000"],
    ["a prefix ending in U+0000", "q/default/\u0000"],
    ["a prefix ending in U+D7FE", "k/\ud7fe"],
    ["a prefix ending in U+FFFF (the map's built-in order takes any unit)", "k/\uffff"],
    ["a prefix ending in U+FFFF after a unit below it", "k/a\uffff\uffff"],
    ["a prefix of U+FFFF only", "\uffff\uffff"],
    ["a prefix of 5,000 units (more than one copy's worth)", `${"p".repeat(4_999)}/`],
    ["a prefix of exactly 4,096 units", `${"x".repeat(4_095)}\u007f`],
  ];
  for (const [name, head] of heads) {
    for (const sameLength of [true, false]) {
      it(`finds every key and places every other with ${name}, keys of ${sameLength ? "one length" : "different lengths"}`, () => {
        const r = testRandom(`packed keys ${name} ${sameLength}`);
        for (let round = 0; round < 30; round++) {
          const count = 2 + r.int(40);
          // With no shared head, keys start with different units so the prefix the packing finds is empty or short.
          let keys = keysUnder(r, head, count, 2 + r.int(3), sameLength);
          const packed = PackedKeys.of(keys);
          expect(packed).not.toBeNull();
          const prefix = packed!.prefix;
          expect(keys.every((k) => k.startsWith(prefix))).toBe(true);
          expect(prefix.length).toBeGreaterThanOrEqual(head.length);
          checkAll(r, packed!, keys, prefix);
          // Dropped from either end, and copied: the prefix stays, the keys narrow.
          const copy = packed!.copy();
          const held = keys;
          while (keys.length > 1) {
            const i = r.int(2) === 0 ? 0 : keys.length - 1;
            expect(packed!.drop(i)).toBe(true);
            keys = keys.filter((_, j) => j !== i);
            if (r.int(4) === 0) checkAll(r, packed!, keys, prefix);
          }
          checkAll(r, packed!, keys, prefix);
          expect(packed!.drop(0)).toBe(false);
          checkAll(r, copy, held, prefix);
        }
      });
    }
  }

  it("finds keys of a leaf whose prefix is most of each key, as a run's step pointers are", () => {
    const r = testRandom("packed keys step pointers");
    const id = (n: number) => `01M8TVYTZPV71T97${n.toString(36).padStart(10, "0")}`;
    const keys = Array.from({ length: 32 }, (_, i) => `u/workflow/steps/workflow-steps/${id(1_000 + 3 * i)}`);
    const packed = PackedKeys.of(keys)!;
    expect(packed.prefix.length).toBeGreaterThan(50);
    checkAll(r, packed, keys, packed.prefix);
    for (let n = 990; n < 1_110; n++) {
      const key = `u/workflow/steps/workflow-steps/${id(n)}`;
      expect(packed.find(key)).toBe(expected(keys, key));
    }
  });
});
