/**
 * @module A claim whose jobs hold their payloads inline and whose commit is
 * durable hands the jobs out without waiting on anything, each once, with
 * its payload. A close that begins while a claim waits for paged-out
 * records ends that claim with ClosedError and leaves every job pending,
 * its attempt uncounted.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, MemoryStore, MockClock, Queue } from "taquba";

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

describe("a claim of jobs with inline payloads", () => {
  it("hands out every job with its payload, and a second claim gets none of them again", async () => {
    const queue = await Queue.open(new MemoryStore(), "q");
    try {
      await queue.enqueueBatch(Array.from({ length: 5 }, (_, i) => ({ queueName: "jobs", payload: new Uint8Array([i, i]) })));
      const jobs = await queue.claimBatch("jobs", 5);
      expect(jobs.map((j) => [...j.payload])).toEqual([0, 1, 2, 3, 4].map((i) => [i, i]));
      expect(await queue.claimBatch("jobs", 5)).toEqual([]);
      for (const j of jobs) await queue.ack(j);
      expect(await queue.view().stats("jobs")).toMatchObject({ pending: 0, claimed: 0 });
    } finally {
      await queue.close();
    }
  });

  it("a close that begins while the claim loads paged-out records gives every job back, its attempt uncounted", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const store = new MemoryStore();
    // No record cache and a checkpoint after every WAL object: a checkpointed record is paged out at once.
    const options = { clock, flushIntervalMs: 0, recordCacheBytes: 0, engineOptions: { checkpointWalObjects: 1 } };
    const queue = await Queue.open(store, "q", options);
    await queue.enqueueBatch(Array.from({ length: 5 }, (_, i) => ({ queueName: "jobs", payload: new Uint8Array([i]), opts: { maxAttempts: 1 } })));
    await queue.flush();
    for (let i = 0; i < 5000 && queue.engineStats.walBytesSinceCheckpoint > 0; i++) await turns(1);
    expect(queue.engineStats.walBytesSinceCheckpoint).toBe(0);
    const claiming = queue.claimBatch("jobs", 5).then(
      (jobs) => jobs,
      (e: unknown) => e,
    );
    const closing = queue.close();
    const claimed = await claiming;
    await closing;
    expect(claimed).toBeInstanceOf(ClosedError);
    const reopened = await Queue.open(store, "q", options);
    try {
      // One attempt allowed: a claim handed out during the close would dead-letter its job at the reopen's recovery.
      expect(await reopened.view().stats("jobs")).toMatchObject({ pending: 5, claimed: 0, dead: 0 });
      expect((await reopened.claimBatch("jobs", 5)).map((j) => j.attempt)).toEqual([1, 1, 1, 1, 1]);
    } finally {
      await reopened.close();
    }
  });
});
