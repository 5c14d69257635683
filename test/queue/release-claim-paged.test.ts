/**
 * @module `releaseClaim` of a claim whose record a checkpoint paged out of
 * memory: the record is loaded first and the job goes back pending,
 * uncounted. Reading it cold threw the engine's ValueNotWarmedError at the
 * caller after the lease was dropped, leaving the job claimed with no lease
 * to expire: no claim took it again until the queue was reopened.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue } from "taquba";

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

describe("releaseClaim of a paged-out claim", () => {
  it("gives the job back pending, uncounted, and a claim takes it again", async () => {
    const clock = new MockClock(1_700_000_000_000);
    // No record cache and a checkpoint after every WAL object: a checkpointed record is paged out at once.
    const queue = await Queue.open(new MemoryStore(), "q", { clock, flushIntervalMs: 0, recordCacheBytes: 0, engineOptions: { checkpointWalObjects: 1 } });
    await queue.enqueueBatch(Array.from({ length: 20 }, (_, i) => ({ queueName: "jobs", payload: new Uint8Array([i]) })));
    const [job] = await queue.claimBatch("jobs", 1, 30_000);
    await queue.flush();
    for (let i = 0; i < 5000 && queue.engineStats.walBytesSinceCheckpoint > 0; i++) await turns(1);
    expect(queue.engineStats.walBytesSinceCheckpoint).toBe(0);
    expect(() => queue.releaseClaim(job!)).not.toThrow();
    for (let i = 0; i < 500 && (await queue.view().stats("jobs")).claimed > 0; i++) await turns(1);
    expect(await queue.view().job(job!.id)).toMatchObject({ state: "pending", attempt: 0 });
    const again = await queue.claimBatch("jobs", 20);
    expect(again.find((j) => j.id === job!.id)).toMatchObject({ attempt: 1 });
    // Its old claim settles nothing.
    await expect(queue.ack(job!)).rejects.toThrow(/claim/i);
    await queue.close();
  });

  it("a close right after the release waits for the record's load: the reopened queue has the job pending, its attempt uncounted", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const store = new MemoryStore();
    const options = { clock, flushIntervalMs: 0, recordCacheBytes: 0, engineOptions: { checkpointWalObjects: 1 } };
    const queue = await Queue.open(store, "q", options);
    // One attempt allowed: a release lost at the close would dead-letter the job at the reopen's recovery.
    await queue.enqueueBatch(Array.from({ length: 20 }, (_, i) => ({ queueName: "jobs", payload: new Uint8Array([i]), opts: { maxAttempts: 1 } })));
    const [job] = await queue.claimBatch("jobs", 1, 30_000);
    await queue.flush();
    for (let i = 0; i < 5000 && queue.engineStats.walBytesSinceCheckpoint > 0; i++) await turns(1);
    expect(queue.engineStats.walBytesSinceCheckpoint).toBe(0);
    queue.releaseClaim(job!);
    await queue.close();
    const reopened = await Queue.open(store, "q", options);
    try {
      expect(await reopened.view().job(job!.id)).toMatchObject({ state: "pending", attempt: 0 });
      const again = await reopened.claimBatch("jobs", 20);
      expect(again.find((j) => j.id === job!.id)).toMatchObject({ attempt: 1 });
    } finally {
      await reopened.close();
    }
  });
});
