/**
 * @module Values that wait to be paged are copied into shared chunks
 * (ValueArena): replayed ones out of their WAL objects, so the objects do
 * not stay alive, and committed ones out of the caller's arrays, so the
 * writer does not hold one allocation per value.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { ChangedKeys } from "../../runtime/engine/changed-keys.js";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import { ArenaValue, heldValue, holdUntilPaged, packValue, ValueArena, type PagePolicy } from "../../runtime/engine/paged-value.js";
import { applyOps } from "../../runtime/engine/apply-ops.js";
import type { BatchOp } from "../../runtime/engine/write-batch.js";

const policy: PagePolicy = { keyPrefixes: ["j/"], minBytes: 64 };

/** A "WAL object": one buffer that every value of the batch is a view into. */
function walBatch(sizes: number[]): { buffer: ArrayBufferLike; ops: BatchOp[] } {
  const total = sizes.reduce((n, s) => n + s, 0);
  const wal = new Uint8Array(total + 100);
  let at = 100;
  const ops: BatchOp[] = sizes.map((size, i) => {
    const value = wal.subarray(at, at + size);
    value.fill((i % 250) + 1);
    at += size;
    return { kind: "put", key: `j/${String(i).padStart(4, "0")}`, value };
  });
  return { buffer: wal.buffer, ops };
}

describe("ValueArena", () => {
  it("replayed values to page hold none of the WAL object's buffer, keep their bytes, and stay in the memtable for the page-out", () => {
    const sizes = Array.from({ length: 1000 }, (_, i) => (i % 97 === 0 ? 20_000 : 64 + (i % 300)));
    const { buffer, ops } = walBatch(sizes);
    const state = new LayeredState({ hold: holdUntilPaged(policy), memtableKeys: 100 });
    const delta = new ChangedKeys();
    applyOps(state, ops, delta, policy, new ValueArena());
    const chunks = new Set<ArrayBufferLike>();
    for (const op of ops) {
      if (op.kind !== "put") continue;
      const held = state.get(op.key);
      // Small values are held as their place in a chunk (no view object each); large ones as an array of their own.
      expect(held).toBeInstanceOf(op.value.byteLength > ValueArena.CHUNK_BYTES / 4 ? Uint8Array : ArenaValue);
      const v = held as Uint8Array | ArenaValue;
      const bytes = heldValue(op.key, v);
      expect(bytes.buffer).not.toBe(buffer);
      expect(Buffer.compare(bytes, op.value)).toBe(0);
      // The page-out finds the value by identity, in the state and in the delta.
      expect(state.holds(op.key, v)).toBe(true);
      expect(delta.get(op.key)).toBe(v);
      chunks.add(bytes.buffer);
    }
    // Small values share 64 KiB chunks; large ones have their own buffer.
    const large = sizes.filter((s) => s > ValueArena.CHUNK_BYTES / 4).length;
    const smallBytes = sizes.filter((s) => s <= ValueArena.CHUNK_BYTES / 4).reduce((n, s) => n + s, 0);
    expect(chunks.size).toBeLessThanOrEqual(large + Math.ceil(smallBytes / (ValueArena.CHUNK_BYTES - 16 * 1024)) + 1);
  });

  it("values given as Buffers (whose slice is a view) get copies of their own, the large ones and the packed ones too", () => {
    // Views into one larger Buffer, as a caller slicing a read buffer makes them.
    const source = Buffer.alloc(60_000, 7);
    const large = source.subarray(100, 20_100);
    const copy = new ValueArena().copy(large) as Uint8Array;
    expect(copy).toBeInstanceOf(Uint8Array);
    expect(copy.buffer).not.toBe(source.buffer);
    expect(Buffer.compare(copy, large)).toBe(0);
    const packed = packValue("k/1", source.subarray(0, 2000));
    expect((packed as Uint8Array).buffer).not.toBe(source.buffer);
    expect(Buffer.compare(packed as Uint8Array, source.subarray(0, 2000))).toBe(0);
  });

  it("without an arena (a commit), the caller's array is kept as it is", () => {
    const { ops } = walBatch([100]);
    const state = new LayeredState({ hold: holdUntilPaged(policy) });
    applyOps(state, ops, undefined, policy);
    expect(state.get("j/0000")).toBe((ops[0] as { value: Uint8Array }).value);
  });

  it("a writer copies committed values to page into shared chunks and still pages them out at the next checkpoint", async () => {
    const engine = await Engine.open(new MemoryStore(), { pageValues: { keyPrefixes: ["j/"], minBytes: 64 }, checkpointWalObjects: 0 });
    const values = Array.from({ length: 200 }, (_, i) => new Uint8Array(100 + (i % 50)).fill((i % 250) + 1));
    const b = new WriteBatch();
    for (const [i, v] of values.entries()) b.put(`j/${String(i).padStart(4, "0")}`, v);
    await engine.commit(b);
    const buffers = new Set<ArrayBufferLike>();
    values.forEach((v, i) => {
      const held = engine.get(`j/${String(i).padStart(4, "0")}`)!;
      expect(Buffer.compare(held, v)).toBe(0);
      expect(held.buffer).not.toBe(v.buffer);
      buffers.add(held.buffer);
    });
    // About 25 KiB of values: one or two chunks, not 200 buffers.
    expect(buffers.size).toBeLessThanOrEqual(2);
    // The page-out still finds each copy by identity.
    await engine.checkpoint();
    expect(() => engine.get("j/0007")).toThrow(/without warming it first/);
    const keys = ["j/0007", "j/0150"];
    for (let p = engine.warm(keys); p !== undefined; p = engine.warm(keys)) await p;
    expect(Buffer.compare(engine.get("j/0150")!, values[150]!)).toBe(0);
    await engine.close();
  });

  it("values read while they wait to be paged keep their bytes after later commits, replacements, a checkpoint and its page-out", async () => {
    const engine = await Engine.open(new MemoryStore(), { pageValues: { keyPrefixes: ["j/"], minBytes: 64 }, checkpointWalObjects: 0 });
    const key = (i: number) => `j/${String(i).padStart(4, "0")}`;
    const first = new WriteBatch();
    for (let i = 0; i < 100; i++) first.put(key(i), new Uint8Array(500).fill(i + 1));
    await engine.commit(first);
    const read = Array.from({ length: 100 }, (_, i) => engine.get(key(i))!);
    const token = engine.valueToken(key(5));
    // Reads of a waiting value are equal bytes, and its token stays the same until a commit replaces it.
    expect(Buffer.compare(engine.get(key(5))!, read[5]!)).toBe(0);
    expect(engine.valueToken(key(5))).toBe(token);
    // Replace every value and add enough more to fill several chunks, then page them all out.
    const second = new WriteBatch();
    for (let i = 0; i < 100; i++) second.put(key(i), new Uint8Array(500).fill(200));
    for (let i = 100; i < 1100; i++) second.put(key(i), new Uint8Array(300).fill(9));
    await engine.commit(second);
    expect(engine.valueToken(key(5))).not.toBe(token);
    await engine.checkpoint();
    expect(read.map((bytes, i) => bytes.every((b) => b === i + 1))).toEqual(read.map(() => true));
    await engine.close();
  });
});
