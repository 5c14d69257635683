/**
 * @module `RunId`: the accepted forms and the ULIDs it generates.
 */
import { describe, expect, it } from "vitest";
import { InvalidRunIdError, MAX_RUN_ID_LEN, RunId, TaqubaError } from "taquba";
import { testRandom } from "../support/seed.js";

describe("RunId", () => {
  it("accepts 1..MAX_RUN_ID_LEN characters of [A-Za-z0-9_-]", () => {
    expect(RunId.parse("a")).toBe("a");
    expect(RunId.parse("Order_42-x")).toBe("Order_42-x");
    const longest = "x".repeat(MAX_RUN_ID_LEN);
    expect(RunId.parse(longest)).toBe(longest);
    expect(MAX_RUN_ID_LEN).toBe(128);
  });

  it.each([
    ["", "empty"],
    ["x".repeat(MAX_RUN_ID_LEN + 1), "at most 128"],
    ["a/b", "may contain only"],
    ["a b", "may contain only"],
    ["a.b", "may contain only"],
    ["é", "may contain only"],
  ])("rejects %j with a typed error", (bad, fragment) => {
    let caught: unknown;
    try {
      RunId.parse(bad);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(InvalidRunIdError);
    expect(caught).toBeInstanceOf(TaqubaError);
    expect((caught as InvalidRunIdError).code).toBe("INVALID_RUN_ID");
    expect((caught as Error).message).toContain(fragment);
    expect(RunId.isValid(bad)).toBe(false);
  });

  it("generates valid, strictly increasing ULIDs", () => {
    const ids = Array.from({ length: 50 }, () => RunId.generate(1_700_000_000_000));
    for (const id of ids) expect(RunId.isValid(id)).toBe(true);
    expect(ids.every((id) => id.length === 26)).toBe(true);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe("RunId's alphabet check", () => {
  // The set the check must accept, as it was first written.
  const PATTERN = /^[A-Za-z0-9_-]+$/;
  const accepted = (s: string) => s.length >= 1 && s.length <= MAX_RUN_ID_LEN && PATTERN.test(s);

  it("accepts the same one-character ids as the pattern, over every UTF-16 code unit", () => {
    for (let c = 0; c <= 0xffff; c++) {
      const s = String.fromCharCode(c);
      if (RunId.isValid(s) !== accepted(s)) throw new Error(`code unit ${c} judged ${RunId.isValid(s)}, the pattern says ${accepted(s)}`);
    }
  });

  it("accepts the same generated and hostile ids as the pattern", () => {
    const rnd = testRandom("run id alphabet");
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
    // Next to the alphabet's edges, a line end the pattern's `$` must not pass, a surrogate pair and a lone half.
    const hostile = ["@", "[", "`", "{", "/", ":", ".", " ", "\n", "\r", "\u0000", "\u00e9", "\u0130", "\u212a", "\ud83d\ude00", "\ud800", "\u0041\u030a"];
    const ids: string[] = ["a\n", "\na", "a-\n", "_", "-", "--", "x".repeat(MAX_RUN_ID_LEN), `${"x".repeat(MAX_RUN_ID_LEN)}\n`];
    for (let i = 0; i < 2000; i++) {
      const len = 1 + rnd.int(MAX_RUN_ID_LEN + 8);
      let s = "";
      for (let j = 0; j < len; j++) s += alphabet[rnd.int(alphabet.length)];
      ids.push(s);
      const at = rnd.int(s.length + 1);
      ids.push(s.slice(0, at) + hostile[rnd.int(hostile.length)] + s.slice(at));
    }
    for (let i = 0; i < 50; i++) ids.push(RunId.generate());
    for (const s of ids) expect([s, RunId.isValid(s)]).toEqual([s, accepted(s)]);
    expect(ids.filter(accepted).length).toBeGreaterThan(500);
    expect(ids.filter((s) => !accepted(s)).length).toBeGreaterThan(500);
  });
});
