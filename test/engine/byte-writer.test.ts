/**
 * @module The byte writer of the WAL and segment formats: asked for more room
 * than a segment of the default settings needs (a builder asks for a whole
 * segment and its index up front, about 3 GiB at the largest settings), it
 * reserves address space and makes resident only what is written.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { ByteWriter } from "../../runtime/engine/byte-io.js";

/** Writes the same mix of fields to `w`: varints, strings, raw bytes and u32s, about 3 MiB in all. */
function writeMix(w: ByteWriter): void {
  const raw = new Uint8Array(1000).map((_, i) => i % 251);
  for (let i = 0; i < 3000; i++) {
    w.varint(i * 131);
    w.str(`key/${i}/ü`);
    w.raw(raw);
    w.u32(i);
    w.u8(i & 0xff);
  }
}

describe("byte writer", () => {
  it("asked for 3 GiB, allocates about what is written, and writes the same bytes as a writer that grows from small", () => {
    const before = process.memoryUsage().arrayBuffers;
    const big = new ByteWriter(3 * 1024 ** 3);
    writeMix(big);
    const grown = process.memoryUsage().arrayBuffers - before;
    const small = new ByteWriter(16);
    writeMix(small);
    expect(big.pos).toBe(small.pos);
    expect(Buffer.compare(big.bytes(), small.bytes())).toBe(0);
    // Resizable buffers are not counted as array buffers: what the process counts stays small.
    expect(grown).toBeLessThan(64 * 1024 * 1024);
  });

  it("an engine with segments and blocks of 1 GiB checkpoints, reopens and reads its values back, paged or not", async () => {
    const store = new MemoryStore();
    const caps = { maxSegmentBytes: 1024 ** 3, segmentBlockBytes: 1024 ** 3, checkpointWalObjects: 0 };
    const paged = { ...caps, pageValues: { keyPrefixes: ["j/"], minBytes: 8, cacheBytes: 1 << 20 } };
    const engine = await Engine.open(store, paged);
    const value = (k: string) => new TextEncoder().encode(`${k}:${"x".repeat(200)}`);
    const keys = Array.from({ length: 500 }, (_, i) => `j/${String(i).padStart(4, "0")}`);
    const b = new WriteBatch();
    for (const k of keys) b.put(k, value(k));
    await engine.commit(b);
    await engine.checkpoint();
    await engine.commit(new WriteBatch().put("x/1", value("x/1")));
    await engine.checkpoint();
    await engine.close();
    const reopened = await Engine.open(store, caps);
    for (const k of keys) expect(reopened.get(k)).toEqual(value(k));
    await reopened.close();
  });
});

describe("ByteWriter.str", () => {
  /** The bytes a length-prefixed UTF-8 string should be: a LEB128 length, then Buffer's UTF-8. */
  function expected(s: string): Buffer {
    const utf8 = Buffer.from(s, "utf8");
    const len: number[] = [];
    let n = utf8.length;
    while (n >= 0x80) {
      len.push((n & 0x7f) | 0x80);
      n >>>= 7;
    }
    len.push(n);
    return Buffer.concat([Buffer.from(len), utf8]);
  }

  it("writes a varint length and the UTF-8 bytes, ASCII or not, whatever the length and where the first non-ASCII unit is", () => {
    const units = ["a", "/", "\u007f", "\u0080", "\u00e9", "\u07ff", "\u0800", "\uffff", "\u{1f600}", "\ud800"];
    const w = new ByteWriter(16);
    const want: Buffer[] = [];
    for (const len of [0, 1, 2, 31, 126, 127, 128, 129, 200, 300]) {
      const ascii = "k".repeat(len);
      w.str(ascii);
      want.push(expected(ascii));
      for (const u of units) {
        for (const at of [0, len >> 1, len]) {
          const s = ascii.slice(0, at) + u + ascii.slice(at);
          const before = w.pos;
          expect(w.str(s)).toBe(Buffer.byteLength(s, "utf8"));
          want.push(expected(s));
          expect(w.pos - before).toBe(want.at(-1)!.length);
        }
      }
    }
    expect(Buffer.compare(w.bytes(), Buffer.concat(want))).toBe(0);
  });
});
