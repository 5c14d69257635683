/**
 * @module The defining decoder (used while a prototype holds an index, or
 * when a decoded list lacks an element) fed what the records' encoder
 * writes and what a hostile store could hold: values nested hundreds to
 * thousands of levels deep, nesting far past that, lengths past the bytes,
 * maps keyed "__proto__". It refused nesting past 512 levels, so a step
 * value nested deeper, stored and read back without a polluted prototype,
 * was unreadable while one held an index. Every case decodes as msgpackr
 * does, or fails with the decoder's error, fast and without a RangeError.
 */
import { describe, expect, it } from "vitest";
import { pack, unpack } from "msgpackr";
import { DefiningDecodeError, decodeDefining } from "../../runtime/engine/defining-decode.js";
import { decodeValue, encodeValue } from "../../runtime/workflow/records/codec.js";
import { underIndexes } from "../support/polluted-prototype.js";

const nestedLists = (levels: number): unknown => {
  let v: unknown = "core";
  for (let i = 0; i < levels; i++) v = [i, v];
  return v;
};
const nestedMaps = (levels: number): unknown => {
  let v: unknown = "core";
  for (let i = 0; i < levels; i++) v = { level: i, inner: v };
  return v;
};

describe("the defining decoder against deep and hostile values", () => {
  for (const levels of [513, 2_000]) {
    for (const [shape, make] of [
      ["lists", nestedLists],
      ["maps", nestedMaps],
    ] as const) {
      it(`a value of ${shape} nested ${levels} deep, as the records' encoder writes it, decodes as it does without a polluted prototype`, () => {
        const bytes = encodeValue(make(levels));
        const plain = decodeValue(bytes);
        expect(plain).toEqual(make(levels));
        expect(decodeDefining(bytes)).toEqual(plain);
        const polluted = underIndexes(Object.prototype, ["0", "1"], { set() {} }, () => decodeValue(bytes));
        expect(polluted.error).toBeUndefined();
        expect(polluted.value).toEqual(plain);
      });
    }
  }

  it("bytes nested 200,000 deep decode without exhausting the stack; cut short, they fail with its error", () => {
    const levels = 200_000;
    const bytes = new Uint8Array(levels + 1).fill(0x91);
    bytes[levels] = 0x07;
    let v = decodeDefining(bytes);
    for (let i = 0; i < levels; i++) {
      expect(Array.isArray(v)).toBe(true);
      v = (v as unknown[])[0];
    }
    expect(v).toBe(7);
    expect(() => decodeDefining(bytes.subarray(0, levels))).toThrow(DefiningDecodeError);
  });

  it("a list or map of 2^32-1 items, binary or text of 2^32-1 bytes, in six bytes: the decoder's error, nothing allocated for the length", () => {
    for (const head of [0xdd, 0xdf, 0xc6, 0xdb]) {
      const bytes = Uint8Array.from([head, 0xff, 0xff, 0xff, 0xff, 0x01]);
      expect(() => decodeDefining(bytes)).toThrow(DefiningDecodeError);
    }
  });

  it('a map keyed "__proto__" decodes to an object owning that field, its prototype untouched', () => {
    const bytes = Uint8Array.from([0x82, 0xa9, ...new TextEncoder().encode("__proto__"), 0x81, 0xa1, 0x78, 0x01, 0xa1, 0x79, 0x02]);
    const v = decodeDefining(bytes) as Record<string, unknown>;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.keys(v)).toEqual(["__proto__", "y"]);
    expect(Object.getOwnPropertyDescriptor(v, "__proto__")?.value).toEqual({ x: 1 });
    expect((v as { x?: unknown }).x).toBeUndefined();
  });

  it("lists and maps mixed at every depth, empty ones among them, give what msgpackr gives", () => {
    const values: unknown[] = [
      [],
      {},
      [[], {}, [[]], { a: {} }],
      { a: [1, { b: [2, { c: [] }] }], d: "x", e: null, f: true },
      [{ "": [{}] }, [[[[1]]]], "z"],
      Array.from({ length: 40 }, (_, i) => (i % 3 === 0 ? { i } : i % 3 === 1 ? [i, []] : `${i}`)),
    ];
    for (const value of values) {
      const bytes = pack(value);
      expect(decodeDefining(bytes)).toEqual(unpack(bytes));
    }
  });
});
