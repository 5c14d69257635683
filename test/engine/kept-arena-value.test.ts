/**
 * @module Values that stay in memory (no checkpoint pages them) of
 * `ARENA_KEPT_BYTES` up to the packing bound are kept in the writer's
 * value arena instead of a string of their bytes (`keepValue`): a step's
 * history entry is one. They hold nothing of the array committed, move
 * into a run when the memtable freezes like a packed value, and a
 * checkpoint leaves them as they are.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { commitOwned } from "../../runtime/engine/engine.js";
import { applyOps } from "../../runtime/engine/apply-ops.js";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import { ARENA_KEPT_BYTES, holdUntilPaged, KeptValue, MAX_PACKED_BYTES, ValueArena, type PagePolicy } from "../../runtime/engine/paged-value.js";
import type { BatchOp } from "../../runtime/engine/write-batch.js";

const pageValues = { keyPrefixes: ["j/"], minBytes: 64 };
const policy: PagePolicy = { keyPrefixes: ["j/"], minBytes: 64 };

function filled(n: number, seed: number): Uint8Array {
  const v = new Uint8Array(n);
  for (let i = 0; i < n; i++) v[i] = (seed * 31 + i * 7) & 0xff;
  return v;
}

const SIZES = [ARENA_KEPT_BYTES - 1, ARENA_KEPT_BYTES, 110, 500, MAX_PACKED_BYTES, MAX_PACKED_BYTES + 1];
const key = (n: number) => `u/h/${String(n).padStart(5, "0")}`;

function expectAll(engine: Engine, model: Map<string, Uint8Array>): void {
  for (const [k, want] of model) expect(Buffer.compare(engine.get(k)!, want), k).toBe(0);
}

describe("values kept in the arena", () => {
  it("are held as their place in the arena from ARENA_KEPT_BYTES to the packing bound, and as a string or a copy outside it", () => {
    const state = new LayeredState({ hold: holdUntilPaged(policy) });
    const ops: BatchOp[] = SIZES.map((n, i) => ({ kind: "put", key: key(i), value: filled(n, i) }));
    applyOps(state, ops, undefined, policy, new ValueArena());
    SIZES.forEach((n, i) => {
      const held = state.get(key(i));
      if (n < ARENA_KEPT_BYTES) expect(typeof held).toBe("string");
      else if (n > MAX_PACKED_BYTES) expect(held).toBeInstanceOf(Uint8Array);
      else expect(held).toBeInstanceOf(KeptValue);
    });
    // A value that repeats its key's tail is still held as the number that says so.
    const tail = "x".repeat(ARENA_KEPT_BYTES + 10);
    applyOps(state, [{ kind: "put", key: `p/${tail}`, value: Buffer.from(tail) }], undefined, policy, new ValueArena());
    expect(state.get(`p/${tail}`)).toBe(-tail.length);
  });

  it("are not held back in the memtable at a freeze, as values that wait to be paged are", () => {
    const arena = new ValueArena();
    const hold = holdUntilPaged(policy);
    expect(hold("u/h/1", arena.keep(filled(200, 1)))).toBe(false);
    expect(hold("j/1", arena.copy(filled(200, 2)))).toBe(true);
  });

  it("a caller's array changed after its commit changes neither the value read nor what a reopen replays (commit and commitOwned)", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, { pageValues, checkpointWalObjects: 0 });
    const given = SIZES.map((n, i) => filled(n, i));
    const owned = SIZES.map((n, i) => filled(n, i + 100));
    const b = new WriteBatch();
    for (const [i, v] of given.entries()) b.put(key(i), v);
    await engine.commit(b);
    const o = new WriteBatch();
    for (const [i, v] of owned.entries()) o.put(key(i + 50), v);
    await commitOwned(engine, o.ops, []);
    const model = new Map<string, Uint8Array>();
    for (const [i, v] of given.entries()) model.set(key(i), v.slice());
    for (const [i, v] of owned.entries()) model.set(key(i + 50), v.slice());
    for (const v of [...given, ...owned]) v.fill(0xee);
    expectAll(engine, model);
    // A read of a value held packed or kept is the caller's own: changing it changes neither a later read nor the value held.
    for (const [k, v] of model) if (v.byteLength <= MAX_PACKED_BYTES) engine.get(k)!.fill(0xdd);
    expectAll(engine, model);
    // Not closed: the next writer replays the WAL, and keeps the replayed values in its own arena.
    const next = await Engine.open(store, { pageValues, checkpointWalObjects: 0 });
    expectAll(next, model);
    await next.checkpoint();
    expectAll(next, model);
    await next.close();
    const last = await Engine.open(store, { pageValues, checkpointWalObjects: 0 });
    expectAll(last, model);
    await last.close();
    await engine.close().catch(() => {});
  });

  it("keep their token through a checkpoint (not repacked), keep their bytes through freezes into runs, and give their token to the bytes they hold", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, { pageValues, checkpointWalObjects: 0, memtableKeys: 1024 });
    const model = new Map<string, Uint8Array>();
    const first = new WriteBatch();
    for (let i = 0; i < 10; i++) {
      const v = filled(110, i);
      first.put(key(i), v);
      model.set(key(i), v.slice());
    }
    await engine.commit(first);
    const token = engine.valueToken(key(3));
    expect(token).toBeDefined();
    // The engine holds a copy in its arena: the committed bytes find its token by a look-up, other bytes none.
    expect(engine.committedToken(key(3), model.get(key(3))!)).toBe(token);
    const other = model.get(key(3))!.slice();
    other[other.length - 1]! ^= 1;
    expect(engine.committedToken(key(3), other)).toBeUndefined();
    await engine.checkpoint();
    expect(engine.valueToken(key(3))).toBe(token);
    expectAll(engine, model);
    // Enough more keys to freeze the memtable several times: the kept values go into runs with their bytes.
    for (let round = 0; round < 5; round++) {
      const b = new WriteBatch();
      for (let i = 0; i < 1000; i++) {
        const k = key(1000 + round * 1000 + i);
        const v = filled(64 + ((round * 1000 + i) % 300), round * 1000 + i);
        b.put(k, v);
        model.set(k, v.slice());
      }
      await engine.commit(b);
      if (round % 2 === 1) await engine.checkpoint();
    }
    expectAll(engine, model);
    await engine.close();
    const reopened = await Engine.open(store, { pageValues, checkpointWalObjects: 0 });
    expectAll(reopened, model);
    await reopened.close();
  });
});
