/**
 * @module Key templates are injective: distinct parameter tuples never give
 * the same key, whatever separators the template and the values use.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ValidationError } from "taquba";
import { compileKeyTemplate } from "taquba/generated";

const MARKS = "-._~!*'()";
const value = fc.oneof(
  fc.string({ unit: fc.constantFrom(...`ab1${MARKS}:/%#{} é`.split("")), maxLength: 6 }),
  fc.integer({ min: -20, max: 20 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constantFrom("1", "true", "#1", "-1", "1e+21"),
);
// Interior literals hold at least one separator; outer ones may be anything.
const separator = fc
  .tuple(
    fc.string({ unit: fc.constantFrom("a", "1", "%", "#"), maxLength: 2 }),
    fc.constantFrom(...`${MARKS}:/| é`.split("")),
    fc.string({ unit: fc.constantFrom(..."a-:".split("")), maxLength: 2 }),
  )
  .map((p) => p.join(""));
const template = fc
  .tuple(
    fc.string({ unit: fc.constantFrom(..."k-:.".split("")), maxLength: 3 }),
    fc.array(separator, { minLength: 0, maxLength: 3 }),
    fc.string({ unit: fc.constantFrom(..."-:.x".split("")), maxLength: 3 }),
  )
  .map(([head, seps, tail]) => {
    const names = ["p0", ...seps.map((_, i) => `p${i + 1}`)];
    return { names, text: head + names.map((n, i) => `{${n}}${i < seps.length ? seps[i] : ""}`).join("") + tail };
  });

const same = (a: unknown, b: unknown) => typeof a === typeof b && Object.is(a === 0 ? 0 : a, b === 0 ? 0 : b);

describe("key templates", () => {
  it("distinct parameter tuples never produce the same key", () => {
    fc.assert(
      fc.property(template, fc.array(fc.array(value, { minLength: 4, maxLength: 4 }), { minLength: 2, maxLength: 6 }), (t, tuples) => {
        const key = compileKeyTemplate(t.text);
        const seen = new Map<string, unknown[]>();
        for (const tuple of tuples) {
          const values = Object.fromEntries(t.names.map((n, i) => [n, tuple[i]]));
          const k = key(values);
          const before = seen.get(k);
          if (before !== undefined)
            expect(
              t.names.every((_, i) => same(before[i], tuple[i])),
              `${t.text}: ${JSON.stringify(before)} vs ${JSON.stringify(tuple)} -> ${k}`,
            ).toBe(true);
          seen.set(k, tuple);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("the reported collisions are gone", () => {
    const dash = compileKeyTemplate("{a}-{b}");
    expect(dash({ a: "x-y", b: "z" })).not.toBe(dash({ a: "x", b: "y-z" }));
    const one = compileKeyTemplate("k:{a}");
    expect(one({ a: 1 })).not.toBe(one({ a: "1" }));
    expect(one({ a: true })).not.toBe(one({ a: "true" }));
  });

  it("keeps keys readable where the template needs no extra escaping", () => {
    expect(compileKeyTemplate("order-payment:{order_id}")({ order_id: "o-1" })).toBe("order-payment:o-1");
    expect(compileKeyTemplate("email:{to}:{subject}")({ to: "a@b.co", subject: "Hi there" })).toBe("email:a%40b.co:Hi%20there");
    expect(compileKeyTemplate("resize:{photo}-{width}")({ photo: "a-b.png", width: 200 })).toBe("resize:a%2Db.png-#200");
  });

  it("refuses adjacent parameters, inherited names and non-finite numbers", () => {
    expect(() => compileKeyTemplate("{a}{b}")).toThrow(ValidationError);
    expect(() => compileKeyTemplate("{a}x1{b}")).toThrow(/separator/);
    const k = compileKeyTemplate("k:{constructor}");
    expect(() => k({})).toThrow(ValidationError);
    expect(() => compileKeyTemplate("k:{n}")({ n: NaN })).toThrow(/finite number/);
  });
});
