/**
 * @module The checkpoint settings a queue that pages its records gives its
 * engine: a checkpoint after 8 MiB of WAL, and up to 16 segment runs,
 * where the newest are folded by tiers instead of the whole state being
 * rewritten (see docs/engine.md, "The fill's peak at 1M: checkpoints every
 * 8 MiB" and "Compaction by tiers").
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue } from "taquba";
import { QUEUE_CHECKPOINT_WAL_BYTES, QUEUE_MAX_SEGMENT_RUNS } from "../../runtime/queue/queue.js";

/** Lets `n` turns of the event loop run. */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Runs the event loop until the WAL since the last checkpoint is covered (a checkpoint ran), at most `max` turns. */
async function untilCheckpointed(queue: Queue, max = 5000): Promise<void> {
  for (let i = 0; i < max && queue.engineStats.walBytesSinceCheckpoint > 0; i++) await turns(1);
}

describe("a queue's checkpoint settings", () => {
  it("checkpoints once 8 MiB of WAL are stored, not before", async () => {
    const queue = await Queue.open(new MemoryStore(), "q", { flushIntervalMs: 0 });
    const payload = new Uint8Array(64 * 1024).fill(1);
    const batch = (n: number) => Array.from({ length: n }, () => ({ queueName: "jobs", payload }));
    // About 6.5 MiB: under the trigger.
    await queue.enqueueBatch(batch(100));
    await turns(50);
    expect(queue.engineStats.checkpoints).toBe(0);
    expect(queue.engineStats.walBytesSinceCheckpoint).toBeLessThan(QUEUE_CHECKPOINT_WAL_BYTES);
    // About 9 MiB: past it.
    await queue.enqueueBatch(batch(40));
    await untilCheckpointed(queue);
    expect(queue.engineStats.checkpoints).toBeGreaterThanOrEqual(1);
    await queue.close();
  });

  it("lists up to 16 segment runs, then folds the newest by tiers instead of rewriting them all as one", async () => {
    // A checkpoint after every WAL object; the run limit is the queue's.
    const queue = await Queue.open(new MemoryStore(), "q", { flushIntervalMs: 0, engineOptions: { checkpointWalObjects: 1 } });
    // A large first run (the first checkpoint is a compaction), so that small runs after it never outgrow it.
    await queue.enqueueBatch(Array.from({ length: 300 }, () => ({ queueName: "jobs", payload: new Uint8Array(1024) })));
    await untilCheckpointed(queue);
    const compactionsAtStart = queue.engineStats.compactions;
    let most = queue.engineStats.segmentRuns;
    for (let i = 0; i < QUEUE_MAX_SEGMENT_RUNS + 4; i++) {
      await queue.enqueue("jobs", new Uint8Array([i]));
      await untilCheckpointed(queue);
      most = Math.max(most, queue.engineStats.segmentRuns);
    }
    expect(most).toBe(QUEUE_MAX_SEGMENT_RUNS);
    // Reaching the limit folded runs (the small runs never outgrow the first, and little of what they list is dead): no compaction.
    expect(queue.engineStats.compactions - compactionsAtStart).toBe(0);
    expect(queue.engineStats.runsFoldedByTier).toBeGreaterThan(0);
    await queue.close();
  });

  it("a user's engineOptions override both: runs up to its own maxSegmentRuns, checkpoints at its own WAL bytes", async () => {
    const queue = await Queue.open(new MemoryStore(), "q", { flushIntervalMs: 0, engineOptions: { checkpointWalObjects: 1, maxSegmentRuns: 3 } });
    await queue.enqueueBatch(Array.from({ length: 300 }, () => ({ queueName: "jobs", payload: new Uint8Array(1024) })));
    await untilCheckpointed(queue);
    let most = queue.engineStats.segmentRuns;
    for (let i = 0; i < 8; i++) {
      await queue.enqueue("jobs", new Uint8Array([i]));
      await untilCheckpointed(queue);
      most = Math.max(most, queue.engineStats.segmentRuns);
    }
    expect(most).toBe(3);
    await queue.close();
    // 1 MiB of WAL: a checkpoint well before the queue's 8 MiB.
    const small = await Queue.open(new MemoryStore(), "q", { flushIntervalMs: 0, engineOptions: { checkpointWalBytes: 1024 * 1024 } });
    await small.enqueueBatch(Array.from({ length: 20 }, () => ({ queueName: "jobs", payload: new Uint8Array(64 * 1024).fill(2) })));
    await untilCheckpointed(small);
    expect(small.engineStats.checkpoints).toBeGreaterThanOrEqual(1);
    await small.close();
  });

  it("a store closed with as many segment runs as the queue lists reopens with every job, then claims them all", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "q", { flushIntervalMs: 0, engineOptions: { checkpointWalObjects: 1 } });
    await queue.enqueueBatch(Array.from({ length: 300 }, (_, i) => ({ queueName: "jobs", payload: new Uint8Array([i % 256, 1]) })));
    await untilCheckpointed(queue);
    const ids: string[] = [];
    for (let i = 0; i < QUEUE_MAX_SEGMENT_RUNS - 1; i++) {
      ids.push((await queue.enqueue("jobs", new Uint8Array([i, 2]))).jobId);
      await untilCheckpointed(queue);
    }
    const runs = queue.engineStats.segmentRuns;
    expect(runs).toBe(QUEUE_MAX_SEGMENT_RUNS);
    await queue.close();
    const again = await Queue.open(store, "q", { flushIntervalMs: 0 });
    expect(again.engineStats.segmentRuns).toBe(runs);
    expect(await again.view().stats("jobs")).toMatchObject({ pending: 300 + QUEUE_MAX_SEGMENT_RUNS - 1 });
    const claimed = await again.claimBatch("jobs", 1000);
    expect(claimed).toHaveLength(300 + QUEUE_MAX_SEGMENT_RUNS - 1);
    for (const [i, id] of ids.entries()) expect([...claimed.find((j) => j.id === id)!.payload]).toEqual([i, 2]);
    await again.close();
  });
});
