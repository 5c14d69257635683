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
