import { describe, expect, it } from "vitest";
import { crc32 } from "../../runtime/engine/checksum.js";
import { StoreCorruptedError } from "../../runtime/errors.js";
import { KeyRunBuilder, type KeyRun } from "../../runtime/engine/key-run.js";
import { isPageable, packValue, type PagePolicy } from "../../runtime/engine/paged-value.js";
import { readSegment, readSegmentEntries, SegmentBuilder } from "../../runtime/engine/segment-format.js";
import { compareKeys } from "../../runtime/store/keys.js";
import { testRandom, type TestRandom } from "../support/seed.js";

const POLICY: PagePolicy = { keyPrefixes: ["j/", "é/"], minBytes: 8 };

/** Keys ASCII and not, values of every form a run stores: empty, key tails, small, over 1 KiB. */
function randomEntries(r: TestRandom, n: number): [string, Uint8Array | undefined][] {
  const heads = ["j/", "p/q/5/", "é/", "x/\u{1f600}/", "k"];
  const keys = new Set<string>();
  while (keys.size < n) keys.add(`${heads[r.int(heads.length)]}${String(r.int(1e6)).padStart(7, "0")}${r.int(4) === 0 ? "ü" : ""}`);
  return [...keys].sort(compareKeys).map((k) => {
    const form = r.int(6);
    if (form === 0) return [k, undefined];
    if (form === 1) return [k, new TextEncoder().encode(k.slice(-1 - r.int(Math.min(9, k.length))))];
    const len = form === 2 ? 0 : form === 3 ? 1100 + r.int(900) : r.int(300);
    return [k, Uint8Array.from({ length: len }, () => r.int(256))];
  });
}

function segmentOf(entries: [string, Uint8Array | undefined][]): Buffer {
  const b = new SegmentBuilder(4096);
  for (const [k, v] of entries) b.add(k, v);
  return b.finish();
}

/** The run as open built it before: a string and a view per entry, values packed one by one. */
function viaStrings(seg: Buffer, policy: PagePolicy | undefined): KeyRun {
  const builder = new KeyRunBuilder();
  readSegment("seg", seg, (k, v) => {
    if (v === undefined) return;
    builder.add(k, policy === undefined ? v : isPageable(policy, k, v) ? 7 : packValue(k, v));
  });
  return builder.finish();
}

/** The run as open builds it now, from the segment's bytes. */
function viaBytes(seg: Buffer, policy: PagePolicy | undefined): KeyRun {
  const builder = new KeyRunBuilder();
  readSegmentEntries("seg", seg, (buf, keyAt, keyLen, valueAt, valueLen) => {
    if (valueLen < 0) return;
    const key = buf.toString("utf8", keyAt, keyAt + keyLen);
    const v = buf.subarray(valueAt, valueAt + valueLen);
    if (policy !== undefined && isPageable(policy, key, v)) builder.addPagedBytes(buf, keyAt, keyLen, 7);
    else builder.addHeldBytes(buf, keyAt, keyLen, buf, valueAt, valueLen, policy !== undefined);
  });
  return builder.finish();
}

describe("key runs built from segment bytes", () => {
  for (const policy of [POLICY, undefined]) {
    it(`store exactly what the string path stored (${policy === undefined ? "no paging" : "paging"})`, () => {
      const r = testRandom("key run from segment bytes");
      const entries = randomEntries(r, 3000);
      const seg = segmentOf(entries);
      const before = viaStrings(seg, policy);
      const after = viaBytes(seg, policy);
      expect(after.count).toBe(before.count);
      expect(Buffer.compare(after.bytes, before.bytes)).toBe(0);
      expect([...after.blockStarts]).toEqual([...before.blockStarts]);
      const firstKeys = (run: typeof before) => Array.from({ length: run.blocks }, (_, b) => run.firstKey(b));
      expect(firstKeys(after)).toEqual(firstKeys(before));
      expect(after.lastKey).toBe(before.lastKey);
      expect(after.ascii).toBe(before.ascii);
      expect(after.refs.map((v) => Buffer.from(v).toString("hex"))).toEqual(before.refs.map((v) => Buffer.from(v).toString("hex")));
      // Large values get arrays of their own: the run never keeps the segment's bytes alive.
      for (const v of after.refs) expect(v.buffer).not.toBe(seg.buffer);
    });
  }

  it("refuses a segment whose keys are out of order or repeated, naming the block", () => {
    const seg = segmentOf([
      ["a", new Uint8Array([1])],
      ["b", new Uint8Array([2])],
    ]);
    // The block is 01 'a' 02 01, 01 'b' 02 02, then its CRC-32: change the keys and fix the checksum, so only the order is wrong.
    expect([seg[1], seg[5]]).toEqual([0x61, 0x62]);
    for (const [first, second] of [
      [0x62, 0x61],
      [0x61, 0x61],
    ]) {
      const bad = Buffer.from(seg);
      bad[1] = first!;
      bad[5] = second!;
      bad.writeUInt32LE(crc32(bad.subarray(0, 8)), 8);
      // The index gives the block's checksum too (segment format 2): fix it there, and the tail checksum over it.
      const footer = bad.length - 44;
      const filterOffset = Number(bad.readBigUInt64LE(footer));
      const inIndex = bad.indexOf(seg.subarray(8, 12), Number(bad.readBigUInt64LE(footer + 12)));
      expect(inIndex).toBeGreaterThan(0);
      bad.writeUInt32LE(bad.readUInt32LE(8), inIndex);
      bad.writeUInt32LE(crc32(bad.subarray(filterOffset, footer + 40)), footer + 40);
      expect(() => readSegmentEntries("seg/x", bad, () => {})).toThrow(StoreCorruptedError);
      expect(() => readSegment("seg/x", bad, () => {})).toThrow(/keys out of order at block 0/);
    }
  });
});
