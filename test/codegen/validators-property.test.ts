/**
 * Property: a precompiled validator, with ajv's runtime helpers rewritten to
 * taquba's `validatorRuntime`, judges every value exactly as ajv itself does
 * when it compiles the same schema in memory with the same formats.
 */

import { Ajv, type ErrorObject } from "ajv";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type RawValidateFunction } from "taquba";
import { jsonSchemaFormats, validatorRuntime } from "taquba/generated";
import { buildModel } from "../../codegen/analyse/build-model.js";
import { compileValidators } from "../../codegen/emit/compile-validators.js";
import { HEAVY_TEST_MS } from "../support/load.js";
import type { JsonSchema } from "../../codegen/analyse/spec-model.js";

type Schema = Record<string, unknown>;

const scalar: fc.Arbitrary<Schema> = fc.oneof(
  fc.record(
    {
      type: fc.constant("string"),
      minLength: fc.integer({ min: 0, max: 3 }),
      maxLength: fc.integer({ min: 2, max: 6 }),
      format: fc.constantFrom("email", "date", "uuid", "ipv4", "uri"),
      pattern: fc.constantFrom("^a", "b$", "^[a-c]*$"),
    },
    { requiredKeys: ["type"] },
  ),
  fc.record(
    {
      type: fc.constantFrom("integer", "number"),
      minimum: fc.integer({ min: -5, max: 0 }),
      maximum: fc.integer({ min: 1, max: 9 }),
      multipleOf: fc.constantFrom(1, 2, 0.5),
    },
    { requiredKeys: ["type"] },
  ),
  fc.constant({ type: "boolean" }),
  fc.constant({ type: "null" }),
  fc.record({
    enum: fc.uniqueArray(fc.oneof(fc.string({ maxLength: 2 }), fc.integer({ min: 0, max: 3 }), fc.constant({ k: [1] })), {
      minLength: 1,
      maxLength: 3,
      selector: (v) => JSON.stringify(v),
    }),
  }),
  fc.record({ const: fc.oneof(fc.string({ maxLength: 2 }), fc.constant([1, { a: null }])) }),
);

const schema: fc.Arbitrary<Schema> = fc.letrec<{ s: Schema }>((tie) => ({
  s: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    scalar,
    fc.record(
      {
        type: fc.constant("array"),
        items: tie("s"),
        minItems: fc.integer({ min: 0, max: 2 }),
        maxItems: fc.integer({ min: 1, max: 4 }),
        uniqueItems: fc.boolean(),
      },
      { requiredKeys: ["type", "items"] },
    ),
    fc
      .record({
        props: fc.dictionary(fc.constantFrom("a", "b", "c-d"), tie("s"), { maxKeys: 3 }),
        required: fc.subarray(["a", "b", "c-d"]),
        additionalProperties: fc.boolean(),
      })
      .map(({ props, required, additionalProperties }) => ({
        type: "object",
        properties: props,
        required: required.filter((r) => r in props),
        additionalProperties,
      })),
    fc.record({ oneOf: fc.array(tie("s"), { minLength: 1, maxLength: 2 }) }),
    fc.record({ anyOf: fc.array(tie("s"), { minLength: 1, maxLength: 2 }) }),
  ),
})).s;

/**
 * Whether `v` holds an object with its own `toString` or `valueOf`: ajv's
 * deep equality (fast-deep-equal) calls those and throws a TypeError when
 * JSON made them numbers, so ajv cannot be the reference for such values
 * (taquba's own equality is checked on them below).
 */
const breaksReference = (v: unknown): boolean =>
  typeof v === "object" &&
  v !== null &&
  (Array.isArray(v) ? v.some(breaksReference) : Object.hasOwn(v, "toString") || Object.hasOwn(v, "valueOf") || Object.values(v).some(breaksReference));

const value = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }).filter((v) => !breaksReference(v)),
  fc.constantFrom("a@b.co", "2024-02-29", "123e4567-e89b-12d3-a456-426614174000", "10.0.0.1", "https://x.example", "😀😀", "abc", ""),
  fc.array(fc.constantFrom(1, 1, "a", { k: [1] }, { k: [1] }), { maxLength: 4 }),
);

/** Loads precompiled module text as functions, with `validatorRuntime` supplied. */
function load(code: string): Record<string, RawValidateFunction> {
  const exports: Record<string, RawValidateFunction> = {};
  const body = code.replace(/^import \{ validatorRuntime \} from "taquba\/generated";$/m, "").replace(/^export const (\w+) = /gm, "exports.$1 = ");
  new Function("validatorRuntime", "exports", body)(validatorRuntime, exports);
  return exports;
}

/**
 * Error keywords by path. Generated validators never run a pattern over a
 * string longer than its maxLength (see codegen/analyse/pattern-safety.ts),
 * so where maxLength failed, whether pattern is reported too is left out of
 * the comparison; validity itself is compared exactly.
 */
const summary = (errors: readonly Pick<ErrorObject, "instancePath" | "keyword">[] | null | undefined) => {
  const list = errors ?? [];
  const tooLong = new Set(list.filter((e) => e.keyword === "maxLength").map((e) => e.instancePath));
  return list
    .filter((e) => !(e.keyword === "pattern" && tooLong.has(e.instancePath)))
    .map((e) => `${e.instancePath} ${e.keyword}`)
    .sort();
};

describe("precompiled validators", () => {
  // 150 schemas compiled twice in this process: about 2 s of CPU, 12 s of wall time at a load of 15 on two cores.
  it("agree with ajv compiling the same schema in memory", { timeout: HEAVY_TEST_MS }, () => {
    const reference = new Ajv({
      allErrors: true,
      strict: true,
      strictTypes: false,
      strictTuples: false,
      strictRequired: false,
      allowUnionTypes: true,
      logger: false,
    });
    for (const [name, fn] of Object.entries(jsonSchemaFormats)) reference.addFormat(name, fn);
    const pkg = buildModel("p.taquba.yaml", { version: 1, package: "p" });
    fc.assert(
      fc.property(schema, fc.array(value, { minLength: 1, maxLength: 8 }), (s, values) => {
        const precompiled = load(compileValidators([{ exportName: "validateRoot", schema: s as JsonSchema }], pkg)).validateRoot as RawValidateFunction;
        const direct = reference.compile(s);
        for (const v of values) {
          const ok = precompiled(v);
          expect(ok, JSON.stringify({ s, v })).toBe(direct(v));
          expect(summary(precompiled.errors)).toEqual(summary(direct.errors));
        }
      }),
      { numRuns: 150 },
    );
  });

  it("compare objects with their own toString or valueOf by their fields", () => {
    const pkg = buildModel("p.taquba.yaml", { version: 1, package: "p" });
    const schema: Schema = { oneOf: [{ anyOf: [{ enum: [{ k: [1] }, ""] }] }, { enum: [{ toString: 0 }] }] };
    const validate = load(compileValidators([{ exportName: "validateRoot", schema: schema as JsonSchema }], pkg)).validateRoot as RawValidateFunction;
    expect(validate({ toString: 0 })).toBe(true);
    expect(validate({ toString: 1 })).toBe(false);
    expect(validate({ valueOf: 0, k: [1] })).toBe(false);
    expect(validate({ k: [1] })).toBe(true);
    expect(validate([{ toString: 0 }])).toBe(false);
  });
});
