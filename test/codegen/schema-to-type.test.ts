/**
 * JSON Schema to TypeScript type text: each construct of the spec's subset,
 * sorting, quoting of odd keys and escaping of comment terminators.
 */

import { describe, expect, it } from "vitest";
import { normaliseSchema } from "../../codegen/analyse/build-model.js";
import { schemaToType } from "../../codegen/emit/schema-to-type.js";

const t = (schema: unknown) => schemaToType(normaliseSchema(schema));

describe("schemaToType", () => {
  it("maps scalars, null and unions of types", () => {
    expect(t({ type: "string" })).toBe("string");
    expect(t({ type: "integer" })).toBe("number");
    expect(t({ type: "boolean" })).toBe("boolean");
    expect(t({ type: "null" })).toBe("null");
    expect(t({ type: ["string", "null"] })).toBe("string | null");
    expect(t({})).toBe("unknown");
  });

  it("maps enums and consts to literal unions", () => {
    expect(t({ enum: ["a", 1, true, null] })).toBe('"a" | 1 | true | null');
    expect(t({ const: "x" })).toBe('"x"');
  });

  it("maps arrays, wrapping complex item types", () => {
    expect(t({ type: "array", items: { type: "string" } })).toBe("string[]");
    expect(t({ type: "array", items: { enum: ["a", "b"] } })).toBe('Array<"a" | "b">');
    expect(t({ type: "array" })).toBe("unknown[]");
  });

  it("maps objects: sorted properties, optional ones marked, odd keys quoted, closed by default", () => {
    expect(
      t({
        type: "object",
        required: ["b"],
        properties: { b: { type: "string" }, a: { type: "integer", description: "An */ end" }, "x-y": { type: "boolean" } },
      }),
    ).toBe('{\n  /** An *\\/ end */\n  a?: number;\n  b: string;\n  "x-y"?: boolean;\n}');
    expect(t({ type: "object", properties: { a: { type: "string" } }, additionalProperties: true })).toBe("{\n  a?: string;\n  [key: string]: unknown;\n}");
    expect(t({ type: "object", additionalProperties: { type: "integer" } })).toBe("{\n  [key: string]: number;\n}");
    expect(t({ type: "object", additionalProperties: false })).toBe("Record<string, never>");
  });

  it("maps refs to the named types and combinators to unions and intersections", () => {
    expect(t({ $ref: "#/types/Money" })).toBe("Money");
    expect(t({ oneOf: [{ type: "string" }, { $ref: "#/types/Money" }] })).toBe("string | Money");
    expect(t({ allOf: [{ $ref: "#/types/A" }, { $ref: "#/types/B" }] })).toBe("A & B");
    expect(t({ anyOf: [{ type: "string" }, { type: "integer" }], type: "string" })).toBe("string & (string | number)");
  });

  it("indents nested objects by level", () => {
    expect(t({ type: "object", required: ["o"], properties: { o: { type: "object", required: ["x"], properties: { x: { type: "string" } } } } })).toBe(
      "{\n  o: {\n    x: string;\n  };\n}",
    );
  });
});
