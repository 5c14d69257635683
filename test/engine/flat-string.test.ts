/**
 * @module Flat copies of strings (flat-string.ts) against the strings they
 * copy: made by `+`, by `slice` and by templates, empty, one unit, around
 * the 4,096 units one copy is made in, with units of every range (U+0000,
 * surrogates, U+FFFE); a head of them with its last unit raised against
 * the same made by `slice` and `String.fromCharCode`.
 */
import { describe, expect, it } from "vitest";
import { flatHead, flatString } from "../../runtime/engine/flat-string.js";
import { KeyFamily } from "../../runtime/engine/key-family.js";
import { KeyHeads } from "../../runtime/engine/key-heads.js";
import { Memtable } from "../../runtime/engine/memtable.js";
import { testRandom } from "../support/seed.js";

const UNITS = ["\u0000", "/", "0", "a", "\u007f", "\u0080", "\u00ff", "\u0100", "\ud7ff", "\ud800", "\udfff", "\ue000", "\ufffe"];

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 128) return false;
  return true;
}

function randomString(n: number, pick: (k: number) => number): string {
  let s = "";
  for (let i = 0; i < n; i++) s += UNITS[pick(UNITS.length)]!;
  return s;
}

describe("flatString", () => {
  it("copies strings of every length and shape unit for unit", () => {
    const r = testRandom("flat-string copies");
    for (const n of [0, 1, 2, 12, 13, 56, 4095, 4096, 4097, 8192, 9000]) {
      const s = randomString(n, (k) => r.int(k));
      expect(flatString(s)).toBe(s);
      expect(flatString(`u/workflow/${s}`)).toBe(`u/workflow/${s}`);
      if (n > 2) expect(flatString(s.slice(1, -1))).toBe(s.slice(1, -1));
    }
  });
});

describe("flatHead", () => {
  it("takes the first units and raises the last one by what is asked", () => {
    const r = testRandom("flat-string heads");
    for (const n of [1, 2, 13, 57, 4095, 4096, 4097, 8193]) {
      const s = `${randomString(n, (k) => r.int(k))}tail`;
      expect(flatHead(s, n, 0)).toBe(s.slice(0, n));
      for (const raise of [1, 2]) {
        const want = s.slice(0, n - 1) + String.fromCharCode(s.charCodeAt(n - 1) + raise);
        expect(flatHead(s, n, raise)).toBe(want);
      }
    }
  });

  it("is empty for no units", () => {
    expect(flatHead("abc", 0, 1)).toBe("");
  });
});

describe("a memtable with declared heads, keys of every string shape", () => {
  it("holds what a plain model holds through sets and deletes of keys made by +, join, slice and families", () => {
    const r = testRandom("flat-string map shapes");
    const prefixes = ["u/workflow/history/", "u/workflow/steps/", "u/w", "j/", "c/q/", "c/q\u007f"];
    const heads = KeyHeads.of(prefixes);
    const families = [...prefixes, "u/", "u/workflow/", "c/", ""].map((p) => new KeyFamily(p));
    const stems = ["", "01M8TVYTZPV71T97", "01M8TVYTZPV71T98", "0", "\uffff", "\uffff\uffff", "a\u0000"];
    const tails = ["", "/", "/0", "/1", "\uffff", "\u0000", "zz", "\u007f"];
    const table = new Memtable<number>(heads);
    const model = new Map<string, number>();
    for (let i = 0; i < 6000; i++) {
      const family = families[r.int(families.length)]!;
      const suffix = stems[r.int(stems.length)]! + tails[r.int(tails.length)]!;
      const whole = family.prefix + suffix;
      // The same key as a pair of strings, one flat string, a view into a longer one, or a family's headed key.
      const shape = r.int(4);
      const headed = shape === 3 ? family.key(suffix) : undefined;
      const key = shape === 0 ? whole : shape === 1 ? [family.prefix, suffix].join("") : shape === 2 ? `#${whole}#`.slice(1, -1) : headed!.key;
      expect(key).toBe(whole);
      if (r.int(3) === 0) {
        expect(table.delete(key, headed)).toBe(model.delete(whole));
      } else {
        const ascii = r.int(2) === 0 && isAscii(key);
        expect(table.set(key, i, ascii, headed)).toBe(!model.has(whole));
        model.set(whole, i);
      }
      if (i % 500 === 0 || i === 5999) {
        const want = [...model].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
        expect([...table.tree.entries()]).toEqual(want);
        for (const [k, v] of want) expect(table.get(k)).toBe(v);
      }
    }
  });
});
