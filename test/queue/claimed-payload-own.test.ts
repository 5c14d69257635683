/**
 * @module A claimed job's payload is the worker's own array: it holds no
 * shared buffer of the engine (values waiting to be paged share 64 KiB
 * chunks, so a held payload of a few bytes would keep one alive, with
 * every other value in it), and changing it changes nothing stored.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue } from "taquba";
import { ticketOf } from "../../runtime/queue/claimed-job.js";

describe("claimed job payloads", () => {
  it("a payload held by a worker keeps no more than its own bytes alive", async () => {
    const queue = await Queue.open(new MemoryStore(), "q");
    // Each job in its own commit, with other records between them: every payload waits in a different chunk.
    for (let i = 0; i < 8; i++) {
      await queue.enqueue("jobs", new Uint8Array(100).fill(i + 1));
      await queue.enqueueBatch(Array.from({ length: 100 }, () => ({ queueName: "other", payload: new Uint8Array(600) })));
    }
    const held = [];
    for (let i = 0; i < 8; i++) {
      const job = (await queue.claim("jobs"))!;
      expect(job.payload).toEqual(new Uint8Array(100).fill(i + 1));
      held.push(job);
    }
    const retained = held.reduce((n, job) => n + job.payload.buffer.byteLength, 0);
    expect(retained).toBe(8 * 100);
    // Nor does the claimed record the job keeps for its settlement.
    for (const job of held) {
      const record = ticketOf(job)?.claimedRecord;
      expect(record).toBeDefined();
      expect(record!.payload.buffer.byteLength).toBe(100);
    }
    await queue.close();
  });

  it("changing a claimed payload changes neither the stored job nor its next claim", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "q");
    await queue.enqueue("jobs", new Uint8Array(100).fill(7));
    const job = (await queue.claim("jobs"))!;
    job.payload.fill(0);
    await queue.nack(job, "again", undefined, { countAttempt: false });
    const again = (await queue.claim("jobs"))!;
    expect(again.payload).toEqual(new Uint8Array(100).fill(7));
    await queue.close();
    const reopened = await Queue.open(store, "q");
    await reopened.close();
  });
});
