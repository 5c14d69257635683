/**
 * @module Deleting a job removes its attempt history when it has one, and
 * writes no delete for a history that never existed (most jobs): the
 * batch an ack commits is what the WAL stores.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "taquba";
import { Engine } from "../../runtime/engine/engine.js";
import { WriteBatch } from "../../runtime/engine/write-batch.js";
import * as K from "../../runtime/queue/keys.js";
import { encodeJob, type JobRecord } from "../../runtime/queue/record.js";
import { appendHistory, deleteJob } from "../../runtime/queue/transitions.js";
import { Txn } from "../../runtime/queue/txn.js";

const job = (id: string): JobRecord => ({
  id,
  queue: "q",
  state: "claimed",
  seq: id,
  priority: 0,
  payload: new Uint8Array([1]),
  attempts: 1,
  maxAttempts: 3,
  enqueuedAt: 1,
  claimedAt: 2,
});

describe("deleteJob and the attempt history", () => {
  it("deletes a history that exists, in the store or earlier in the same transaction, and writes no delete for one that does not", async () => {
    const engine = await Engine.open(new MemoryStore());
    try {
      const [a, b, c] = [job("A"), job("B"), job("C")];
      const seed = new WriteBatch();
      for (const r of [a, b, c]) seed.put(K.jobKey(r.id), encodeJob(r)).put(K.claimedKey(r.queue, r.id), new Uint8Array(0));
      await engine.commit(seed);
      const before = new Txn(engine);
      appendHistory(before, a.id, { attempt: 1, recordedAt: 3, outcome: "retried", error: "boom" });
      await engine.commit(before.finish());
      expect(engine.has(K.historyKey(a.id))).toBe(true);

      const txn = new Txn(engine);
      appendHistory(txn, c.id, { attempt: 1, recordedAt: 3, outcome: "retried" });
      for (const r of [a, b, c]) deleteJob(txn, r);
      const deletes = txn.batch.ops.filter((op) => op.kind === "delete").map((op) => op.key);
      expect(deletes).toContain(K.historyKey(a.id));
      expect(deletes).toContain(K.historyKey(c.id));
      expect(deletes).not.toContain(K.historyKey(b.id));
      await engine.commit(txn.finish());
      for (const r of [a, b, c]) {
        expect(engine.has(K.historyKey(r.id))).toBe(false);
        expect(engine.has(K.jobKey(r.id))).toBe(false);
      }
    } finally {
      await engine.close();
    }
  });
});
