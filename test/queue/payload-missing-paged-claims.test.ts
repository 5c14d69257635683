/**
 * @module A batch claim that scanned twice (it set a damaged job aside
 * first) and whose first scan's job has an offloaded payload object that
 * is gone, while a checkpoint pages that job's claimed record out during
 * the payload read: the claim loads the records of its own claims before
 * dead-lettering that job, and hands out the rest. Before, it loaded only
 * those of its last scan and threw ValueNotWarmedError, leaving its claims
 * to their leases.
 */
import { describe, expect, it } from "vitest";
import { type DeadLetteredEvent, MemoryStore, MockClock, Queue, WriteBatch } from "taquba";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import { jobKey } from "../../runtime/queue/keys.js";
import { PAYLOAD_PREFIX } from "../../runtime/queue/payloads.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { HookedReads } from "../support/hooked-reads.js";
import { until } from "../support/until.js";
import { enc } from "./helpers.js";

describe("a two-scan batch claim whose first job's payload object is gone and whose record is paged out meanwhile", () => {
  it("dead-letters that job for its payload and hands out the rest", async () => {
    const inner = new MemoryStore();
    const store = new HookedReads(inner);
    const dead: DeadLetteredEvent[] = [];
    const queue = await Queue.open(store, "q", {
      clock: new MockClock(1_764_000_000_000),
      flushIntervalMs: 0,
      payloadOffloadBytes: 64,
      recordCacheBytes: 0,
      engineOptions: { checkpointWalObjects: 1000, segmentBlockBytes: 256 },
      onDeadLettered: (e) => void dead.push(e),
    });
    try {
      await queue.enqueue("h", enc("handle"));
      const handle = (await queue.claim("h"))!;
      const core = ticketOf(handle)!.owner as QueueCore;
      await queue.ack(handle);
      await queue.enqueue("w", enc("victim"), { jobId: "victim", priority: 0 });
      await queue.enqueue("w", enc("lost".padEnd(200, ".")), { jobId: "a-lost", priority: 0 });
      const objects: string[] = [];
      for await (const o of inner.list("")) if (o.key.includes(PAYLOAD_PREFIX)) objects.push(o.key);
      expect(objects).toHaveLength(1);
      await queue.enqueue("w", enc("later"), { jobId: "z-later" });
      // Other records between theirs: the two land in different blocks of the checkpoint's segment.
      for (let i = 0; i < 20; i++) await queue.enqueue("other", enc(`filler ${i}`.padEnd(60, ".")), { jobId: `m-filler-${i}` });
      await inner.delete(objects[0]!);
      await core.engine.commit(new WriteBatch().put(jobKey("victim"), core.engine.get(jobKey("victim"))!.subarray(0, 3)));
      store.before = async (key) => {
        if (key !== objects[0]) return;
        store.before = undefined;
        await core.engine.checkpoint();
      };
      const jobs = await queue.claimBatch("w", 2);
      expect(jobs.map((j) => j.id)).toEqual(["z-later"]);
      await until("both dead-letters announced", async () => dead.length === 2);
      expect(dead.map((e) => [e.jobId, e.reason]).sort()).toEqual([
        ["a-lost", "payload_missing"],
        ["victim", "record_corrupted"],
      ]);
      expect(await queue.view().stats("w")).toMatchObject({ pending: 0, claimed: 1, dead: 2 });
      await queue.ack(jobs[0]!);
    } finally {
      await queue.close();
    }
  });
});
