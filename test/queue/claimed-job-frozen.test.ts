/**
 * @module A claimed job and its headers are frozen (docs/queue.md): they are
 * the queue's, shared with the job's record, so a worker that assigns to one
 * gets a TypeError (test files are ES modules, so strict) and the job's
 * record, read by a later claim, keeps what was enqueued.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue } from "taquba";

describe("a claimed job", () => {
  it("is frozen with its headers: an assignment throws, and the next claim of the job sees the enqueued headers", async () => {
    const q = await Queue.open(new MemoryStore(), "q", { defaultQueueConfig: { backoff: { baseMs: 0, maxMs: 0 } } });
    await q.enqueue("jobs", new Uint8Array([1]), { headers: { tenant: "a" } });
    const job = (await q.claim("jobs"))!;
    expect(Object.isFrozen(job)).toBe(true);
    expect(Object.isFrozen(job.headers)).toBe(true);
    expect(() => {
      (job.headers as Record<string, string>).tenant = "b";
    }).toThrow(TypeError);
    expect(() => {
      (job as { headers: Record<string, string> }).headers = { tenant: "b" };
    }).toThrow(TypeError);
    // A copy is the way to build headers of one's own.
    expect({ ...job.headers, extra: "x" }).toEqual({ tenant: "a", extra: "x" });
    await q.nack(job, "try again");
    const again = (await q.claim("jobs"))!;
    expect(again.attempt).toBe(2);
    expect(again.headers).toEqual({ tenant: "a" });
    await q.close();
  });
});
