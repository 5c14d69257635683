/**
 * @module The engine's object formats (segment, WAL, manifest) and the checksum:
 * round trips, and every kind of damage detected.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, StoreCorruptedError, UnsupportedFormatError, ValidationError, WriteBatch } from "taquba";
import {
  SEGMENT_FORMAT_VERSION,
  SegmentBuilder,
  decodeBlock,
  decodeSegmentIndex,
  readBlockEntries,
  readSegment,
  segmentIndexStart,
} from "../../runtime/engine/segment-format.js";
import { ByteWriter, writeU64 } from "../../runtime/engine/byte-io.js";
import { WalBuilder, batchBound, decodeWal, encodeFence, readBatchOps } from "../../runtime/engine/wal-format.js";
import type { BatchOp } from "../../runtime/engine/write-batch.js";
import { pack } from "msgpackr";
import { crc32 } from "../../runtime/engine/checksum.js";
import { futureManifest, futureSegment } from "../support/future-format.js";
import { manifestOfVersion2, segmentOfVersion1 } from "../support/earlier-formats.js";
import { MANIFEST_FORMAT_VERSION, decodeManifest, encodeManifest, emptyManifest, segmentRuns } from "../../runtime/engine/manifest.js";

const enc = (s: string) => new TextEncoder().encode(s);

function readAll(bytes: Uint8Array): Array<[string, string | undefined]> {
  const out: Array<[string, string | undefined]> = [];
  readSegment("seg/x", bytes, (k, v) => out.push([k, v === undefined ? undefined : new TextDecoder().decode(v)]));
  return out;
}

describe("segment format", () => {
  it("round-trips entries across many blocks and detects a flipped bit in any block", () => {
    const b = new SegmentBuilder(256);
    const expected: Array<[string, string]> = [];
    for (let i = 0; i < 500; i++) {
      const k = `key/${String(i).padStart(4, "0")}`;
      b.add(k, enc(`v${i}`));
      expected.push([k, `v${i}`]);
    }
    const bytes = b.finish();
    expect(readAll(bytes)).toEqual(expected);
    for (const at of [0, 300, 1000, bytes.length >> 1, bytes.length - 50, bytes.length - 1]) {
      const bad = Uint8Array.from(bytes);
      bad[at] = bad[at]! ^ 1;
      expect(() => readAll(bad), `flip at ${at}`).toThrow(StoreCorruptedError);
    }
    expect(() => readAll(bytes.subarray(0, bytes.length - 1))).toThrow(StoreCorruptedError);
    expect(() => readAll(bytes.subarray(1))).toThrow(StoreCorruptedError);
  });

  it("ends a block once it holds blockBytes of entries, and never writes an empty one", () => {
    // Entries of 11 bytes each (1 + 4 bytes of key, 1 + 5 of value): a block reaches 33 bytes exactly at its third.
    const b = new SegmentBuilder(33);
    b.add("k/00", enc("vvvvv"));
    expect(b.byteLength).toBe(11);
    for (let i = 1; i < 9; i++) b.add(`k/0${i}`, enc("vvvvv"));
    // The ninth entry ended the third block: finishing adds no block of no entries.
    const bytes = b.finish();
    expect(b.blocks.map((x) => x.entries)).toEqual([3, 3, 3]);
    expect(b.blocks.map((x) => [x.firstKey, x.lastKey])).toEqual([
      ["k/00", "k/02"],
      ["k/03", "k/05"],
      ["k/06", "k/08"],
    ]);
    expect(readAll(bytes)).toHaveLength(9);
  });

  it("keeps tombstones apart from empty values", () => {
    const b = new SegmentBuilder();
    b.add("a", new Uint8Array(0));
    b.add("b", undefined);
    b.add("c", enc("x"));
    expect(readAll(b.finish())).toEqual([
      ["a", ""],
      ["b", undefined],
      ["c", "x"],
    ]);
  });

  it("reads an empty segment and rejects a future version, but a version field altered under its checksum is damage", () => {
    const bytes = new SegmentBuilder().finish();
    expect(readAll(bytes)).toEqual([]);
    expect(() => readAll(futureSegment(bytes, 9))).toThrow(UnsupportedFormatError);
    for (const version of [9, 0, 3]) {
      const altered = Uint8Array.from(bytes);
      altered[altered.length - 12] = version; // footer version field, checksum left as it was
      expect(() => readAll(altered), `version ${version}`).toThrow(StoreCorruptedError);
    }
    expect(() => readAll(futureSegment(bytes, 0))).toThrow(/format version 0, which no taquba writes/);
  });

  it("reads the index from the segment's tail and single blocks, each checked on its own", () => {
    const b = new SegmentBuilder(128);
    const expected: Array<[string, string]> = [];
    for (let i = 0; i < 300; i++) {
      const k = `key/${String(i).padStart(4, "0")}`;
      b.add(k, enc(`value ${i}`));
      expected.push([k, `value ${i}`]);
    }
    const bytes = b.finish();
    const size = bytes.length;
    // A short tail holds the footer; the index starts where it says.
    const from = segmentIndexStart("seg/x", bytes.subarray(size - 100), size);
    const blocks = decodeSegmentIndex("seg/x", bytes.subarray(from), size);
    expect(blocks).toEqual(b.blocks);
    expect(blocks.length).toBeGreaterThan(10);
    // A longer tail reads the same.
    expect(decodeSegmentIndex("seg/x", bytes.subarray(from - 50), size)).toEqual(blocks);
    const read: Array<[string, string]> = [];
    blocks.forEach((info, i) => {
      decodeBlock("seg/x", i, info, bytes.subarray(info.offset, info.offset + info.length), (k, v) => read.push([k, new TextDecoder().decode(v)]));
    });
    expect(read).toEqual(expected);
    // Damage anywhere in the index or footer, or in a block, is caught by the reader of that part.
    for (const at of [from, from + 7, size - 30, size - 1]) {
      const bad = Uint8Array.from(bytes);
      bad[at] = bad[at]! ^ 1;
      expect(() => decodeSegmentIndex("seg/x", bad.subarray(from), size), `flip at ${at}`).toThrow(StoreCorruptedError);
    }
    const info = blocks[3]!;
    const block = Uint8Array.from(bytes.subarray(info.offset, info.offset + info.length));
    block[5] = block[5]! ^ 1;
    expect(() => decodeBlock("seg/x", 3, info, block, () => {})).toThrow(/block 3 checksum mismatch/);
    // A block that is not the one its index entry describes.
    const other = blocks[4]!;
    expect(() => decodeBlock("seg/x", 3, info, bytes.subarray(other.offset, other.offset + info.length), () => {})).toThrow(StoreCorruptedError);
    expect(() => decodeBlock("seg/x", 3, info, bytes.subarray(info.offset, info.offset + info.length - 1), () => {})).toThrow(/is \d+ bytes, its index says/);
    // A tail that does not reach the index, or a size that is not the segment's, is refused.
    expect(() => decodeSegmentIndex("seg/x", bytes.subarray(from + 1), size)).toThrow(StoreCorruptedError);
    expect(() => segmentIndexStart("seg/x", bytes.subarray(size - 100), size + 1)).toThrow(StoreCorruptedError);
    expect(() => segmentIndexStart("seg/x", bytes.subarray(size - 10), size)).toThrow(/holds no footer/);
  });

  it("gives each block's checksum in the index: a sound block of another segment with the same bounds is refused, and a version 1 segment reads without them", () => {
    const build = (tag: string) => {
      const b = new SegmentBuilder(128);
      for (let i = 0; i < 60; i++) b.add(`key/${String(i).padStart(4, "0")}`, enc(`${tag} ${i}`.padEnd(80, tag)));
      const bytes = b.finish();
      return { bytes, sum: b.sum, blocks: decodeSegmentIndex("seg/x", bytes, bytes.length) };
    };
    const mine = build("a");
    const twin = build("b");
    expect(mine.blocks.map((x) => [x.offset, x.length, x.firstKey, x.lastKey])).toEqual(twin.blocks.map((x) => [x.offset, x.length, x.firstKey, x.lastKey]));
    expect(mine.blocks.every((x, i) => x.crc === mine.bytes.readUInt32LE(x.offset + x.length - 4) && x.crc !== twin.blocks[i]!.crc)).toBe(true);
    // The sum is the tail checksum, and it differs between the twins.
    expect(mine.sum).toBe(mine.bytes.readUInt32LE(mine.bytes.length - 4));
    expect(mine.sum).not.toBe(twin.sum);
    const info = mine.blocks[2]!;
    const other = twin.bytes.subarray(info.offset, info.offset + info.length);
    expect(() => decodeBlock("seg/x", 2, info, other, () => {})).toThrow(/block 2 is not the block its index lists/);
    expect(() => readBlockEntries("seg/x", 2, info, other, () => {})).toThrow(StoreCorruptedError);
    // The whole segment's read checks its blocks against the index too.
    const mixed = Buffer.from(mine.bytes);
    other.copy(mixed, info.offset);
    expect(() => readAll(mixed)).toThrow(/block 2 is not the block its index lists/);
    // As a version 1 writer laid it out: no checksums in the index, read as before.
    const old = segmentOfVersion1(mine.bytes);
    const oldBlocks = decodeSegmentIndex("seg/x", old, old.length);
    expect(oldBlocks.map((x) => x.crc)).toEqual(oldBlocks.map(() => undefined));
    expect(readAll(old)).toEqual(readAll(mine.bytes));
  });

  it("the block reader refuses a segment of a newer format version, saying to upgrade", () => {
    const b = new SegmentBuilder(64);
    b.add("a", enc("1"));
    const bytes = futureSegment(b.finish(), SEGMENT_FORMAT_VERSION + 1); // one past this engine's
    const caught = (read: () => unknown) => {
      try {
        read();
      } catch (e) {
        return e;
      }
      return undefined;
    };
    // The footer alone cannot show the checksum: the reader reads on from where it starts, then refuses.
    const start = segmentIndexStart("seg/x", bytes.subarray(bytes.length - 44), bytes.length);
    const err = caught(() => decodeSegmentIndex("seg/x", bytes.subarray(start), bytes.length));
    expect(err).toBeInstanceOf(UnsupportedFormatError);
    expect((err as Error).message).toMatch(/seg\/x.*upgrade taquba/);
    // A tail that holds the checksummed part is refused at once.
    expect(caught(() => segmentIndexStart("seg/x", bytes, bytes.length))).toBeInstanceOf(UnsupportedFormatError);
    // A version field altered without its checksum is damage, not a newer taquba.
    const flipped = Uint8Array.from(b.finish());
    flipped[flipped.length - 12] = SEGMENT_FORMAT_VERSION + 1;
    expect(caught(() => segmentIndexStart("seg/x", flipped, flipped.length))).toBeInstanceOf(StoreCorruptedError);
    expect(caught(() => decodeSegmentIndex("seg/x", flipped.subarray(start), flipped.length))).toBeInstanceOf(StoreCorruptedError);
  });
});

/** One block of a hand-made segment: its entries as written, and how many the index says. */
interface CraftedBlock {
  write: (w: ByteWriter) => void;
  entries: number;
}

