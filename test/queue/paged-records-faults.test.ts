/**
 * @module The queue with job records paged out and a record cache that
 * keeps nothing, over a store whose reads fail at random: claims and
 * settlements either succeed or fail with the store's error, never with a
 * cold read, and every job is done once the faults stop.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue, withFaults } from "taquba";
import { enc } from "./helpers.js";

describe("queue with paged records over a failing store", () => {
  it("claims and acks through read faults; every job ends done exactly once", async () => {
    for (let seed = 1; seed <= 6; seed++) {
      const clock = new MockClock(1_700_000_000_000);
      const faulty = withFaults(new MemoryStore(), { failureRate: 0, seed, ops: ["get"] });
      const queue = await Queue.open(faulty, "q", {
        clock,
        flushIntervalMs: 0,
        recordCacheBytes: 0,
        engineOptions: { checkpointWalObjects: 2, retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } },
      });
      const ids: string[] = [];
      for (let i = 0; i < 40; i++) ids.push((await queue.enqueue("jobs", enc(`job ${i}`))).jobId);
      await queue.flush();
      faulty.failureRate = 0.3;
      const done = new Set<string>();
      for (let n = 0; done.size < ids.length; n++) {
        if (n > 2000) throw new Error(`seed ${seed}: the drain does not end (${done.size} done)`);
        if (n === 400) faulty.failureRate = 0;
        let job;
        try {
          job = await queue.claim("jobs", 60_000);
        } catch (e) {
          expect(String(e), `seed ${seed}`).not.toMatch(/without warming/);
          continue;
        }
        if (job === null) break;
        let acked = false;
        try {
          await queue.ack(job);
          acked = true;
        } catch (e) {
          expect(String(e), `seed ${seed}`).not.toMatch(/without warming/);
          await queue.nack(job, "ack failed").catch(() => undefined);
        }
        // Outside the try: inside it, a failed expectation was taken for a failed ack and swallowed.
        if (acked) {
          expect(done.has(job.id), `seed ${seed}: ${job.id} acked twice`).toBe(false);
          done.add(job.id);
        }
      }
      expect(done.size, `seed ${seed}`).toBe(ids.length);
      await queue.close();
    }
  });
});
