/**
 * @module A job's lasting count of requeues from the dead letters: each
 * `requeueDead` adds one (its attempts start again), a claim hands it out
 * as `ClaimedJob.requeues`, and it outlasts every other transition, a
 * lease's expiry and a reopen of the store included. A job never requeued
 * has none; one at the greatest count a number holds exactly is refused
 * another requeue.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, MockClock, Queue, ValidationError, WriteBatch } from "taquba";
import { jobKey } from "../../runtime/queue/keys.js";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { ENGINE_PREFIX } from "../../runtime/queue/queue.js";
import { decodeJob, encodeJob } from "../../runtime/queue/record.js";
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

describe("a requeue count at its bound", () => {
  it("refuses another requeue with a ValidationError and leaves the dead job as it was", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_764_000_000_000);
    let queue = await Queue.open(store, "q", { clock, flushIntervalMs: 0, queueConfigs: { q: { maxAttempts: 1 } } });
    const { jobId } = await queue.enqueue("q", enc("a"));
    await queue.deadLetter((await queue.claim("q"))!, "dead");
    await queue.close();
    // The count set to the greatest a number holds exactly, as only a store written outside the queue could.
    const engine = await Engine.open(new PrefixedStore(new PrefixedStore(store, "q/"), ENGINE_PREFIX));
    const rec = decodeJob(jobKey(jobId), engine.get(jobKey(jobId))!);
    await engine.commit(new WriteBatch().put(jobKey(jobId), encodeJob({ ...rec, requeues: Number.MAX_SAFE_INTEGER })));
    await engine.close();

    queue = await Queue.open(store, "q", { clock, flushIntervalMs: 0 });
    try {
      const err = await queue.requeueDead(jobId).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toMatch(new RegExp(`job ${jobId} was put back ${Number.MAX_SAFE_INTEGER} times.*enqueue it again as a new job`));
      expect(await queue.view().job(jobId)).toMatchObject({ state: "dead" });
      expect(await queue.view().stats("q")).toMatchObject({ pending: 0, dead: 1 });
      expect(await queue.claim("q")).toBeNull();
    } finally {
      await queue.close();
    }
  });
});