/**
 * A segment laid out as segment-format.ts describes, from blocks written by
 * hand, with every checksum right unless `patch` changes something after
 * (`index` edits the block list before it is written; `footer` edits the
 * footer before its checksum is computed).
 */
function craft(
  blocks: CraftedBlock[],
  patch: { index?: (infos: Array<{ offset: number; length: number; entries: number }>) => void; footer?: (buf: Buffer, at: number) => void } = {},
): Buffer {
  const w = new ByteWriter(64);
  const infos: Array<{ offset: number; length: number; entries: number }> = [];
  for (const b of blocks) {
    const start = w.pos;
    b.write(w);
    w.u32(crc32(w.bytes().subarray(start, w.pos)));
    infos.push({ offset: start, length: w.pos - start, entries: b.entries });
  }
  patch.index?.(infos);
  const filterOffset = w.pos;
  w.u8(0);
  w.varint(0);
  const indexOffset = w.pos;
  w.varint(infos.length);
  for (const i of infos) {
    w.varint(i.offset);
    w.varint(i.length);
    w.varint(i.entries);
    w.str("");
    w.str("");
  }
  const indexLength = w.pos - indexOffset;
  const at = w.pos;
  w.ensure(44);
  w.pos += 44;
  const buf = Buffer.from(w.bytes());
  writeU64(buf, at, filterOffset);
  buf.writeUInt32LE(indexOffset - filterOffset, at + 8);
  writeU64(buf, at + 12, indexOffset);
  buf.writeUInt32LE(indexLength, at + 20);
  writeU64(
    buf,
    at + 24,
    infos.reduce((n, i) => n + i.entries, 0),
  );
  buf.writeUInt16LE(1, at + 32);
  buf.writeUInt16LE(0, at + 34);
  buf.writeUInt32LE(0x47535154, at + 36);
  patch.footer?.(buf, at);
  buf.writeUInt32LE(crc32(buf.subarray(filterOffset, at + 40)), at + 40);
  return buf;
}

