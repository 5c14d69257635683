/**
 * @module A job's lasting count of requeues from the dead letters: each
 * `requeueDead` adds one (its attempts start again), a claim hands it out
 * as `ClaimedJob.requeues`, and it outlasts every other transition, a
 * lease's expiry and a reopen of the store included. A job never requeued
 * has none.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue } from "taquba";
import { enc, openQueue, settle } from "./helpers.js";

describe("a job's count of requeues", () => {
  it("counts each requeue of the dead job, through nacks, put-backs, lease expiry and a reopen", async () => {
    const store = new MemoryStore();
    const { queue, clock } = await openQueue({ store, queueConfigs: { q: { maxAttempts: 3 } } });
    const { jobId } = await queue.enqueue("q", enc("a"));
    const first = (await queue.claim("q"))!;
    expect(first.requeues).toBeUndefined();
    expect("requeues" in first).toBe(false);
    await queue.deadLetter(first, "dead once");
    expect(await queue.requeueDead(jobId)).toBe(true);

    const again = (await queue.claim("q"))!;
    expect(again).toMatchObject({ attempt: 1, requeues: 1 });
    // A put-back keeps both.
    await queue.nack(again, "not now", undefined, { countAttempt: false });
    const putBack = (await queue.claim("q", 1_000))!;
    expect(putBack).toMatchObject({ attempt: 1, requeues: 1 });
    // A lease that runs out delivers it again with the next attempt, the count kept.
    clock.advance(1_000);
    await settle();
    const expired = (await queue.claim("q"))!;
    expect(expired).toMatchObject({ attempt: 2, requeues: 1 });
    await queue.deadLetter(expired, "dead twice");
    expect(await queue.requeueDead(jobId)).toBe(true);
    await queue.close();

    const reopened = await Queue.open(store, "q", { clock });
    try {
      const third = (await reopened.claim("q"))!;
      expect(third).toMatchObject({ id: jobId, attempt: 1, requeues: 2 });
      await reopened.ack(third);
    } finally {
      await reopened.close();
    }
  });
});
