/**
 * @module Leases (extension, expiry, the reaper), cancellation, wakeScheduled and
 * waitForCompletion, on a MockClock.
 */
import { describe, expect, it } from "vitest";
import { CancelRequestedError, ClaimLostError, SettlementEffects, type DeadLetteredEvent } from "taquba";
import { LEASE_MARGIN_MS } from "../../runtime/queue/index.js";
import { dec, enc, openQueue, settle } from "./helpers.js";

describe("leases", () => {
  it("an expired lease is requeued, redelivered, and the old claim can no longer settle", async () => {
    const { queue, clock } = await openQueue();
    const { jobId } = await queue.enqueue("q", enc("a"));
    const first = (await queue.claim("q", 1000))!;
    clock.advance(999);
    await settle();
    expect(await queue.view().stats("q")).toMatchObject({ claimed: 1 });
    clock.advance(1);
    await settle();
    expect(await queue.view().stats("q")).toMatchObject({ pending: 1, claimed: 0 });
    const second = (await queue.claim("q", 1000))!;
    expect(second.id).toBe(jobId);
    expect(second.attempt).toBe(2);
    await expect(queue.ack(first)).rejects.toBeInstanceOf(ClaimLostError);
    await expect(first.lease.ensureAtLeast(10)).rejects.toBeInstanceOf(ClaimLostError);
    await queue.ack(second);
    expect((await queue.view().attemptHistory(jobId)).map((a) => a.outcome)).toEqual([]);
    await queue.close();
  });

  it("ensureAtLeast extends (never shortens) and the reaper follows the new expiry", async () => {
    const { queue, clock } = await openQueue();
    await queue.enqueue("q", enc("a"));
    const job = (await queue.claim("q", 1000))!;
    const t0 = clock.now();
    await job.lease.ensureAtLeast(10_000);
    expect(job.lease.expiresAt).toBe(t0 + 10_000 + LEASE_MARGIN_MS);
    await job.lease.ensureAtLeast(1);
    expect(job.lease.expiresAt).toBe(t0 + 10_000 + LEASE_MARGIN_MS);
    clock.advance(10_000 + LEASE_MARGIN_MS - 1);
    await settle();
    expect(await queue.view().stats("q")).toMatchObject({ claimed: 1 });
    await queue.ack(job);
    await queue.close();
  });

  it("the reaper dead-letters at the attempt limit and tells onDeadLettered", async () => {
    const events: DeadLetteredEvent[] = [];
    const { queue, clock } = await openQueue({ queueConfigs: { q: { maxAttempts: 2 } } });
    const off = queue.onDeadLettered((e) => events.push(e));
    const { jobId } = await queue.enqueue("q", enc("a"));
    const waiting = queue.waitForCompletion(jobId);
    await queue.claim("q", 100);
    clock.advance(100);
    await settle();
    await queue.claim("q", 100);
    clock.advance(100);
    await settle();
    expect(events).toEqual([{ jobId, queueName: "q", reason: "lease_expired", lastError: "lease expired" }]);
    expect(await waiting).toMatchObject({ kind: "dead", job: { id: jobId, state: "dead" } });
    expect((await queue.view().attemptHistory(jobId)).map((a) => a.outcome)).toEqual(["lease_expired", "lease_expired"]);
    off();
    await queue.close();
  });

  it("the reaper timer re-arms when an earlier lease appears", async () => {
    const { queue, clock } = await openQueue();
    await queue.enqueue("q", enc("long"));
    await queue.enqueue("q", enc("short"));
    await queue.claim("q", 60_000);
    await settle();
    await queue.claim("q", 50);
    await settle();
    clock.advance(50);
    await settle();
    expect(await queue.view().stats("q")).toMatchObject({ pending: 1, claimed: 1 });
    await queue.close();
  });
});

describe("cancel", () => {
  it("removes pending and scheduled jobs with effects in one commit", async () => {
    const { queue, clock } = await openQueue();
    const a = await queue.enqueue("q", enc("a"));
    const b = await queue.enqueue("q", enc("b"), { runAt: clock.now() + 1000 });
    const w = queue.waitForCompletion(a.jobId);
    expect(await queue.cancelJob(a.jobId, new SettlementEffects().kvPut("cancelled/a", enc("1")).enqueue("notify", enc("a")))).toBe("removed");
    expect(await w).toEqual({ kind: "cancelled" });
    expect(await queue.cancel(b.jobId)).toBe(true);
    expect(await queue.kvGet("cancelled/a")).not.toBeNull();
    expect(await queue.view().stats("q")).toMatchObject({ pending: 0, scheduled: 0 });
    expect(await queue.view().stats("notify")).toMatchObject({ pending: 1 });
    expect(await queue.cancelJob(a.jobId)).toBe("not_found");
    expect(await queue.cancelJob("never")).toBe("not_found");
    clock.advance(1000);
    await settle();
    expect(await queue.claim("q")).toBeNull();
    await queue.close();
  });

  it("a claimed job gets a persisted cooperative request; effects are discarded", async () => {
    const { queue, clock } = await openQueue();
    const { jobId } = await queue.enqueue("q", enc("a"));
    const job = (await queue.claim("q", 1000))!;
    expect(job.cancelSignal.aborted).toBe(false);
    expect(await queue.cancelJob(jobId, new SettlementEffects().kvPut("x", enc("1")))).toBe("requested");
    expect(await queue.cancel(jobId)).toBe(false);
    expect(job.cancelSignal.aborted).toBe(true);
    expect(await queue.kvGet("x")).toBeNull();
    expect(await queue.view().job(jobId)).toMatchObject({ state: "claimed", cancelRequested: true });
    await expect(job.lease.ensureAtLeast(1000)).rejects.toBeInstanceOf(CancelRequestedError);
    // The lease runs out; the re-claim starts already cancelled.
    clock.advance(1000);
    await settle();
    const again = (await queue.claim("q"))!;
    expect(again.id).toBe(jobId);
    expect(again.cancelSignal.aborted).toBe(true);
    await queue.ack(again);
    await queue.close();
  });
});

