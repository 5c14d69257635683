/**
 * @module The decoders' list of record layouts is frozen: bytes holding a
 * record definition (which no encoder of these decoders writes, and their
 * callers refuse before decoding) fail their own decode instead of leaving
 * a layout in the list, where it would turn the integer it is numbered by
 * into a record in every later decode.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { packrWithOwnLayouts, unpackrWithOwnLayouts } from "../../runtime/own-layouts.js";

/** `{ a: 1 }` written as a record: a definition of layout 0 (integer 0x40), then the record. */
const RECORD = new Packr({ useRecords: true }).pack({ a: 1 });

describe("decoders with their own record layouts", () => {
  for (const [name, make] of [
    ["an Unpackr", () => unpackrWithOwnLayouts({ useRecords: false, mapsAsObjects: true })],
    ["a Packr", () => packrWithOwnLayouts({ useRecords: false, mapsAsObjects: true })],
  ] as const) {
    it(`${name}: a record definition fails its decode and leaves no layout for the next`, () => {
      const decoder = make();
      expect(RECORD[0]).toBe(0xd4);
      expect(() => decoder.unpack(RECORD)).toThrow(TypeError);
      expect(decoder.unpack(Uint8Array.of(0x40))).toBe(64);
      expect(decoder.unpack(Uint8Array.of(0x92, 0x7f, 0x40))).toEqual([127, 64]);
    });
  }

  it("a Packr encodes as the options say and decodes what it encoded", () => {
    const packr = packrWithOwnLayouts({ useRecords: false, mapsAsObjects: true });
    const value = { n: 65, list: [64, 127, "x"], nested: { m: 100 } };
    const bytes = packr.pack(value);
    expect(Buffer.from(bytes)).toEqual(Buffer.from(new Packr({ useRecords: false, mapsAsObjects: true }).pack(value)));
    expect(packr.unpack(bytes)).toEqual(value);
  });
});
