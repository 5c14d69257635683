/**
 * @module The check that a test file left no built-in changed
 * (built-ins.ts): a field added, redefined or removed, and an index
 * defined and deleted on Array.prototype (its length stays grown), are
 * named, and put back as they were.
 */
import { describe, expect, it } from "vitest";
import { builtInsChanged, builtInsState, restoreBuiltIns } from "./built-ins.js";
import { underIndexes } from "./polluted-prototype.js";

describe("built-ins left changed by a test", () => {
  it("names a field added, redefined or removed, and puts each back", () => {
    const before = builtInsState();
    const typedArray = Object.getPrototypeOf(Uint8Array.prototype) as object;
    const toFixed = Object.getOwnPropertyDescriptor(Number.prototype, "toFixed")!;
    const subarray = Object.getOwnPropertyDescriptor(typedArray, "subarray")!;
    try {
      (Object.prototype as Record<string, unknown>).wokenAt = 1;
      Object.defineProperty(typedArray, "subarray", { value: () => "planted", configurable: true, writable: true });
      delete (Number.prototype as unknown as Record<string, unknown>).toFixed;
      expect(builtInsChanged(before).sort()).toEqual([
        "Number.prototype.toFixed removed",
        "Object.prototype.wokenAt added",
        "TypedArray.prototype.subarray changed",
      ]);
      restoreBuiltIns(before);
      expect(builtInsChanged(before)).toEqual([]);
      expect("wokenAt" in {}).toBe(false);
      expect(new Uint8Array([1, 2]).subarray(1)).toEqual(new Uint8Array([2]));
      expect((1.5).toFixed(0)).toBe("2");
    } finally {
      delete (Object.prototype as Record<string, unknown>).wokenAt;
      Object.defineProperty(Number.prototype, "toFixed", toFixed);
      Object.defineProperty(typedArray, "subarray", subarray);
    }
  });

  it("sees the length an index defined on Array.prototype leaves, which underIndexes puts back", () => {
    const before = builtInsState();
    const length = Array.prototype.length;
    try {
      Object.defineProperty(Array.prototype, "0", { value: 1, configurable: true });
      delete (Array.prototype as unknown as Record<string, unknown>)[0];
      expect(builtInsChanged(before)).toEqual(["Array.prototype.length changed"]);
      restoreBuiltIns(before);
      expect(Array.prototype.length).toBe(length);
      expect(underIndexes(Array.prototype, ["0", "1"], { value: 1, writable: true }, () => [].length)).toEqual({ value: 0 });
      expect(builtInsChanged(before)).toEqual([]);
    } finally {
      Array.prototype.length = length;
    }
  });
});