describe("a claim's cancel signal", () => {
  it("is one signal at every read, aborted by a cancel made before or after the first read, and copied with the job", async () => {
    const { queue } = await openQueue();
    const a = await queue.enqueue("q", enc("a"));
    const b = await queue.enqueue("q", enc("b"));
    const first = (await queue.claim("q", 1000))!;
    const second = (await queue.claim("q", 1000))!;
    expect([first.id, second.id]).toEqual([a.jobId, b.jobId]);
    // Cancelled before anything read its signal: the request still reaches it and the lease.
    expect(await queue.cancelJob(first.id)).toBe("requested");
    await expect(first.lease.ensureAtLeast(1000)).rejects.toBeInstanceOf(CancelRequestedError);
    expect(first.cancelSignal.aborted).toBe(true);
    expect(String(first.cancelSignal.reason)).toMatch(/cancellation of job .* was requested/);
    expect(first.cancelSignal).toBe(first.cancelSignal);
    // Read first, then cancelled: listeners hear it.
    const signal = second.cancelSignal;
    let heard = 0;
    signal.addEventListener("abort", () => heard++);
    expect(await queue.cancelJob(second.id)).toBe("requested");
    expect(heard).toBe(1);
    expect(second.cancelSignal).toBe(signal);
    // A copy of the job carries the same signal; the job stays frozen with its keys in order.
    expect({ ...second }.cancelSignal).toBe(signal);
    expect(Object.isFrozen(second)).toBe(true);
    expect(Object.keys(second).indexOf("cancelSignal")).toBe(Object.keys(second).indexOf("lease") + 1);
    await queue.ack(first);
    await queue.ack(second);
    await queue.close();
  });
});

describe("wakeScheduled", () => {
  it("wakes a scheduled job with attached bytes that every redelivery sees", async () => {
    const { queue, clock } = await openQueue({ defaultQueueConfig: { backoff: { baseMs: 0, maxMs: 0 } } });
    const { jobId } = await queue.enqueue("q", enc("a"), { runAt: clock.now() + 3_600_000 });
    expect(await queue.wakeScheduled("other", jobId)).toBe(false);
    clock.advance(10);
    expect(await queue.wakeScheduled("q", jobId, enc("signal!"))).toBe(true);
    expect(await queue.wake(jobId)).toBe("not_scheduled");
    expect(await queue.wake("nope")).toBe("not_found");
    const first = (await queue.claim("q"))!;
    expect(dec(first.attached!)).toBe("signal!");
    expect(first.wokenAt).toBe(clock.now());
    await queue.nack(first, "retry");
    const second = (await queue.claim("q"))!;
    expect(second.id).toBe(jobId);
    expect(dec(second.attached!)).toBe("signal!");
    await queue.ack(second);
    await queue.close();
  });

  it("exactly one of wake, promotion and cancel wins", async () => {
    const { queue, clock } = await openQueue();
    const { jobId } = await queue.enqueue("q", enc("a"), { runAt: clock.now() + 100 });
    clock.advance(100);
    await settle();
    expect(await queue.wakeScheduled("q", jobId, enc("late"))).toBe(false);
    expect((await queue.claim("q"))?.attached).toBeUndefined();
    const b = await queue.enqueue("q", enc("b"), { runAt: clock.now() + 100 });
    // Both calls start in the same turn; the cancel's transaction runs first and the wake finds nothing.
    const results = await Promise.all([queue.cancelJob(b.jobId), queue.wake(b.jobId, enc("x"))]);
    expect(results).toEqual(["removed", "not_found"]);
    await queue.close();
  });
});

describe("waitForCompletion", () => {
  it("resolves on ack, times out on the clock, and reports finished jobs", async () => {
    const { queue, clock } = await openQueue({ queueConfigs: { kept: { doneRetentionMs: 1000 } } });
    const { jobId } = await queue.enqueue("q", enc("a"));
    const t = queue.waitForCompletion(jobId, { timeoutMs: 500 });
    clock.advance(500);
    expect(await t).toEqual({ kind: "timed_out" });
    const w = queue.waitForCompletion(jobId);
    await queue.ack((await queue.claim("q"))!);
    expect(await w).toEqual({ kind: "done" });
    expect(await queue.waitForCompletion(jobId)).toEqual({ kind: "gone" });
    const k = await queue.enqueue("kept", enc("b"));
    await queue.ack((await queue.claim("kept"))!);
    expect(await queue.waitForCompletion(k.jobId)).toMatchObject({ kind: "done", job: { state: "done" } });
    const ac = new AbortController();
    const c = await queue.enqueue("q", enc("c"));
    const aborted = queue.waitForCompletion(c.jobId, { signal: ac.signal });
    ac.abort(new Error("stop"));
    await expect(aborted).rejects.toThrow("stop");
    await queue.close();
  });
});
