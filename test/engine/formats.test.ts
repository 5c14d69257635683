/**
 * @module The engine's object formats (segment, WAL, manifest) and the checksum:
 * round trips, and every kind of damage detected.
 */
import { describe, expect, it } from "vitest";
import { StoreCorruptedError, UnsupportedFormatError } from "taquba";
import { SegmentBuilder, readSegment } from "../../runtime/engine/segment-format.js";
import { WalBuilder, decodeWal, encodeFence } from "../../runtime/engine/wal-format.js";
import { decodeManifest, encodeManifest, emptyManifest } from "../../runtime/engine/manifest.js";

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

  it("keeps tombstones apart from empty values", () => {
    const b = new SegmentBuilder();
    b.add("a", new Uint8Array(0));
    b.add("b", undefined);
    b.add("c", enc("x"));
    expect(readAll(b.finish())).toEqual([["a", ""], ["b", undefined], ["c", "x"]]);
  });

  it("reads an empty segment and rejects a future version", () => {
    const bytes = new SegmentBuilder().finish();
    expect(readAll(bytes)).toEqual([]);
    const future = Uint8Array.from(bytes);
    future[future.length - 12] = 9; // footer version field
    expect(() => readAll(future)).toThrow(UnsupportedFormatError);
  });
});

describe("WAL format", () => {
  it("round-trips batches and fences, and checks the sequence number against the key", () => {
    const w = new WalBuilder(16);
    w.add([{ kind: "put", key: "a", value: enc("1") }, { kind: "delete", key: "b" }]);
    w.add([]);
    const bytes = w.seal(3, 70);
    const obj = decodeWal("wal/70", bytes, 70);
    expect(obj).toMatchObject({ kind: "batches", epoch: 3, seq: 70 });
    expect(obj.kind === "batches" && obj.batches.map((b) => b.map((o) => o.kind))).toEqual([["put", "delete"], []]);
    expect(() => decodeWal("wal/71", bytes, 71)).toThrow(StoreCorruptedError);
    expect(decodeWal("wal/5", encodeFence(2 ** 40, 5, 69), 5)).toEqual({ kind: "fence", epoch: 2 ** 40, seq: 5, resumeAt: 69 });
  });
});

describe("manifest format", () => {
  it("round-trips and names a future version", () => {
    const m = { ...emptyManifest(), id: 4, epoch: 2, fences: [1, 65] };
    const bytes = encodeManifest(m);
    expect(decodeManifest("manifest/4", bytes, 4)).toEqual(m);
    expect(() => decodeManifest("manifest/5", bytes, 5)).toThrow(StoreCorruptedError);
    const future = Uint8Array.from(bytes);
    future[4] = 2;
    expect(() => decodeManifest("manifest/4", future, 4)).toThrow(/format version 2/);
  });
});

describe("checksum", () => {
  it("the portable CRC-32 agrees with the native one", async () => {
    const { crc32, portableCrc32 } = await import("../../runtime/engine/checksum.js");
    const data = new TextEncoder().encode("The quick brown fox jumps over the lazy dog");
    expect(portableCrc32(data)).toBe(0x414fa339);
    expect(crc32(data)).toBe(0x414fa339);
    expect(portableCrc32(data.subarray(10), portableCrc32(data.subarray(0, 10)))).toBe(0x414fa339);
  });
});
