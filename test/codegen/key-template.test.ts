/**
 * @module Key templates: the generator checks the fields of a template with
 * the runtime's own parser, so what it accepts is what the runtime reads.
 */
import { describe, expect, it } from "vitest";
import { templateFields as codegenTemplateFields } from "../../codegen/index.js";
import { compileKeyTemplate, parseKeyTemplate, templateFields } from "../../runtime/contract/key-template.js";

describe("key templates", () => {
  it("the generator's templateFields is the runtime's", () => {
    expect(codegenTemplateFields).toBe(templateFields);
  });

  it("parses literal text and dotted placeholders in order", () => {
    expect(parseKeyTemplate("payment:{order.id}/{n}")).toEqual(["payment:", ["order", "id"], "/", ["n"], ""]);
    expect(templateFields("payment:{order.id}/{n}")).toEqual(["order.id", "n"]);
    expect(templateFields("no placeholders")).toEqual([]);
    expect(templateFields("{}")).toEqual([""]);
    expect(templateFields("{a{b}")).toEqual(["b"]);
  });

  it("fills exactly the fields it reports", () => {
    const t = "payment:{order.id}/{n}";
    expect(compileKeyTemplate(t)({ order: { id: "a/b" }, n: 3 })).toBe("payment:a%2Fb/#3"); // numbers are tagged, so 3 and "3" give different keys
    expect(() => compileKeyTemplate(t)({ order: {}, n: 3 })).toThrow(/order\.id/);
  });
});
