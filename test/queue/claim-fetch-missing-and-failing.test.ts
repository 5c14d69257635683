/**
 * @module A claim batch whose payload reads end both ways at once: one
 * payload object gone (its job can never run: dead-lettered) and another
 * whose read fails (the store may come back: the batch is put back and the
 * failure reported). The gone job alone is dead-lettered, every other job
 * is pending again with its attempt uncounted, nothing stays claimed, and
 * the next claim hands each out once with its own payload.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue, type ObjectStore } from "taquba";
import { failWhen } from "../support/failing-store.js";

const OPTIONS = { payloadOffloadBytes: 16, flushIntervalMs: 0 };
/** Even jobs' payloads go to objects of their own, odd ones stay inline. */
const payloadOf = (i: number) => new Uint8Array(i % 2 === 0 ? 64 : 4).fill(i + 1);
const JOBS = 8;

async function payloadKeys(store: ObjectStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.list("q/payloads/")) keys.push(o.key);
  return keys;
}

describe("a claim batch with a payload object gone and another's read failing", () => {
  it("dead-letters the gone one alone, puts the rest back uncounted, and reports the failure", async () => {
    const inner = new MemoryStore();
    const first = await Queue.open(inner, "q", OPTIONS);
    await first.enqueueBatch(Array.from({ length: JOBS }, (_, i) => ({ queueName: "jobs", payload: payloadOf(i), opts: { maxAttempts: 1 } })));
    await first.close();
    const objects = await payloadKeys(inner);
    expect(objects).toHaveLength(JOBS / 2);
    await inner.delete(objects[0]!);
    let failing: string | undefined = objects[2];
    const store = failWhen(inner, (call, key) => (call === "get" && key === failing ? new Error(`injected: get of ${key} failed`) : undefined));
    const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
    const queue = await Queue.open(store, "q", { ...OPTIONS, logger: silent, engineOptions: { retry: { attempts: 1 } } });
    try {
      await expect(queue.claimBatch("jobs", JOBS)).rejects.toThrow(/injected/);
      expect(await queue.view().stats("jobs")).toEqual({ pending: JOBS - 1, scheduled: 0, claimed: 0, done: 0, dead: 1 });
      failing = undefined;
      const jobs = await queue.claimBatch("jobs", JOBS);
      expect(jobs).toHaveLength(JOBS - 1);
      // One attempt allowed: an attempt counted by the failed claim would have dead-lettered them.
      expect(jobs.map((j) => j.attempt)).toEqual(Array(JOBS - 1).fill(1));
      for (const j of jobs) expect(j.payload).toEqual(payloadOf(j.payload[0]! - 1));
      expect(new Set(jobs.map((j) => j.id)).size).toBe(JOBS - 1);
      for (const j of jobs) await queue.ack(j);
      expect(await queue.view().stats("jobs")).toEqual({ pending: 0, scheduled: 0, claimed: 0, done: JOBS - 1, dead: 1 });
    } finally {
      await queue.close();
    }
  });
});
