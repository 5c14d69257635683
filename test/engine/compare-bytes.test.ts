/**
 * @module The engine's one bytewise comparison (byte-io.ts), which merges,
 * lookups and segment checks all use: its sign is `Buffer.compare`'s for
 * random keys that share prefixes, empty keys, bytes 0x00 and 0xff, as
 * whole arrays and at offsets inside larger ones, `Buffer` or `Uint8Array`.
 */
import { describe, expect, it } from "vitest";
import { compareBytes, compareBytesAt } from "../../runtime/engine/byte-io.js";
import { testRandom, type TestRandom } from "../support/seed.js";

/** Keys drawn so that pairs often share a prefix, differ only in length, or hold the extreme bytes. */
function keyOf(r: TestRandom, prefixes: readonly Uint8Array[]): Uint8Array {
  const head = r.int(4) === 0 ? new Uint8Array(0) : prefixes[r.int(prefixes.length)]!;
  const tail = Uint8Array.from({ length: r.int(4) }, () => [0x00, 0xff, 0x7f, 0x80, r.int(256)][r.int(5)]!);
  const out = new Uint8Array(head.length + tail.length);
  out.set(head);
  out.set(tail, head.length);
  return out;
}

/** `key` at offset `at` of a larger array filled with `fill` around it, as a Buffer or a plain Uint8Array. */
function embed(key: Uint8Array, at: number, fill: number, asBuffer: boolean): Uint8Array {
  const out = asBuffer ? Buffer.alloc(at + key.length + 3, fill) : new Uint8Array(at + key.length + 3).fill(fill);
  out.set(key, at);
  return out;
}

const sign = (n: number) => Math.sign(n);

describe("compareBytes and compareBytesAt", () => {
  it("order as Buffer.compare does, whole and at offsets", () => {
    const r = testRandom("compare bytes");
    const prefixes = Array.from({ length: 6 }, () => Uint8Array.from({ length: r.int(40) }, () => r.int(256)));
    prefixes.push(new Uint8Array([0x00, 0x00]), new Uint8Array([0xff, 0xff, 0xff]), new TextEncoder().encode("j/q/01J"));
    for (let n = 0; n < 20_000; n++) {
      const a = keyOf(r, prefixes);
      const b = r.int(5) === 0 ? a.slice() : keyOf(r, prefixes);
      const want = Buffer.compare(Buffer.from(a), Buffer.from(b));
      expect(sign(compareBytes(a, a.length, b, b.length)), `${a} vs ${b}`).toBe(want);
      // Only the first `al` and `bl` bytes count, whatever follows them.
      const ab = embed(a, 0, r.int(256), r.int(2) === 0);
      const bb = embed(b, 0, r.int(256), r.int(2) === 0);
      expect(sign(compareBytes(ab, a.length, bb, b.length))).toBe(want);
      const at = r.int(8);
      const bt = r.int(8);
      const ae = embed(a, at, r.int(256), r.int(2) === 0);
      const be = embed(b, bt, r.int(256), r.int(2) === 0);
      expect(sign(compareBytesAt(ae, at, a.length, be, bt, b.length)), `${a}@${at} vs ${b}@${bt}`).toBe(want);
      // Both keys in one buffer, as a segment check compares neighbours.
      const both = Buffer.concat([Buffer.from([0xff]), a, Buffer.from([0x00]), b]);
      expect(sign(compareBytesAt(both, 1, a.length, both, a.length + 2, b.length))).toBe(want);
    }
  });

  it("empty keys: equal to each other, before any other", () => {
    const empty = new Uint8Array(0);
    expect(compareBytes(empty, 0, empty, 0)).toBe(0);
    expect(compareBytes(empty, 0, Uint8Array.of(0), 1)).toBeLessThan(0);
    expect(compareBytes(Uint8Array.of(0), 1, empty, 0)).toBeGreaterThan(0);
    expect(compareBytesAt(Uint8Array.of(9, 9), 2, 0, Uint8Array.of(0xff), 1, 0)).toBe(0);
  });
});
