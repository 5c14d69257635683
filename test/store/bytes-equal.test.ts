/**
 * @module The one byte comparison: the loop below 33 bytes, the native
 * comparison above, and views that start inside a larger buffer.
 */
import { describe, expect, it } from "vitest";
import { bytesEqual } from "../../runtime/store/bytes-equal.js";

function filled(n: number, seed = 7): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (i * 31 + seed) & 0xff;
  return out;
}

/** Toggles bits `mask` of byte `i`. */
function flip(bytes: Uint8Array, i: number, mask: number): void {
  bytes[i] = bytes[i]! ^ mask;
}

describe("bytesEqual", () => {
  for (const n of [0, 1, 32, 33, 1 << 20]) {
    it(`holds for equal arrays of ${n} bytes and not when the last byte differs`, () => {
      const a = filled(n);
      const b = filled(n);
      expect(bytesEqual(a, b)).toBe(true);
      expect(bytesEqual(b, a)).toBe(true);
      if (n === 0) return;
      flip(b, n - 1, 1);
      expect(bytesEqual(a, b)).toBe(false);
      expect(bytesEqual(b, a)).toBe(false);
      // And the first byte, so neither end is skipped.
      flip(b, n - 1, 1);
      flip(b, 0, 0x80);
      expect(bytesEqual(a, b)).toBe(false);
    });
  }

  it("is false when only the lengths differ, equal prefixes included", () => {
    expect(bytesEqual(filled(32), filled(33))).toBe(false);
    expect(bytesEqual(filled(33), filled(32))).toBe(false);
    expect(bytesEqual(new Uint8Array(0), new Uint8Array(1))).toBe(false);
    expect(bytesEqual(filled(100), filled(101))).toBe(false);
  });

  for (const n of [5, 32, 33, 4096]) {
    it(`compares only the range of subarray views (${n} bytes at an offset)`, () => {
      const big = filled(n + 40);
      const other = new Uint8Array(n + 9);
      other.set(big.subarray(17, 17 + n), 3);
      const a = big.subarray(17, 17 + n);
      const b = other.subarray(3, 3 + n);
      expect(bytesEqual(a, b)).toBe(true);
      // Bytes outside the views do not count.
      flip(big, 16, 0xff);
      flip(big, 17 + n, 0xff);
      flip(other, 0, 0xff);
      expect(bytesEqual(a, b)).toBe(true);
      // A view shifted by one byte over the same memory differs.
      expect(bytesEqual(big.subarray(18, 18 + n), b)).toBe(false);
      flip(other, 3 + n - 1, 1);
      expect(bytesEqual(a, b)).toBe(false);
    });
  }

  it("treats a Buffer and a Uint8Array with the same bytes as equal", () => {
    const bytes = filled(64);
    expect(bytesEqual(Buffer.from(bytes), bytes)).toBe(true);
    expect(bytesEqual(bytes, Buffer.from(bytes.subarray(0, 10)))).toBe(false);
  });
});
