/**
 * @module A value owning a field named `__proto__` (as `JSON.parse` makes
 * one) reads back with that field: msgpackr renames such a key to
 * `__proto_` when it decodes, which would change a step's value silently
 * between its first run and its replay.
 */
import { describe, expect, it } from "vitest";
import { decodeValue, encodeValue } from "../../runtime/workflow/records/codec.js";

function roundTrip(v: unknown): unknown {
  return decodeValue(encodeValue(v));
}

describe("values with a field named __proto__", () => {
  it("keep the field as their own, with its value, and take no prototype from it", () => {
    const v = JSON.parse('{"__proto__": {"polluted": true}, "b": 2}') as Record<string, unknown>;
    const back = roundTrip(v) as Record<string, unknown>;
    expect(Object.keys(back)).toEqual(["__proto__", "b"]);
    expect(Object.getOwnPropertyDescriptor(back, "__proto__")?.value).toEqual({ polluted: true });
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
    expect((back as { polluted?: unknown }).polluted).toBeUndefined();
    expect(back.b).toBe(2);
  });

  it("keep it nested in lists and maps", () => {
    const v = JSON.parse('[{"x": {"__proto__": 1}}, {"__proto__": [1, 2]}]') as unknown;
    const back = roundTrip(v) as [{ x: object }, object];
    expect(Object.getOwnPropertyDescriptor(back[0].x, "__proto__")?.value).toBe(1);
    expect(Object.getOwnPropertyDescriptor(back[1], "__proto__")?.value).toEqual([1, 2]);
  });

  it("leave a field named __proto_ as it is", () => {
    const back = roundTrip({ __proto_: 1, a: "x" }) as Record<string, unknown>;
    expect(Object.keys(back)).toEqual(["__proto_", "a"]);
    expect(back.__proto_).toBe(1);
  });
});
