/**
 * @module Typed errors made while Array.prototype holds an index: a
 * read-only "0" there made every TaqubaError's constructor throw a
 * TypeError (its list of class names was built by push), and a setter took
 * the first name, so `instanceof` answered false for every typed error.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, StoreCorruptedError, TaqubaError, ValidationError } from "taquba";
import { underIndexes } from "../support/polluted-prototype.js";

describe("typed errors made while Array.prototype holds an index", () => {
  it.each([
    ["read-only", { value: "planted", writable: false }],
    ["a setter", { set() {}, get: () => undefined }],
  ] as const)("are made, and are instances of their classes, under %s index 0", (_what, descriptor) => {
    const made = underIndexes(Array.prototype, ["0", "1", "2"], descriptor, () => [
      new ValidationError("bad"),
      new StoreCorruptedError("k", "damaged"),
      new ClosedError("closed"),
    ]);
    expect(made.error).toBeUndefined();
    const [validation, corrupted, closed] = made.value!;
    expect(validation).toBeInstanceOf(ValidationError);
    expect(validation).toBeInstanceOf(TaqubaError);
    expect(corrupted).toBeInstanceOf(StoreCorruptedError);
    expect(closed).toBeInstanceOf(ClosedError);
    expect(validation).not.toBeInstanceOf(ClosedError);
  });
});
