/**
 * @module validateObjectKey's one-pass check accepts exactly the keys that
 * have no problem by the itemized rules (`objectKeyProblems`), and its error
 * names those problems.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ValidationError } from "../../runtime/errors.js";
import { MAX_OBJECT_KEY_BYTES, objectKeyProblems, validateObjectKey } from "../../runtime/store/keys.js";

// Units that each rule looks at: separators, dots, NUL, backslash, 1- to 3-byte characters, pairs and lone surrogates.
const unit = fc.constantFrom("a", "Z", "0", "/", "/", ".", ".", "\0", "\\", "\u00e9", "\u07ff", "\u0800", "\uffff", "\u{1f600}", "\ud83d", "\ude00");
const key = fc.array(unit, { maxLength: 12 }).map((us) => us.join(""));

function accepts(k: string): boolean {
  try {
    validateObjectKey(k);
    return true;
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as ValidationError).issues).toEqual(objectKeyProblems(k));
    return false;
  }
}

describe("validateObjectKey", () => {
  it("accepts a key exactly when the itemized rules find no problem, and names the problems when not", () => {
    fc.assert(
      fc.property(key, (k) => {
        expect(accepts(k)).toBe(objectKeyProblems(k).length === 0);
      }),
      { numRuns: 20_000 },
    );
  });

  it("counts UTF-8 bytes against the limit: 1-, 2-, 3- and 4-byte characters at and just over it", () => {
    for (const [c, width] of [
      ["a", 1],
      ["\u00e9", 2],
      ["\u0800", 3],
      ["\u{1f600}", 4],
    ] as const) {
      const fit = c.repeat(Math.floor(MAX_OBJECT_KEY_BYTES / width));
      const pad = "b".repeat(MAX_OBJECT_KEY_BYTES - Buffer.byteLength(fit));
      expect(accepts(`${fit}${pad}`)).toBe(true);
      expect(accepts(`${fit}${pad}b`)).toBe(false);
      expect(accepts(`${fit}${pad}${c}`)).toBe(false);
    }
  });

  it("accepts the keys the engine and queue write", () => {
    for (const k of ["bench/wal/00000000000000000042", "q-memo/memos/01M8S9M3Y3H7KY2C/3/ab.cd", ".hidden/x", "a/..b/c.", "x"]) expect(accepts(k)).toBe(true);
    for (const k of ["", "/a", "a/", "a//b", "./a", "a/..", "a\\b", "a\0b", "a\ud800b"]) expect(accepts(k)).toBe(false);
  });
});