/** Writes entries: [key, value] or [key, undefined] (a tombstone), or [key, tag, bytes] for a raw length tag. */
function block(...entries: Array<[string, string | undefined] | [string, number, Uint8Array]>): CraftedBlock {
  return {
    entries: entries.length,
    write: (w) => {
      for (const e of entries) {
        w.str(e[0]);
        if (e.length === 3) {
          w.varint(e[1]);
          w.raw(e[2]);
        } else if (e[1] === undefined) w.varint(1);
        else {
          const v = enc(e[1]);
          w.varint(v.byteLength * 2);
          w.raw(v);
        }
      }
    },
  };
}

describe("segment damage", () => {
  const damage = (bytes: Uint8Array, expected: RegExp) => {
    const err = (() => {
      try {
        readAll(bytes);
      } catch (e) {
        return e;
      }
    })();
    expect(err, String(expected)).toBeInstanceOf(StoreCorruptedError);
    expect((err as Error).message).toMatch(expected);
    expect((err as Error).message).toContain("seg/x");
    // Named once, as what it is: not also as an undecodable segment.
    if (!String(expected).includes("undecodable")) expect((err as Error).message).not.toMatch(/undecodable/);
  };

  it("reads a well-formed hand-made segment, including a block of no entries", () => {
    expect(readAll(craft([block(["a", "1"], ["b", undefined]), { entries: 0, write: () => {} }, block(["c", ""])]))).toEqual([
      ["a", "1"],
      ["b", undefined],
      ["c", ""],
    ]);
    expect(readAll(craft([]))).toEqual([]);
  });

  it("lets an error of the caller's entry callback through as it is", () => {
    const mine = new Error("the caller's own failure");
    expect(() =>
      readSegment("seg/x", craft([block(["a", "1"])]), () => {
        throw mine;
      }),
    ).toThrow(mine);
  });

  // Each check of readSegment, reached by damage that passes the checks before it.
  it("names every kind of damage to the footer and index", () => {
    damage(new Uint8Array(43), /43 bytes, shorter than its footer/);
    damage(new Uint8Array(44), /bad magic bytes/);
    const good = craft([block(["a", "1"])]);
    const foreign = Buffer.from(good);
    foreign[foreign.length - 8]! ^= 1; // the magic bytes
    damage(foreign, /bad magic bytes/);
    const future = craft([block(["a", "1"])], { footer: (b, at) => b.writeUInt16LE(SEGMENT_FORMAT_VERSION + 1, at + 32) });
    expect(() => readAll(future)).toThrow(UnsupportedFormatError);
    expect(() => readAll(future)).toThrow(/seg\/x/);
    // The filter's length, then the index's, disagree with the offsets.
    damage(craft([block(["a", "1"])], { footer: (b, at) => b.writeUInt32LE(b.readUInt32LE(at + 8) + 1, at + 8) }), /footer offsets do not match its size/);
    damage(craft([block(["a", "1"])], { footer: (b, at) => b.writeUInt32LE(b.readUInt32LE(at + 20) + 1, at + 20) }), /footer offsets do not match its size/);
    const index = Buffer.from(good);
    index[index.length - 45]! ^= 1; // the index, just before the footer
    damage(index, /index checksum mismatch/);
    // Damage inside the index that its checksum covers (recomputed): the entry count.
    damage(craft([block(["a", "1"], ["b", "2"])], { footer: (b, at) => writeU64(b, at + 24, 3) }), /holds 2 entries, its footer says 3/);
  });

  it("names every kind of damage to the blocks", () => {
    const two = [block(["a", "1"]), block(["b", "2"])];
    damage(
      craft(two, {
        index: (i) => {
          i[1]!.offset += 1;
          i[1]!.length -= 1;
        },
      }),
      /block 1 lies outside the data/,
    );
    damage(
      craft(two, {
        index: (i) => {
          i[1]!.length = 3;
        },
      }),
      /block 1 lies outside the data/,
    );
    damage(
      craft(two, {
        index: (i) => {
          i[1]!.length += 1;
        },
      }),
      /block 1 lies outside the data/,
    );
    // The index lists the first block only: the second is data no block covers.
    damage(craft(two, { index: (i) => void i.pop() }), /blocks do not cover the data/);
    const flipped = craft(two);
    flipped[1]! ^= 1; // the first block's key
    damage(flipped, /block 0 checksum mismatch/);
    damage(craft([block(["b", "1"], ["a", "2"])]), /keys out of order at block 0/);
    damage(craft([block(["a", "1"], ["a", "2"])]), /keys out of order at block 0/);
    // A key that is a proper prefix of the one before it sorts first.
    damage(craft([block(["ab", "1"], ["a", "2"])]), /keys out of order at block 0/);
    damage(craft([block(["b", "1"]), block(["a", "2"])]), /keys out of order at block 1/);
    damage(craft([block(["a", 3, enc("x")])]), /tombstone with a value at block 0/);
    const trailing: CraftedBlock = {
      entries: 1,
      write: (w) => {
        block(["a", "1"]).write(w);
        w.u8(7);
      },
    };
    damage(craft([trailing]), /block 0 has 1 bytes past its entries/);
    damage(craft([{ entries: 2, write: (w) => block(["a", "1"]).write(w) }]), /undecodable segment/);
  });

  // The whole segment's read and a block read alone share one walk: damage inside a block is named alike by both.
  it("a block read alone (raw and decoded) names the damage inside it as the whole segment's read does", () => {
    const alone = (b: CraftedBlock, firstKey: string, lastKey: string): string[] => {
      const seg = craft([b]);
      const length = seg.readUInt32LE(seg.length - 44); // the filter offset: the one block ends there
      const info = { offset: 0, length, entries: b.entries, firstKey, lastKey };
      const bytes = seg.subarray(0, length);
      return [() => readBlockEntries("seg/x", 0, info, bytes, () => {}), () => decodeBlock("seg/x", 0, info, bytes, () => {})].map((read) => {
        try {
          read();
        } catch (e) {
          expect(e).toBeInstanceOf(StoreCorruptedError);
          return (e as Error).message;
        }
        return "read without complaint";
      });
    };
    const trailing: CraftedBlock = {
      entries: 1,
      write: (w) => {
        block(["a", "1"]).write(w);
        w.u8(7);
      },
    };
    const cases: Array<[CraftedBlock, string, string, RegExp]> = [
      [block(["b", "1"], ["a", "2"]), "b", "a", /keys out of order at block 0/],
      [block(["a", "1"], ["a", "2"]), "a", "a", /keys out of order at block 0/],
      [block(["ab", "1"], ["a", "2"]), "ab", "a", /keys out of order at block 0/],
      [block(["a", 3, enc("x")]), "a", "a", /tombstone with a value at block 0/],
      [trailing, "a", "a", /block 0 has 1 bytes past its entries/],
      [{ entries: 2, write: (w) => block(["a", "1"]).write(w) }, "a", "b", /undecodable segment/],
    ];
    for (const [b, firstKey, lastKey, expected] of cases) {
      damage(craft([b]), expected);
      for (const message of alone(b, firstKey, lastKey)) expect(message, String(expected)).toMatch(expected);
    }
    // What only a block read alone checks: its keys against its index entry.
    const good = block(["a", "1"], ["b", "2"]);
    expect(alone(good, "a", "b")).toEqual(["read without complaint", "read without complaint"]);
    for (const m of alone(good, "0", "b")) expect(m).toMatch(/keys out of order at block 0/);
    for (const m of alone(good, "a", "c")) expect(m).toMatch(/block 0 does not end at the key its index lists/);
  });
});

