/**
 * @module Settlements: ack, nack and deadLetter with their effects, retention and
 * history, and effects validation.
 */
import { describe, expect, it } from "vitest";
import { ClaimLostError, KvValueTooLargeError, MAX_KV_VALUE_SIZE, SettlementEffects, ValidationError } from "taquba";
import { dec, enc, openQueue, settle } from "./helpers.js";

describe("ack", () => {
  it("applies effects (KV and enqueues) in the ack commit and returns their outcomes", async () => {
    const { queue } = await openQueue();
    await queue.kvPut("gone", enc("1"));
    await queue.enqueue("next", enc("held"), { dedupKey: "dup" });
    const { jobId } = await queue.enqueue("q", enc("a"));
    const job = (await queue.claim("q"))!;
    const out = await queue.ack(
      job,
      new SettlementEffects().kvPut("status", enc("done")).kvDelete("gone").enqueue("next", enc("b")).enqueue("next", enc("c"), { dedupKey: "dup" }),
    );
    expect(out.map((o) => o.newlyEnqueued)).toEqual([true, false]);
    expect(dec((await queue.kvGet("status"))!)).toBe("done");
    expect(await queue.kvGet("gone")).toBeNull();
    expect(await queue.view().stats("next")).toMatchObject({ pending: 2 });
    expect(await queue.view().job(jobId)).toBeNull();
    expect(await queue.view().attemptHistory(jobId)).toEqual([]);
    await queue.close();
  });

  it("keeps a done record with retention and sweeps it when the window ends", async () => {
    const { queue, clock } = await openQueue({ queueConfigs: { q: { doneRetentionMs: 60_000 } } });
    const { jobId } = await queue.enqueue("q", enc("a"));
    await queue.ack((await queue.claim("q"))!);
    expect(await queue.view().job(jobId)).toMatchObject({ state: "done", completedAt: clock.now() });
    expect((await queue.view().listJobs("q", "done")).items.map((j) => j.id)).toEqual([jobId]);
    expect(await queue.view().attemptHistory(jobId)).toMatchObject([{ attempt: 1, outcome: "completed" }]);
    clock.advance(59_999);
    await settle();
    expect(await queue.view().job(jobId)).not.toBeNull();
    clock.advance(1);
    await settle();
    expect(await queue.view().job(jobId)).toBeNull();
    expect(await queue.view().stats("q")).toMatchObject({ done: 1 });
    await queue.close();
  });

  it("a second settlement of the same claim is ClaimLostError and applies nothing", async () => {
    const { queue } = await openQueue();
    await queue.enqueue("q", enc("a"));
    const job = (await queue.claim("q"))!;
    await queue.ack(job);
    await expect(queue.ack(job, new SettlementEffects().kvPut("x", enc("1")))).rejects.toBeInstanceOf(ClaimLostError);
    await expect(queue.nack(job, "e")).rejects.toBeInstanceOf(ClaimLostError);
    expect(await queue.kvGet("x")).toBeNull();
    await queue.close();
  });

  it("refuses a job object that did not come from this queue's claim", async () => {
    const { queue } = await openQueue();
    await queue.enqueue("q", enc("a"));
    const job = (await queue.claim("q"))!;
    await expect(queue.ack({ ...job })).rejects.toBeInstanceOf(ValidationError);
    const other = (await openQueue()).queue;
    await expect(other.ack(job)).rejects.toBeInstanceOf(ClaimLostError);
    await queue.close();
    await other.close();
  });

  it("a copy keeping the claimed job's lease cannot settle it; the job handed out still can", async () => {
    const { queue } = await openQueue();
    await queue.enqueue("q", enc("a"));
    const job = (await queue.claim("q"))!;
    const copy = Object.freeze({ ...job, lease: job.lease });
    await expect(queue.ack(copy)).rejects.toBeInstanceOf(ValidationError);
    await expect(queue.nack(copy, "e")).rejects.toBeInstanceOf(ValidationError);
    expect(await queue.claim("q")).toBeNull();
    await queue.ack(job);
    expect(await queue.view().stats("q")).toMatchObject({ pending: 0, claimed: 0 });
    await expect(queue.ack(job)).rejects.toBeInstanceOf(ClaimLostError);
    await queue.close();
  });
});

