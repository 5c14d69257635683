/**
 * @module A queue whose engine folds runs by tiers (`engineOptions:
 * { foldRunsByTier: true }`) over real files: filled, half drained,
 * reopened with the option off and on again, drained to empty and filled
 * again, with a checkpoint after every WAL object and three runs at most,
 * so folds by tier come all along. Every job comes back exactly once with
 * its payload; no acknowledged job comes back.
 */
import { describe, expect, it } from "vitest";
import { LocalStore, Queue, type EngineOptions } from "taquba";
import { HEAVY_TEST_MS } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-tier-queue-");

const TIER: EngineOptions = { checkpointWalObjects: 1, maxSegmentRuns: 3, segmentBlockBytes: 256, maxSegmentBytes: 2048 };

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * Runs the event loop until the WAL since the last checkpoint is covered,
 * or a checkpoint ended without covering it (the next starts only at the
 * next commit), at most `max` turns: with none running, waiting longer
 * changes nothing (it spun 5000 turns after most batches, most of the
 * test's time).
 */
async function untilCheckpointed(queue: Queue, max = 500): Promise<void> {
  const before = queue.engineStats.checkpoints;
  for (let i = 0; i < max && queue.engineStats.walBytesSinceCheckpoint > 0 && queue.engineStats.checkpoints === before; i++) await turns(1);
}

describe("a queue with runs folded by tiers", () => {
  it("filled, half drained, reopened with the option off and on, drained to empty and refilled: every job once, none acknowledged back", {
    timeout: HEAVY_TEST_MS,
  }, async () => {
    const dir = await tempDir();
    const open = (byTier: boolean) => Queue.open(new LocalStore(dir), "q", { flushIntervalMs: 0, engineOptions: { ...TIER, foldRunsByTier: byTier } });
    let queue = await open(true);
    let folds = 0;
    const reopen = async (byTier: boolean) => {
      await untilCheckpointed(queue);
      folds += queue.engineStats.runsFoldedByTier;
      await queue.close();
      queue = await open(byTier);
    };
    /** Job id to its payload's first two bytes, for every job enqueued and not yet acknowledged. */
    const pending = new Map<string, [number, number]>();
    const fill = async (round: number, n: number) => {
      for (let i = 0; i < n; i += 10) {
        const jobs = Array.from({ length: Math.min(10, n - i) }, (_, j) => ({ queueName: "jobs", payload: new Uint8Array([(i + j) % 256, round]) }));
        const out = await queue.enqueueBatch(jobs);
        for (const [j, o] of out.entries()) pending.set(o.jobId, [(i + j) % 256, round]);
        await untilCheckpointed(queue);
      }
    };
    /** Claims up to `n` jobs in small batches, checks each against `pending`, acknowledges it. */
    const drain = async (n: number) => {
      let taken = 0;
      while (taken < n) {
        const claimed = await queue.claimBatch("jobs", Math.min(7, n - taken));
        if (claimed.length === 0) break;
        for (const job of claimed) expect(pending.get(job.id), `job ${job.id} claimed once, with its payload`).toEqual([job.payload[0], job.payload[1]]);
        // Acknowledged together: one WAL object, so one checkpoint per batch rather than per job.
        await Promise.all(claimed.map((job) => queue.ack(job)));
        for (const job of claimed) pending.delete(job.id);
        taken += claimed.length;
        await untilCheckpointed(queue);
      }
      return taken;
    };
    for (let round = 1; round <= 2; round++) {
      await fill(round, 150);
      expect(await drain(70)).toBe(70);
      await reopen(false);
      expect(await queue.view().stats("jobs")).toMatchObject({ pending: pending.size });
      await reopen(true);
      expect(await drain(1000)).toBe(80);
      expect(pending.size).toBe(0);
      await reopen(round === 1);
      expect(await queue.view().stats("jobs")).toMatchObject({ pending: 0 });
      expect(await queue.claimBatch("jobs", 10)).toEqual([]);
    }
    await fill(3, 40);
    await reopen(true);
    expect(await drain(1000)).toBe(40);
    expect(pending.size).toBe(0);
    folds += queue.engineStats.runsFoldedByTier;
    await queue.close();
    expect(folds).toBeGreaterThan(0);
  });
});
