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

/** A typed array's own view of its bytes, read by the built-in getters: a test may plant `byteLength` or `buffer` on an array as an own property. */
const typedArrayProto = Object.getPrototypeOf(Uint8Array.prototype) as object;
const intrinsic = (name: "buffer" | "byteOffset" | "byteLength") => Object.getOwnPropertyDescriptor(typedArrayProto, name)!.get!;
const bufferOf = intrinsic("buffer");
const byteOffsetOf = intrinsic("byteOffset");
const byteLengthOf = intrinsic("byteLength");
const bytesOf = (v: ArrayBufferView) => Buffer.from(bufferOf.call(v) as ArrayBuffer, byteOffsetOf.call(v) as number, byteLengthOf.call(v) as number);

/** Whether `a` and `b` hold the same bytes, when both are integer arrays of one class; undefined otherwise. */
function integerArraysEqual(a: unknown, b: unknown): boolean | undefined {
  if (!ArrayBuffer.isView(a) || !ArrayBuffer.isView(b) || a instanceof DataView || b instanceof DataView) return undefined;
  const proto = Object.getPrototypeOf(a) as object;
  if (Object.getPrototypeOf(b) !== proto || !INTEGER_ARRAYS.includes(proto)) return undefined;
  const bytesA = bytesOf(a);
  const bytesB = bytesOf(b);
  return bytesA.length === bytesB.length && bytesA.equals(bytesB);
}

// Files that share a worker run this file once each: the tester is added once per global scope.
const ADDED = Symbol.for("taquba.test.integerArraysEqual");
const scope = globalThis as { [ADDED]?: true };
if (scope[ADDED] === undefined) {
  scope[ADDED] = true;
  expect.addEqualityTesters([integerArraysEqual]);
}
