/**
 * @module Index entries and records that disagree under a live queue: pending
 * entries whose records are gone, at the head of a queue, are dropped by the
 * claim that meets them (each once, with a warning naming the job), which
 * returns the next good job; a readable record naming another queue than
 * the one whose index files it is removed by `cancel` from the queue that
 * files it, and a listing of that queue is a `JobRecordDamagedError`. The stats equal a
 * model of the jobs throughout.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { JobRecordDamagedError, MemoryStore, MockClock, Queue, type QueueStats, WriteBatch } from "taquba";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import { jobKey } from "../../runtime/queue/keys.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { enc } from "./helpers.js";

const general = new Packr({ useRecords: false, mapsAsObjects: true, skipValues: [undefined] } as ConstructorParameters<typeof Packr>[0]);
const stats = (s: Partial<QueueStats>): QueueStats => ({ pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 0, ...s });

async function live() {
  const warnings: string[] = [];
  const logger = { debug: () => undefined, info: () => undefined, error: () => undefined, warn: (_o: unknown, msg?: string) => void warnings.push(msg ?? "") };
  const queue = await Queue.open(new MemoryStore(), "q", { clock: new MockClock(1_764_000_000_000), flushIntervalMs: 0, logger });
  // The queue's engine, through a claim's owner: records changed under the running queue.
  await queue.enqueue("handle", enc("h"));
  const handle = (await queue.claim("handle"))!;
  const core = ticketOf(handle)!.owner as QueueCore;
  await queue.ack(handle);
  const drain = async (name: string): Promise<string[]> => {
    const done: string[] = [];
    for (let job = await queue.claim(name); job !== null; job = await queue.claim(name)) {
      await queue.ack(job);
      done.push(job.id);
    }
    return done;
  };
  return { queue, core, warnings, drain };
}

describe("index entries and records that disagree under a live queue", () => {
  it("pending entries whose records are gone, at the head of a queue, are dropped and the next good job claimed", async () => {
    const { queue, core, warnings, drain } = await live();
    try {
      const lost = ["lost1", "lost2", "lost3", "lost4", "lost5"];
      for (const id of [...lost, "g1", "g2", "g3"]) await queue.enqueue("w", enc(id), { jobId: id });
      const batch = new WriteBatch();
      for (const id of lost) batch.delete(jobKey(id));
      await core.engine.commit(batch);
      expect(await drain("w")).toEqual(["g1", "g2", "g3"]);
      // Each dropped once: their pending count goes with them.
      expect(await queue.view().stats("w")).toEqual(stats({ done: 3 }));
      for (const id of lost) expect(warnings.filter((w) => w.includes(`job ${id} `))).toHaveLength(1);
      expect(await queue.claim("w")).toBeNull();
      expect(await queue.view().stats("w")).toEqual(stats({ done: 3 }));
    } finally {
      await queue.close();
    }
  });

  it("a readable record naming another queue is removed by cancel from the queue that files it", async () => {
    const { queue, core, drain } = await live();
    try {
      for (const id of ["g1", "victim", "g2"]) await queue.enqueue("w", enc(id), { jobId: id });
      await queue.enqueue("other", enc("o1"), { jobId: "o1" });
      const r = general.unpack(core.engine.get(jobKey("victim"))!) as Record<string, unknown>;
      r.queue = "other";
      await core.engine.commit(new WriteBatch().put(jobKey("victim"), new Uint8Array(general.pack(r))));

      // Listed among the jobs of the queue that files it, it is damaged.
      await expect(queue.view().listJobs("w", "pending")).rejects.toThrow(JobRecordDamagedError);
      await expect(queue.view().listJobs("w", "pending")).rejects.toThrow(/job victim .*a job record of queue "other", found among the jobs of queue "w"/);
      expect(await queue.cancel("victim")).toBe(true);
      expect(await queue.view().job("victim")).toBeNull();
      expect(await queue.view().stats("w")).toEqual(stats({ pending: 2 }));
      expect(await queue.view().stats("other")).toEqual(stats({ pending: 1 }));
      expect(await drain("w")).toEqual(["g1", "g2"]);
      expect(await drain("other")).toEqual(["o1"]);
      expect(await queue.view().stats("w")).toEqual(stats({ done: 2 }));
      expect(await queue.view().stats("other")).toEqual(stats({ done: 1 }));
    } finally {
      await queue.close();
    }
  });
});
