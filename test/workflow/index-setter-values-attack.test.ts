/**
 * @module Workflow values holding arrays (a step's result, its arguments)
 * decoded while a prototype holds an index ("0") as a setter or a
 * read-only field: msgpackr assigns each element of an array it builds,
 * so a setter took a step result's first element (`[1, 2, 3]` read back as
 * `[<hole>, 2, 3]`, with no field missing for the count to catch), and the
 * fallback after a read-only field's refusal built its arrays the same
 * way. Each value reads whole.
 *
 * Only the decode runs while the index is defined: an index setter takes
 * every `push` of the process, the test's too.
 */
import { describe, expect, it } from "vitest";
import { underIndexes } from "../support/polluted-prototype.js";
import { decodeValue, decodeValueDefining, encodeValue } from "../../runtime/workflow/records/codec.js";

const VALUE = { items: [1, 2, 3], rows: [{ id: "a", tags: ["x"] }], empty: [], nested: [[5], [6, 7]] };

const POLLUTIONS: [string, object, PropertyDescriptor][] = [
  ["a setter on Array.prototype", Array.prototype, { get: () => "planted", set: () => {} }],
  ["a setter on Object.prototype", Object.prototype, { get: () => "planted", set: () => {} }],
  ["a read-only field on Array.prototype", Array.prototype, { value: "planted", writable: false }],
];

describe('workflow values with arrays decoded under an index "0" on a prototype', () => {
  for (const [what, target, descriptor] of POLLUTIONS) {
    for (const [name, decode] of [
      ["decodeValue", decodeValue],
      ["decodeValueDefining", decodeValueDefining],
    ] as const) {
      it(`${name} reads every element under ${what}`, () => {
        const bytes = encodeValue(VALUE);
        // JSON reads every element as the decode left it: a hole would read the prototype's "planted".
        const got = underIndexes(target, ["0"], descriptor, () => JSON.stringify(decode(bytes)));
        expect(got.error).toBeUndefined();
        expect(JSON.parse(got.value!)).toEqual(VALUE);
      });
    }
  }
});