describe("WAL format", () => {
  it("a batch whose encoding throws part way is left out whole: the batches before and after it decode", () => {
    const w = new WalBuilder(16);
    w.add([{ kind: "put", key: "a", value: enc("1") }]);
    // A value whose length cannot be read once its key is written (as a buffer that cannot grow would throw).
    const broken = enc("2");
    Object.defineProperty(broken, "byteLength", {
      get() {
        throw new RangeError("Array buffer allocation failed");
      },
    });
    expect(() =>
      w.add([
        { kind: "delete", key: "x" },
        { kind: "put", key: "b", value: broken },
      ]),
    ).toThrow(RangeError);
    w.add([{ kind: "put", key: "c", value: enc("3") }]);
    const obj = decodeWal("wal/7", w.seal(1, 7), 7);
    expect(obj.kind === "batches" && obj.batches.map((b) => b.map((o) => o.key))).toEqual([["a"], ["c"]]);
  });

  it("a batch larger than the room reserved for it throws and is left out whole, never written cut short", () => {
    const w = new WalBuilder(16);
    w.add([{ kind: "put", key: "a", value: enc("1") }]);
    const big = [{ kind: "delete" as const, key: "k".repeat(100) }];
    // The room given is what fits in the buffer now: every byte past it would be dropped without an error.
    expect(() => w.add(big, 8)).toThrow(/past the 8 reserved/);
    w.add([{ kind: "put", key: "c", value: enc("3") }]);
    const obj = decodeWal("wal/7", w.seal(1, 7), 7);
    expect(obj.kind === "batches" && obj.batches.map((b) => b.map((o) => o.key))).toEqual([["a"], ["c"]]);
  });

  it("a room too small is refused even where the buffer has space left past it, and a non-ASCII key past the buffer is never cut short", () => {
    const w = new WalBuilder(4096);
    w.add([{ kind: "put", key: "a", value: enc("1") }]);
    // The buffer holds 4 KiB: the batch fits the buffer but not the room given for it.
    expect(() => w.add([{ kind: "delete", key: "k".repeat(100) }], 8)).toThrow(/past the 8 reserved/);
    const tight = new WalBuilder(16);
    // Two-byte characters take the slow path: a write past the buffer's end, or the check of the room after the batch, throws; the key is never cut short.
    expect(() => tight.add([{ kind: "delete", key: "\u00e9".repeat(100) }], 8)).toThrow(/past the 8 reserved|out of range|bounds/i);
    for (const b of [w, tight]) b.add([{ kind: "put", key: "c", value: enc("3") }]);
    const obj = decodeWal("wal/7", w.seal(1, 7), 7);
    expect(obj.kind === "batches" && obj.batches.map((b) => b.map((o) => o.key))).toEqual([["a"], ["c"]]);
    const tightObj = decodeWal("wal/7", tight.seal(1, 7), 7);
    expect(tightObj.kind === "batches" && tightObj.batches.map((b) => b.map((o) => o.key))).toEqual([["c"]]);
  });

  it("the room reserved for a batch bounds its bytes for keys of every UTF-8 width, and the batch decodes as given", () => {
    const keys = ["a".repeat(200), "é".repeat(100), "\u20ac".repeat(100), "\u{1F600}".repeat(60), "mixed-é-\u20ac-\u{1F600}"];
    const ops = keys.map((key, i) => ({ kind: "put" as const, key, value: new Uint8Array(i * 300) }));
    const w = new WalBuilder(16);
    for (const op of [...ops, { kind: "delete" as const, key: keys[2]! }]) {
      const before = w.byteLength;
      w.add([op]);
      expect(batchBound([op])).toBeGreaterThanOrEqual(w.byteLength - before);
    }
    w.add(ops);
    const obj = decodeWal("wal/7", w.seal(1, 7), 7);
    const read = obj.kind === "batches" ? obj.batches[obj.batches.length - 1]! : [];
    expect(read.map((o) => [o.key, o.kind === "put" ? o.value.byteLength : -1])).toEqual(keys.map((k, i) => [k, i * 300]));
  });

  it("round-trips batches and fences, and checks the sequence number against the key", () => {
    const w = new WalBuilder(16);
    w.add([
      { kind: "put", key: "a", value: enc("1") },
      { kind: "delete", key: "b" },
    ]);
    w.add([]);
    const bytes = w.seal(3, 70);
    const obj = decodeWal("wal/70", bytes, 70);
    expect(obj).toMatchObject({ kind: "batches", epoch: 3, seq: 70 });
    expect(obj.kind === "batches" && obj.batches.map((b) => b.map((o) => o.kind))).toEqual([["put", "delete"], []]);
    expect(() => decodeWal("wal/71", bytes, 71)).toThrow(StoreCorruptedError);
    expect(decodeWal("wal/5", encodeFence(2 ** 40, 5, 69), 5)).toEqual({ kind: "fence", epoch: 2 ** 40, seq: 5, watermark: 4, resumeAt: 69 });
    // The durable watermark at sealing travels in the header; unknown reads as -1.
    expect(decodeWal("wal/70", new WalBuilder().seal(3, 70, 66), 70).watermark).toBe(66);
    expect(obj.watermark).toBe(-1);
  });

  // Each check of decodeWal, reached by damage that passes the checks before it
  // (the checksum is recomputed where the damage is inside it).
  it("names every kind of damage: short, foreign, altered, future, misplaced, malformed", () => {
    const sealed = () => {
      const w = new WalBuilder(16);
      w.add([{ kind: "put", key: "a", value: enc("1") }]);
      return Buffer.from(w.seal(3, 70));
    };
    const reseal = (b: Buffer) => {
      const end = b.length - 4;
      b.writeUInt32LE(crc32(b.subarray(0, end)), end);
      return b;
    };
    const damage = (b: Uint8Array, expected: RegExp, Err: typeof StoreCorruptedError | typeof UnsupportedFormatError = StoreCorruptedError, seq = 70) => {
      const err = (() => {
        try {
          decodeWal(`wal/${seq}`, b, seq);
        } catch (e) {
          return e;
        }
      })();
      expect(err, String(expected)).toBeInstanceOf(Err);
      expect((err as Error).message).toMatch(expected);
      expect((err as Error).message).toContain(`wal/${seq}`);
    };
    const good = sealed();
    damage(good.subarray(0, 35), /35 bytes, shorter than its header/);
    expect(() => decodeWal("wal/70", good.subarray(0, 36), 70)).not.toThrow(/shorter than its header/);
    const foreign = sealed();
    foreign.writeUInt32LE(foreign.readUInt32LE(0) ^ 1, 0);
    damage(reseal(foreign), /bad magic bytes/);
    const flipped = sealed();
    flipped[33]! ^= 0x40;
    damage(flipped, /checksum mismatch/);
    const future = sealed();
    future.writeUInt16LE(99, 4);
    damage(reseal(Buffer.from(future)), /99/, UnsupportedFormatError);
    // Every version checksums its header, version included: one that fails the checksum is damage, not "future".
    damage(future, /checksum mismatch/);
    const zero = sealed();
    zero.writeUInt16LE(0, 4);
    damage(reseal(zero), /format version 0, which no taquba writes/);
    damage(sealed(), /claims sequence 70 but is stored at 71/, StoreCorruptedError, 71);
    const fenceBackwards = Buffer.from(encodeFence(2, 5, 5));
    damage(fenceBackwards, /malformed fence marker/, StoreCorruptedError, 5);
    const fenceLong = Buffer.from(encodeFence(2, 5, 9));
    const grown = Buffer.concat([fenceLong.subarray(0, fenceLong.length - 4), Buffer.from([0]), Buffer.alloc(4)]);
    damage(reseal(grown), /malformed fence marker/, StoreCorruptedError, 5);
    const unknownKind = sealed();
    unknownKind[6] = 9;
    damage(reseal(unknownKind), /unknown WAL object kind 9/);
    const trailing = sealed();
    const extra = Buffer.concat([trailing.subarray(0, trailing.length - 4), Buffer.from([7, 7]), Buffer.alloc(4)]);
    damage(reseal(extra), /2 unexpected bytes after the last batch/);
    const badTag = sealed();
    badTag[33] = 0xee; // the op tag of the only operation (header 32 bytes, then the op count)
    damage(reseal(badTag), /unknown op tag 238/);
  });
});

