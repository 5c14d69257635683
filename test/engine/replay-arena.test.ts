/**
 * @module Values replayed from the WAL that wait to be paged are copied out
 * of their WAL objects (ReplayArena), so the objects do not stay alive.
 */
import { describe, expect, it } from "vitest";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import { holdUntilPaged, ReplayArena, type PagePolicy } from "../../runtime/engine/paged-value.js";
import { applyOps } from "../../runtime/engine/recovery.js";
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

describe("ReplayArena", () => {
  it("replayed values to page hold none of the WAL object's buffer, keep their bytes, and stay in the memtable for the page-out", () => {
    const sizes = Array.from({ length: 1000 }, (_, i) => (i % 97 === 0 ? 20_000 : 64 + (i % 300)));
    const { buffer, ops } = walBatch(sizes);
    const state = new LayeredState({ hold: holdUntilPaged(policy), memtableKeys: 100 });
    const delta = new Map();
    applyOps(state, ops, delta, policy, new ReplayArena());
    const chunks = new Set<ArrayBufferLike>();
    for (const op of ops) {
      if (op.kind !== "put") continue;
      const held = state.get(op.key);
      expect(held).toBeInstanceOf(Uint8Array);
      const v = held as Uint8Array;
      expect(v.buffer).not.toBe(buffer);
      expect(Buffer.compare(v, op.value)).toBe(0);
      // The page-out finds the value by identity, in the state and in the delta.
      expect(state.holds(op.key, v)).toBe(true);
      expect(delta.get(op.key)).toBe(v);
      chunks.add(v.buffer);
    }
    // Small values share 64 KiB chunks; large ones have their own buffer.
    const large = sizes.filter((s) => s > ReplayArena.CHUNK_BYTES / 4).length;
    const smallBytes = sizes.filter((s) => s <= ReplayArena.CHUNK_BYTES / 4).reduce((n, s) => n + s, 0);
    expect(chunks.size).toBeLessThanOrEqual(large + Math.ceil(smallBytes / (ReplayArena.CHUNK_BYTES - 16 * 1024)) + 1);
  });

  it("without an arena (a commit), the caller's array is kept as it is", () => {
    const { ops } = walBatch([100]);
    const state = new LayeredState({ hold: holdUntilPaged(policy) });
    applyOps(state, ops, undefined, policy);
    expect(state.get("j/0000")).toBe((ops[0] as { value: Uint8Array }).value);
  });
});
