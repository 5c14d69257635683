/**
 * @module compareKeys orders keys as the UTF-8 bytes of their encodings do,
 * whichever path it takes (the built-in comparison for keys without
 * surrogates, the code point loop otherwise), and says equal only for equal keys.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compareKeys } from "../../runtime/store/keys.js";

const utf8 = (a: string, b: string) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));

// Characters from the ranges where UTF-16 and UTF-8 orders agree and disagree, with long shared prefixes.
const char = fc.constantFrom("a", "b", "/", "0", "\u00e9", "\ud7ff", "\ue000", "\uffff", "\ufffd", "\u{10000}", "\u{1f600}", "\u{10ffff}");
const tail = fc.array(char, { maxLength: 6 }).map((cs) => cs.join(""));
const key = fc.tuple(fc.constantFrom("", "u/workflow/runs/q/01M8S9M3Y3H7KY2C", "j/01M8S"), tail).map(([p, t]) => p + t);

describe("compareKeys", () => {
  it("agrees in sign with the UTF-8 byte order, for every pair", () => {
    fc.assert(
      fc.property(key, key, (a, b) => {
        expect(Math.sign(compareKeys(a, b))).toBe(Math.sign(utf8(a, b)));
        expect(Math.sign(compareKeys(b, a))).toBe(Math.sign(utf8(b, a)));
      }),
      { numRuns: 5000 },
    );
  });

  it("sorts where the built-in order would not: a surrogate after U+E000..U+FFFF", () => {
    expect(["k/\u{1f600}", "k/\uffff", "k/a"].sort(compareKeys)).toEqual(["k/a", "k/\uffff", "k/\u{1f600}"]);
    expect(compareKeys("x\ue000", "x\ud83d\ude00")).toBeLessThan(0);
    expect(compareKeys("same", "same")).toBe(0);
    expect(compareKeys("ab", "abc")).toBeLessThan(0);
  });
});