describe("nack", () => {
  it("retries after 1 s, 2 s, then dead-letters at the limit with effects applied only then", async () => {
    const { queue, clock } = await openQueue();
    const { jobId } = await queue.enqueue("q", enc("a"));
    let job = (await queue.claim("q"))!;
    const t0 = clock.now();
    expect(await queue.nack(job, "e1", new SettlementEffects().kvPut("first", enc("x")))).toEqual({ kind: "retried", runAt: t0 + 1000 });
    expect(await queue.kvGet("first")).toBeNull();
    expect(await queue.view().job(jobId)).toMatchObject({ state: "scheduled", runAt: t0 + 1000, lastError: "e1", attempt: 1 });
    clock.advance(999);
    await settle();
    expect(await queue.claim("q")).toBeNull();
    clock.advance(1);
    await settle();
    job = (await queue.claim("q"))!;
    expect(job.attempt).toBe(2);
    expect(job.lastError).toBe("e1");
    expect(job.isLastAttempt()).toBe(false);
    const t1 = clock.now();
    expect(await queue.nack(job, "e2")).toEqual({ kind: "retried", runAt: t1 + 2000 });
    clock.advance(2000);
    await settle();
    job = (await queue.claim("q"))!;
    expect(job.isLastAttempt()).toBe(true);
    const res = await queue.nack(job, "e3", new SettlementEffects().kvPut("dead", enc("y")).enqueue("notify", enc("n")));
    expect(res.kind).toBe("dead");
    expect(res.kind === "dead" && res.enqueued[0]?.newlyEnqueued).toBe(true);
    expect(dec((await queue.kvGet("dead"))!)).toBe("y");
    expect(await queue.view().stats("q")).toMatchObject({ pending: 0, scheduled: 0, claimed: 0, dead: 1 });
    expect((await queue.view().deadJobs("q")).map((j) => [j.id, j.lastError])).toEqual([[jobId, "e3"]]);
    expect((await queue.view().attemptHistory(jobId)).map((a) => [a.attempt, a.outcome, a.error])).toEqual([
      [1, "retried", "e1"],
      [2, "retried", "e2"],
      [3, "dead_lettered", "e3"],
    ]);
    await queue.close();
  });

  it("zero backoff requeues to pending at once", async () => {
    const { queue } = await openQueue({ defaultQueueConfig: { backoff: { baseMs: 0, maxMs: 0 } } });
    await queue.enqueue("q", enc("a"));
    const res = await queue.nack((await queue.claim("q"))!, "e");
    expect(res.kind).toBe("retried");
    expect((await queue.claim("q"))?.attempt).toBe(2);
    await queue.close();
  });

  it("retryAfterMs delays the retry past a shorter backoff, never before a longer one", async () => {
    const { queue, clock } = await openQueue({ defaultQueueConfig: { maxAttempts: 5, backoff: { baseMs: 1000, maxMs: 60_000 } } });
    await queue.enqueue("q", enc("a"));
    const t0 = clock.now();
    const first = await queue.nack((await queue.claim("q"))!, "429", undefined, { retryAfterMs: 7000 });
    expect(first).toEqual({ kind: "retried", runAt: t0 + 7000 });
    clock.advance(6999);
    await settle();
    expect(await queue.claim("q")).toBeNull();
    clock.advance(1);
    await settle();
    const second = await queue.claim("q");
    expect(second?.attempt).toBe(2);
    // Backoff for the second failure is 2 s; a 500 ms Retry-After does not shorten it.
    const t1 = clock.now();
    expect(await queue.nack(second!, "503", undefined, { retryAfterMs: 500 })).toEqual({ kind: "retried", runAt: t1 + 2000 });
    await expect(queue.nack(second!, "x", undefined, { retryAfterMs: -1 })).rejects.toThrow(ValidationError);
    await queue.close();
  });

  it("dead records are swept after the dead retention", async () => {
    const { queue, clock } = await openQueue({ queueConfigs: { q: { deadRetention: 10_000, maxAttempts: 1 } } });
    const { jobId } = await queue.enqueue("q", enc("a"));
    await queue.nack((await queue.claim("q"))!, "boom");
    expect(await queue.view().stats("q")).toMatchObject({ dead: 1 });
    clock.advance(10_000);
    await settle();
    expect(await queue.view().job(jobId)).toBeNull();
    expect(await queue.view().stats("q")).toMatchObject({ dead: 0 });
    await queue.close();
  });
});

describe("deadLetter", () => {
  it("dead-letters at once with effects, and requeueDead brings it back", async () => {
    const { queue } = await openQueue();
    const { jobId } = await queue.enqueue("q", enc("a"), { maxAttempts: 5 });
    const job = (await queue.claim("q"))!;
    const out = await queue.deadLetter(job, "bad input", new SettlementEffects().kvPut("k", enc("v")).enqueue("n", enc("x")));
    expect(out).toHaveLength(1);
    expect(await queue.kvGet("k")).not.toBeNull();
    expect(await queue.view().job(jobId)).toMatchObject({ state: "dead", lastError: "bad input", attempt: 1 });
    expect(await queue.requeueDead(jobId)).toBe(true);
    expect(await queue.view().job(jobId)).toMatchObject({ state: "pending", attempt: 0 });
    expect((await queue.claim("q"))?.id).toBe(jobId);
    expect((await queue.view().attemptHistory(jobId)).map((a) => a.outcome)).toEqual(["dead_lettered", "requeued"]);
    await queue.close();
  });
});

describe("effects validation", () => {
  it("is checked when staged", () => {
    const e = new SettlementEffects();
    expect(() => e.kvPut("", enc("x"))).toThrow(ValidationError);
    expect(() => e.kvPut("k", new Uint8Array(MAX_KV_VALUE_SIZE + 1))).toThrow(KvValueTooLargeError);
    expect(() => e.enqueue("bad/q", enc("x"))).toThrow(ValidationError);
    expect(() => e.enqueue("q", enc("x"), { priority: -3 })).toThrow(ValidationError);
    expect(e.isEmpty).toBe(true);
  });
});
