/**
 * @module The first difference of two entry lists: none for equal lists,
 * else the first differing entry or the list that ends first, named with
 * both lengths; values the helper cannot compare are refused.
 */
import { describe, expect, it } from "vitest";
import { firstDifference } from "./first-difference.js";

describe("firstDifference", () => {
  it("finds none between equal lists of entries, strings or numbers, arrays or iterables", () => {
    expect(firstDifference([], [])).toBeUndefined();
    expect(
      firstDifference(
        [
          ["a", 1],
          ["b", 2],
        ],
        new Map([
          ["a", 1],
          ["b", 2],
        ]).entries(),
      ),
    ).toBeUndefined();
    expect(firstDifference(["k/1=v"], ["k/1=v"])).toBeUndefined();
    expect(firstDifference([Number.NaN, undefined, null], [Number.NaN, undefined, null])).toBeUndefined();
  });

  it("names the first entry that differs, by key or by value, with both lengths", () => {
    expect(
      firstDifference(
        [
          ["a", 1],
          ["b", 2],
          ["c", 9],
        ],
        [
          ["a", 1],
          ["b", 3],
          ["c", 8],
        ],
      ),
    ).toBe('entry 1: got ["b",2], want ["b",3] (got 3 entries, want 3)');
    expect(firstDifference([["a", 1]], [["b", 1]])).toBe('entry 0: got ["a",1], want ["b",1] (got 1 entries, want 1)');
    expect(firstDifference(["x", "y"], ["x", "z"])).toBe('entry 1: got "y", want "z" (got 2 entries, want 2)');
    expect(firstDifference([0], [-0])).toBe("entry 0: got 0, want -0 (got 1 entries, want 1)");
    expect(firstDifference([["a", 1, 2]], [["a", 1]])).toMatch(/^entry 0:/);
  });

  it("names the list that ends first", () => {
    expect(
      firstDifference(
        [["a", 1]],
        [
          ["a", 1],
          ["b", 2],
        ],
      ),
    ).toBe('entry 1: got nothing, want ["b",2] (got 1 entries, want 2)');
    expect(firstDifference(["a", "b"], ["a"])).toBe('entry 1: got "b", want nothing (got 2 entries, want 1)');
    expect(firstDifference([], [undefined])).toBe("entry 0: got nothing, want undefined (got 0 entries, want 1)");
  });

  it("refuses objects it would compare by identity", () => {
    expect(() => firstDifference([["a", new Uint8Array([1])]], [["a", new Uint8Array([1])]])).toThrow(TypeError);
    expect(() => firstDifference([{ a: 1 }], [{ a: 1 }])).toThrow(/primitives/);
  });
});
