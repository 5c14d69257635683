/**
 * @module Vitest setup file: `toEqual` and `toStrictEqual` compare two
 * byte or integer arrays of the same class by their bytes. Vitest's own
 * comparison walks them element by element and then again as an array of
 * [index, value] entries: a 300 KiB payload took 1-9 s to compare on a busy
 * machine, and a test of large values ran into its time limit. For integer
 * elements equal bytes are equal elements; arrays of other classes (a Buffer
 * against a Uint8Array, float arrays, whose NaN and -0 compare by value)
 * keep vitest's comparison. Fields set on an array beside its elements are
 * not compared (no test sets any).
 */
import { expect } from "vitest";

const INTEGER_ARRAYS: readonly object[] = [
  Buffer.prototype,
  Uint8Array.prototype,
  Int8Array.prototype,
  Uint8ClampedArray.prototype,
  Uint16Array.prototype,
  Int16Array.prototype,
  Uint32Array.prototype,
  Int32Array.prototype,
  BigUint64Array.prototype,
  BigInt64Array.prototype,
];

/** Whether `a` and `b` hold the same bytes, when both are integer arrays of one class; undefined otherwise. */
function integerArraysEqual(a: unknown, b: unknown): boolean | undefined {
  if (!ArrayBuffer.isView(a) || !ArrayBuffer.isView(b) || a instanceof DataView || b instanceof DataView) return undefined;
  const proto = Object.getPrototypeOf(a) as object;
  if (Object.getPrototypeOf(b) !== proto || !INTEGER_ARRAYS.includes(proto)) return undefined;
  if (a.byteLength !== b.byteLength) return false;
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}

// Files that share a worker run this file once each: the tester is added once per global scope.
const ADDED = Symbol.for("taquba.test.integerArraysEqual");
const scope = globalThis as { [ADDED]?: true };
if (scope[ADDED] === undefined) {
  scope[ADDED] = true;
  expect.addEqualityTesters([integerArraysEqual]);
}
