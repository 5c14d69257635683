/**
 * @module Kept strings (`KeptStrings`): each kept name answers its own
 * string while it is in one of the two generations, whatever its length
 * and whatever lengths the others have; names never kept, or dropped with
 * their generation, answer undefined.
 */
import { describe, expect, it } from "vitest";
import { KeptStrings } from "../../runtime/queue/kept-strings.js";
import { testRandom } from "../support/seed.js";

describe("kept strings", () => {
  it("answer every kept name across generations, names of a length no other has, long names and names of the same length as new ones", () => {
    const r = testRandom("kept strings");
    const kept = new KeptStrings(64);
    // Model: which generation holds each name, as the class documents it.
    let young = new Map<string, string>();
    let old = new Map<string, string>();
    const modelKeep = (name: string) => {
      if (young.size >= 64) {
        old = young;
        young = new Map();
      }
      young.set(name, `v:${name}`);
    };
    for (let i = 0; i < 5000; i++) {
      const len = r.int(4) === 0 ? 500 + r.int(100) : 1 + r.int(40);
      const name = String.fromCharCode(97 + r.int(3)).repeat(len - 1) + String.fromCharCode(97 + r.int(26));
      const expected = young.get(name) ?? old.get(name);
      const got = kept.get(name);
      expect(got, `${i}: a name of ${len} characters`).toBe(expected);
      // A name found in the old generation moved to the young one (`get` kept it there).
      if (got !== undefined && !young.has(name)) modelKeep(name);
      else if (got === undefined && r.int(2) === 0) {
        modelKeep(name);
        kept.keep(name, `v:${name}`);
      }
    }
  });

  it("forget a name two generations on, and answer a name again once kept again", () => {
    const kept = new KeptStrings(2);
    kept.keep("abc", "1");
    expect(kept.get("abc")).toBe("1");
    kept.keep("de", "2");
    kept.keep("fghi", "3");
    // "abc" is in the old generation: found, and moved to the young one.
    expect(kept.get("abc")).toBe("1");
    kept.keep("jk", "4");
    kept.keep("lm", "5");
    kept.keep("no", "6");
    expect(kept.get("de")).toBeUndefined();
    expect(kept.get("fghi")).toBeUndefined();
    expect(kept.get("xyz")).toBeUndefined();
    kept.keep("fghi", "7");
    expect(kept.get("fghi")).toBe("7");
    expect(kept.get("ab")).toBeUndefined();
    expect(kept.get("")).toBeUndefined();
    // An untyped caller's value misses, as any name never kept does.
    for (const odd of [null, undefined, 7, {}]) expect(kept.get(odd as unknown as string)).toBeUndefined();
  });
});
