/**
 * @module A batch claim whose job's offloaded payload object is gone, and
 * whose record was damaged while the claim fetched that payload: the
 * cleanup that dead-letters the job for its missing payload sets it aside
 * as damaged (`record_corrupted`) instead of throwing, and the claim hands
 * out the other jobs of the batch. Before, the cleanup threw the record's
 * StoreCorruptedError out of the claim, and the other jobs stayed claimed
 * by no one until their leases expired. The stats equal a recount.
 */
import { describe, expect, it } from "vitest";
import { type DeadLetteredEvent, MemoryStore, MockClock, Queue, type QueueStats, WriteBatch } from "taquba";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import { jobKey } from "../../runtime/queue/keys.js";
import { PAYLOAD_PREFIX } from "../../runtime/queue/payloads.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { HookedReads } from "../support/hooked-reads.js";
import { until } from "../support/until.js";
import { counted, recount } from "./stats-recount.js";
import { dec, enc } from "./helpers.js";

const stats = (s: Partial<QueueStats>): QueueStats => ({ pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 0, ...s });
const big = (s: string) => enc(s.padEnd(200, "."));

async function payloadObjects(store: MemoryStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.list("")) if (o.key.includes(PAYLOAD_PREFIX)) keys.push(o.key);
  return keys;
}

describe("a claim whose job's payload object is gone and whose record is damaged meanwhile", () => {
  it.each(["cut short", "another job's record copied over it"])("sets that job aside as damaged (%s) and hands out the rest of the batch", async (how) => {
    const inner = new MemoryStore();
    const store = new HookedReads(inner);
    const dead: DeadLetteredEvent[] = [];
    const queue = await Queue.open(store, "q", {
      clock: new MockClock(1_764_000_000_000),
      flushIntervalMs: 0,
      payloadOffloadBytes: 64,
      onDeadLettered: (e) => void dead.push(e),
    });
    try {
      await queue.enqueue("h", enc("handle"));
      const handle = (await queue.claim("h"))!;
      const core = ticketOf(handle)!.owner as QueueCore;
      await queue.ack(handle);
      await queue.enqueue("w", big("victim"), { jobId: "victim" });
      const [victimObject] = await payloadObjects(inner);
      await queue.enqueue("w", enc("fine"), { jobId: "fine" });
      await queue.enqueue("w", big("after"), { jobId: "after" });
      await inner.delete(victimObject!);
      store.before = async (key) => {
        if (key !== victimObject) return;
        store.before = undefined;
        const own = core.engine.get(jobKey("victim"))!;
        const other = core.engine.get(jobKey("fine"))!;
        await core.engine.commit(new WriteBatch().put(jobKey("victim"), how === "cut short" ? own.subarray(0, 3) : other.slice()));
      };
      const jobs = await queue.claimBatch("w", 3);
      expect(jobs.map((j) => [j.id, dec(j.payload).replace(/\.+$/, "")])).toEqual([
        ["fine", "fine"],
        ["after", "after"],
      ]);
      await until("the set-aside announced", async () => dead.length === 1);
      expect(dead[0]).toMatchObject({ jobId: "victim", queueName: "w", reason: "record_corrupted" });
      expect(await queue.view().job("victim")).toMatchObject({ state: "dead", lastError: expect.stringMatching(/^record_corrupted: /) });
      expect(await queue.view().stats("w")).toEqual(stats({ claimed: 2, dead: 1 }));
      expect(counted(await queue.view().stats("w"))).toEqual(recount(core.engine, "w"));
      for (const j of jobs) await queue.ack(j);
      expect(await queue.view().stats("w")).toEqual(stats({ done: 2, dead: 1 }));
    } finally {
      await queue.close();
    }
  });
});