describe("batch validation", () => {
  it("copies a plain Uint8Array that has an own property under a name the writers read, and takes other values as they are", () => {
    const readValue = (value: Uint8Array) => (readBatchOps([{ kind: "put", key: "k", value }])[0] as { value: Uint8Array }).value;
    const plain = enc("abc");
    expect(readValue(plain)).toBe(plain);
    const buffer = Buffer.from("abc");
    expect(readValue(buffer)).toBe(buffer);
    for (const name of ["byteLength", "length", "byteOffset", "buffer", "subarray", "slice"]) {
      const given = enc("abc");
      Object.defineProperty(given, name, { get: () => 1 });
      const read = readValue(given);
      expect(read, name).not.toBe(given);
      expect(Object.hasOwn(read, name), name).toBe(false);
      expect([...read], name).toEqual([...enc("abc")]);
    }
  });

  it("names each bad operation (at most 10), and a rejected commit applies nothing", async () => {
    const issues = (ops: unknown[]) => {
      try {
        readBatchOps(ops as BatchOp[]);
      } catch (e) {
        expect(e).toBeInstanceOf(ValidationError);
        return (e as ValidationError).issues;
      }
      return [];
    };
    expect(
      issues([
        { kind: "put", key: "a", value: enc("1") },
        { kind: "delete", key: "b" },
      ]),
    ).toEqual([]);
    expect(issues([{ kind: "put", key: 7, value: enc("1") }])).toEqual(["op 0: the key is not a string"]);
    expect(
      issues([
        { kind: "delete", key: "ok" },
        { kind: "delete", key: "a\ud800" },
      ]),
    ).toEqual(['op 1: key "a\\ud800" contains a lone surrogate, which UTF-8 cannot store']);
    expect(issues([{ kind: "put", key: "v", value: "text" }])).toEqual(['op 0: the value of "v" is not a Uint8Array']);
    expect(issues([{ kind: "merge", key: "m" }])).toEqual(['op 0: unknown kind "merge"']);
    expect(issues(Array.from({ length: 30 }, () => ({ kind: "put", key: 1, value: enc("") })))).toHaveLength(10);
    const engine = await Engine.open(new MemoryStore());
    const err = await engine.commit(new WriteBatch().put("good", enc("1")).put("a\ud800", enc("2"))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect(engine.has("good")).toBe(false);
    await engine.close();
  });

  it("a WAL builder counts its batches and knows its sealed size", () => {
    const w = new WalBuilder(8);
    expect(w.batchCount).toBe(0);
    const empty = w.byteLength;
    expect(w.seal(1, 1).byteLength).toBe(empty);
    const w2 = new WalBuilder(8);
    w2.add([{ kind: "put", key: "a", value: enc("12345") }]);
    w2.add([]);
    expect(w2.batchCount).toBe(2);
    const size = w2.byteLength;
    expect(w2.seal(1, 2).byteLength).toBe(size);
    expect(size).toBeGreaterThan(empty);
  });
});

describe("manifest format", () => {
  const seg = (name: string, run: number, firstKey = "a", lastKey = "z") => ({ name, bytes: 10, entries: 2, firstKey, lastKey, run });

  it("round-trips segment runs and names a future version", () => {
    const m = { ...emptyManifest(), id: 4, epoch: 2, fences: [1, 65], segments: [seg("seg/1", 1), seg("seg/2", 3), seg("seg/3", 3)] };
    const bytes = encodeManifest(m);
    expect(decodeManifest("manifest/4", bytes, 4)).toEqual(m);
    expect(segmentRuns(m).map((r) => r.map((s) => s.name))).toEqual([["seg/1"], ["seg/2", "seg/3"]]);
    expect(() => decodeManifest("manifest/5", bytes, 5)).toThrow(StoreCorruptedError);
    expect(() => decodeManifest("manifest/4", futureManifest(bytes, MANIFEST_FORMAT_VERSION + 1), 4)).toThrow(UnsupportedFormatError);
    expect(() => decodeManifest("manifest/4", futureManifest(bytes, MANIFEST_FORMAT_VERSION + 1), 4)).toThrow(
      new RegExp(`format version ${MANIFEST_FORMAT_VERSION + 1}`),
    );
    // The version field altered without the checksum a later version writes: damage, whichever bit flipped.
    for (let bit = 0; bit < 16; bit++) {
      const altered = Buffer.from(bytes);
      altered.writeUInt16LE(altered.readUInt16LE(4) ^ (1 << bit), 4);
      const version = altered.readUInt16LE(4);
      if (version === 1) continue; // an older version this engine reads: the body decides
      expect(() => decodeManifest("manifest/4", altered, 4), `version ${version}`).toThrow(StoreCorruptedError);
    }
  });

  it("round-trips the last segment number, reads a manifest without it, and rejects a malformed one", () => {
    const m = { ...emptyManifest(), id: 3, epoch: 2, lastSegment: 7 };
    expect(decodeManifest("manifest/3", encodeManifest(m), 3)).toEqual(m);
    expect(decodeManifest("manifest/3", encodeManifest({ ...emptyManifest(), id: 3 }), 3).lastSegment).toBeUndefined();
    for (const bad of [-1, 1.5, "7"]) {
      const malformed = { ...emptyManifest(), id: 3, lastSegment: bad as unknown as number };
      expect(() => decodeManifest("manifest/3", encodeManifest(malformed), 3)).toThrow(/missing or malformed/);
    }
  });

  it("reads a version 1 manifest (one snapshot, no runs) as run 0", () => {
    const v2 = encodeManifest({ ...emptyManifest(), id: 7, segments: [seg("seg/1", 0, "a", "m"), seg("seg/2", 0, "n", "z")] });
    // Rewrite as version 1: the body without run fields, the old version number, a fresh checksum.
    const body = pack({
      id: 7,
      epoch: 0,
      walNext: 1,
      fences: [],
      createdAt: 0,
      segments: [1, 2].map((n) => ({ name: `seg/${n}`, bytes: 10, entries: 2, firstKey: "a", lastKey: "z" })),
    });
    const v1 = Buffer.concat([v2.subarray(0, 12), body]);
    v1.writeUInt16LE(1, 4);
    v1.writeUInt32LE(crc32(body), 8);
    const m = decodeManifest("manifest/7", v1, 7);
    expect(m.segments.map((s) => s.run)).toEqual([0, 0]);
    expect(segmentRuns(m)).toHaveLength(1);
  });

  it("round-trips each segment's sum, reads a version 2 manifest (body checksum, no sums), and rejects a malformed sum", () => {
    const m = { ...emptyManifest(), id: 5, segments: [{ ...seg("seg/1", 1), sum: 0xffffffff }, seg("seg/2", 2), { ...seg("seg/3", 2), sum: 0 }] };
    expect(decodeManifest("manifest/5", encodeManifest(m), 5)).toEqual(m);
    const v2 = manifestOfVersion2("manifest/5", encodeManifest(m), new Map());
    expect(v2.readUInt16LE(4)).toBe(2);
    expect(decodeManifest("manifest/5", v2, 5).segments.map((s) => s.sum)).toEqual([undefined, undefined, undefined]);
    // A version 2 manifest never carried a sum: one there is no field of its.
    const body = pack({ id: 5, epoch: 0, walNext: 1, fences: [], createdAt: 0, segments: [{ ...seg("seg/1", 1), sum: 7 }] });
    const v2WithSum = Buffer.concat([v2.subarray(0, 12), body]);
    v2WithSum.writeUInt32LE(crc32(body), 8);
    expect(() => decodeManifest("manifest/5", v2WithSum, 5)).toThrow(/missing or malformed/);
    for (const bad of [-1, 1.5, "7", 2 ** 32]) {
      const malformed = { ...emptyManifest(), id: 5, segments: [{ ...seg("seg/1", 1), sum: bad as unknown as number }] };
      expect(() => decodeManifest("manifest/5", encodeManifest(malformed), 5), String(bad)).toThrow(/missing or malformed/);
    }
  });

  it("rejects runs out of order and a version 2 segment without a run", () => {
    const m = { ...emptyManifest(), id: 1, segments: [seg("seg/1", 5), seg("seg/2", 3)] };
    expect(() => decodeManifest("manifest/1", encodeManifest(m), 1)).toThrow(/runs are out of order/);
    const noRun = { ...emptyManifest(), id: 1, segments: [{ ...seg("seg/1", 1), run: undefined as unknown as number }] };
    expect(() => decodeManifest("manifest/1", encodeManifest(noRun), 1)).toThrow(/missing or malformed/);
  });
});
