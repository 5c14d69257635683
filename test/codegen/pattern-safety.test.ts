/**
 * @module Spec patterns cannot stall the event loop: nested unbounded
 * repetition and backreferences are refused at codegen time with a located
 * diagnostic, and generated validators never run a pattern over a string
 * longer than its maxLength or 10,000 characters.
 */
import { describe, expect, it } from "vitest";
import { generate } from "../../codegen/generate.js";
import { boundPattern, patternProblem, PATTERN_INPUT_LIMIT } from "../../codegen/analyse/pattern-safety.js";
import { cpuTimed } from "../support/cpu-time.js";

const spec = (pattern: string, extra = "") => `version: 1\npackage: p\nheaders:\n  code:\n    type: string\n    pattern: ${JSON.stringify(pattern)}${extra}\n`;

describe("pattern safety", () => {
  it.each(["^(a+)+$", "(a*)*b", "^(\\w+\\s?)*$", "(x|y{1,3})+", "^([a-z0-9]+\\.)+[a-z]+$", "(?:a{2,})*", "(a|b*)+"])("refuses nested repetition in %s", (p) => {
    expect(patternProblem(p)).toMatch(/repeats inside/);
  });

  it.each(["(a)\\1", "(?<x>a)\\k<x>"])("refuses the backreference in %s", (p) => {
    expect(patternProblem(p)).toMatch(/backreference/);
  });

  it.each(["^[a-z0-9-]{1,64}$", "^\\d{4}-\\d{2}-\\d{2}$", "(ab?)+", "(a{3})+", "^(foo|bar)+$", "[a-z]+@[a-z]+", "^(\\d{3})?x*$"])("accepts %s", (p) => {
    expect(patternProblem(p)).toBeUndefined();
  });

  it("reports an unsafe pattern where it is written", () => {
    const result = generate([{ file: "p.taquba.yaml", source: spec("^(a+)+$") }]);
    expect(result.files).toEqual([]);
    expect(result.diagnostics).toMatchObject([{ code: "UNSAFE_PATTERN", severity: "error", line: 6, column: 14 }]);
    expect(result.diagnostics[0]!.message).toContain('"a+" repeats inside "(a+)+"');
  });

  it("a bounded pattern matches exactly what the pattern matches, up to the bound", () => {
    for (const [p, inputs] of [
      ["^[a-z]+$", ["abc", "ab1", "", "z"]],
      ["b+", ["abbc", "ac", "b"]],
      ["c$", ["abc", "ca"]],
      ["(?<=a)b", ["ab", "cb", "b"]],
    ] as const) {
      const plain = new RegExp(p, "u");
      const bounded = new RegExp(boundPattern(p, 50), "u");
      for (const s of inputs) expect(bounded.test(s), `${p} on ${s}`).toBe(plain.test(s));
    }
    expect(new RegExp(boundPattern("a", 3), "u").test("aaa")).toBe(true);
    expect(new RegExp(boundPattern("a", 3), "u").test("aaaa")).toBe(false);
    // Bounded by the schema's own maxLength, an over-long string passes the pattern: maxLength already fails it.
    expect(new RegExp(boundPattern("^b", 3, "pass"), "u").test("aaaa")).toBe(true);
    expect(new RegExp(boundPattern("^b", 3, "pass"), "u").test("aaa")).toBe(false);
  });

  it("generated validators refuse an over-long string at once and name the spec's pattern", async () => {
    const result = generate([{ file: "p.taquba.yaml", source: spec("^[a-z]+\\d*\\d*$") }]);
    const code = result.files.find((f) => f.path === "p/validators.ts")!.content;
    expect(code).toContain(`{10001}`);
    expect(code).toContain(`must match pattern \\""+"^[a-z]+\\\\d*\\\\d*$"`);
    // The quadratic pattern on a long near-miss: unbounded it takes seconds, bounded it fails at once.
    const bounded = new RegExp(boundPattern("^[a-z]+\\d*\\d*$", PATTERN_INPUT_LIMIT), "u");
    const { result: matched, cpuMs } = cpuTimed(() => bounded.test(`a${"1".repeat(200_000)}!`));
    expect(matched).toBe(false);
    expect(cpuMs, "CPU ms of the bounded pattern's test").toBeLessThan(200);
  });

  it("uses the schema's maxLength as the bound when it has one", () => {
    const result = generate([{ file: "p.taquba.yaml", source: spec("^[a-z]+$", "\n    maxLength: 12") }]);
    expect(result.files.find((f) => f.path === "p/validators.ts")!.content).toContain("{13}");
  });
});
