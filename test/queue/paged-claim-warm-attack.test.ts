/**
 * @module A claim of many jobs whose records are paged out, over a
 * LocalStore (reads take turns of the event loop) with a record cache that
 * keeps nothing past a turn: when some of the records' blocks are still
 * cached as the claim warms them and others are not, the claim must still
 * get them all in one warm-up, not load one half while the other half is
 * evicted, round after round, forever.
 */
import { describe, expect, it } from "vitest";
import { LocalStore, MockClock, Queue } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";
import { dec, enc } from "./helpers.js";

const tempDir = useTempDirs("paged-claim-");

/** Rejects after `ms` of real time: a claim that never settles fails the test instead of hanging it. */
function within<T>(ms: number, p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle in ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

describe("claims of paged job records with no record cache", () => {
  it("a batch claim right after a view read one of its records: every job claimed once, no endless warm-up", async () => {
    const dir = await tempDir();
    const clock = new MockClock(1_700_000_000_000);
    const opts = { clock, flushIntervalMs: 0, recordCacheBytes: 0, engineOptions: { checkpointWalObjects: 2, segmentBlockBytes: 256 } };
    let queue = await Queue.open(new LocalStore(dir), "q", opts);
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push((await queue.enqueue("jobs", enc(`job ${i} ${"x".repeat(100)}`))).jobId);
    await queue.close();
    // Reopened, every record is in the segments only.
    queue = await Queue.open(new LocalStore(dir), "q", opts);
    try {
      const claimed: string[] = [];
      for (let round = 0; round < 4; round++) {
        // A read of one record leaves its block cached for a turn; the claim asks in that turn.
        const next = ids[claimed.length + 3]!;
        expect((await queue.view().job(next))?.state).toBe("pending");
        const batch = await within(10_000, queue.claimBatch("jobs", 10, 60_000), `claimBatch in round ${round}`);
        for (const job of batch) {
          claimed.push(dec(job.payload).split(" ").slice(0, 2).join(" "));
          await queue.ack(job);
        }
      }
      expect(claimed).toEqual(ids.map((_, i) => `job ${i}`));
    } finally {
      await queue.close();
    }
  });
});
