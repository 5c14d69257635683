/**
 * @module `RunId`: the accepted forms and the ULIDs it generates.
 */
import { describe, expect, it } from "vitest";
import { InvalidRunIdError, MAX_RUN_ID_LEN, RunId, TaqubaError } from "taquba";

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
