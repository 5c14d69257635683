/**
 * @module The queue health an operator reads (`taquba queue stats`, the
 * dashboard's queues page) over a queue whose stats record reads but one
 * of whose claimed index entries does not. The stats of that queue do not
 * read (they add the done jobs the claimed entries carry), and the health
 * listed the queue as one whose stats record is damaged, with the advice
 * to recount it: a recount writes nothing there (the record holds what the
 * jobs count) and the page kept naming it. A damaged object other than
 * the stats record now fails the read with the error naming that object;
 * a damaged stats record is still listed beside the other queues' counts.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue, QueueReader, StoreCorruptedError } from "../../runtime/index.js";
import { readQueueHealth } from "../../operator/inspect/queue-health.js";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import { claimedKey, statsKey } from "../../runtime/queue/keys.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { WriteBatch } from "../../runtime/engine/write-batch.js";

const enc = new TextEncoder();
const packr = new Packr({ useRecords: false });

/** Queues "mail" (a claim held) and "jobs", both with pending jobs; the store's owner stays open. */
async function owner(store: MemoryStore) {
  const queue = await Queue.open(store, "app", { flushIntervalMs: 0 });
  for (const p of ["a", "b", "c"]) await queue.enqueue("mail", enc.encode(p));
  await queue.enqueue("jobs", enc.encode("x"));
  const held = (await queue.claim("mail"))!;
  const core = ticketOf(held)!.owner as QueueCore;
  return { queue, held, core };
}

describe("queue health beside a damaged claimed entry", () => {
  it("fails naming the entry, not listing the queue's stats record as damaged", async () => {
    const store = new MemoryStore();
    const { queue, held, core } = await owner(store);
    try {
      await core.engine.commit(new WriteBatch().put(claimedKey("mail", held.id), new Uint8Array([0x80])));
      // The record itself reads and holds what the jobs count: a recount has nothing to write.
      expect(await queue.recountStats("mail", { dryRun: true })).toMatchObject({ changed: false });
      const reader = await QueueReader.open(store, "app");
      const read = await readQueueHealth(store, "app", reader, Date.now()).catch((e: unknown) => e);
      expect(read).toBeInstanceOf(StoreCorruptedError);
      expect((read as StoreCorruptedError).objectKey).toBe(claimedKey("mail", held.id));
    } finally {
      await queue.close();
    }
  });

  it("still lists a damaged stats record beside the other queues' counts", async () => {
    const store = new MemoryStore();
    const { queue, core } = await owner(store);
    try {
      await core.engine.commit(new WriteBatch().put(statsKey("mail"), packr.pack(["x2", 0, 1, 0, 0])));
      const reader = await QueueReader.open(store, "app");
      const health = await readQueueHealth(store, "app", reader, Date.now());
      expect(health.damagedStats).toEqual([{ queue: "mail", detail: expect.stringContaining('"x2"') }]);
      expect(health.queues.map((q) => [q.queue, q.counts.pending])).toEqual([["jobs", 1]]);
    } finally {
      await queue.close();
    }
  });
});
