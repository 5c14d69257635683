/**
 * @module Job records encoded into memory that other records share (views
 * of one chunk, see record-pack.ts) reach only an engine that keeps none of
 * the arrays it commits: with `pageValues` the engine packs or copies each
 * value, so writing over the caller's memory after the commit changes
 * nothing it reads, checkpoints or replays. Without it the engine keeps
 * each committed array, and the queue's transactions hand it job records
 * in arrays of their own (a view would keep its whole chunk alive).
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import * as K from "../../runtime/queue/keys.js";
import type { JobRecord } from "../../runtime/queue/record.js";
import { writeJob } from "../../runtime/queue/transitions.js";
import { Txn } from "../../runtime/queue/txn.js";

const paging = { pageValues: { keyPrefixes: ["j/"], minBytes: 64 } };

/** The value of `key`, warmed first: a checkpoint pages the record out. */
async function read(engine: Engine, key: string): Promise<Uint8Array | undefined> {
  for (let p = engine.warm([key]); p; p = engine.warm([key])) await p;
  return engine.get(key);
}

function job(id: string): JobRecord {
  return { id, queue: "q", state: "pending", seq: id, priority: 0, payload: new Uint8Array(40).fill(7), attempts: 0, maxAttempts: 3, enqueuedAt: 1 };
}

describe("job record bytes shared between records", () => {
  it("an engine with pageValues keeps none of the arrays it commits: overwriting them after the commit changes no read, checkpoint or replay", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, paging);
    expect(engine.copiesValues).toBe(true);
    // One buffer under every value: a pageable record, a small packed value, a large one held as a copy.
    const shared = new Uint8Array(4096);
    for (let i = 0; i < shared.length; i++) shared[i] = i % 251;
    const values = { "j/paged": shared.subarray(0, 100), "u/small": shared.subarray(100, 120), "u/large": shared.subarray(1000, 3000) };
    const expected = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, v.slice()]));
    const batch = new WriteBatch();
    for (const [k, v] of Object.entries(values)) batch.put(k, v);
    await engine.commit(batch);
    shared.fill(0xee);
    for (const [k, v] of Object.entries(expected)) expect(engine.get(k), k).toEqual(v);
    await engine.checkpoint();
    for (const [k, v] of Object.entries(expected)) expect(await read(engine, k), k).toEqual(v);
    await engine.close();
    const reopened = await Engine.open(store, paging);
    for (const [k, v] of Object.entries(expected)) expect(await read(reopened, k), k).toEqual(v);
    await reopened.close();
  });

  it("the queue's transactions write job records as shared views only over an engine that copies them", async () => {
    for (const [label, opts, copies] of [
      ["with pageValues", paging, true],
      ["without pageValues", {}, false],
    ] as const) {
      const engine = await Engine.open(new MemoryStore(), opts);
      expect(engine.copiesValues, label).toBe(copies);
      const txn = new Txn(engine);
      writeJob(txn, job("a"), undefined);
      writeJob(txn, job("b"), undefined);
      const a = txn.get(K.jobKey("a"))!;
      const b = txn.get(K.jobKey("b"))!;
      // A view of a chunk has a buffer larger than itself; an array of its own does not.
      expect(a.buffer.byteLength > a.byteLength, label).toBe(copies);
      expect(b.buffer.byteLength > b.byteLength, label).toBe(copies);
      await engine.commit(txn.finish());
      await engine.close();
    }
  });
});
