/**
 * @module `Queue.ackClaimingNextInTurn`: `ackClaimingNext` built in the
 * caller's turn, whose commit the caller awaits in its own frame (the step
 * worker's path). The settlement and what it hands out are the same; a
 * close that begins while the commit is in flight still gets the job back.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue, SettlementEffects, ValidationError, type ClaimNext } from "taquba";
import type { SubmittedAck } from "../../runtime/queue/claim-settle.js";
import { InjectedFaultError } from "taquba/testing";
import { failWhen } from "../support/failing-store.js";
import { GatedStore } from "../support/gated-store.js";
import { dec, enc, openQueue, quiesce, settle } from "./helpers.js";

const takeIt: ClaimNext = { index: 0, reserve: () => true };

async function claimedOne(queue: Queue) {
  await queue.enqueue("steps", enc("first"));
  const job = await queue.claim("steps");
  if (job === null) throw new Error("nothing to claim");
  return job;
}

/** The submitted ack, failing the test when the queue could not build it in the caller's turn. */
function submitted(s: SubmittedAck | Promise<unknown>): SubmittedAck {
  if (s instanceof Promise) throw new Error("the ack was not built in the caller's turn");
  return s;
}

describe("ackClaimingNextInTurn", () => {
  it("commits the ack in the caller's turn; once durable, settled() hands the next job out claimed", async () => {
    const { queue } = await openQueue();
    const job = await claimedOne(queue);
    await quiesce(queue);
    const before = queue.engineStats.walBatches;
    const sub = submitted(queue.ackClaimingNextInTurn(job, new SettlementEffects().kvPut("k", enc("v")).enqueue("steps", enc("second")), takeIt));
    // Built and handed to the engine already: the claim is gone, the ack is in flight.
    expect(await queue.view().job(job.id)).toBeNull();
    await sub.durable;
    const res = await sub.settled();
    expect(queue.engineStats.walBatches - before).toBe(1);
    const next = res.next!;
    expect(res.enqueued).toEqual([{ jobId: next.id, newlyEnqueued: true }]);
    expect({ payload: dec(next.payload), attempt: next.attempt }).toEqual({ payload: "second", attempt: 1 });
    expect(await queue.kvGet("k")).toEqual(enc("v"));
    await queue.ack(next);
    expect(await queue.view().stats("steps")).toMatchObject({ pending: 0, claimed: 0, done: 2 });
    await queue.close();
  });

  it("a close that begins while the commit is in flight waits for it, and gets the job back with its attempt uncounted", async () => {
    let holding = false;
    const inner = new MemoryStore();
    const store = new GatedStore(inner, (key) => holding && key.includes("/wal/"));
    const { queue } = await openQueue({ store });
    const job = await claimedOne(queue);
    await quiesce(queue);
    holding = true;
    const sub = submitted(queue.ackClaimingNextInTurn(job, new SettlementEffects().enqueue("steps", enc("second")), takeIt));
    await store.waitHeld(1);
    let closed = false;
    const closing = queue.close().then(() => {
      closed = true;
    });
    await settle(5);
    // The chained claim's commit is not durable: the close waits for it.
    expect(closed).toBe(false);
    holding = false;
    for (const h of [...store.held]) store.release(h.key);
    await sub.durable;
    const res = await sub.settled();
    expect(res.next).toBeUndefined();
    await closing;
    const reopened = await Queue.open(inner, "q", { flushIntervalMs: 0 });
    expect(await reopened.view().stats("steps")).toMatchObject({ pending: 1, claimed: 0 });
    const again = await reopened.claim("steps");
    expect({ payload: dec(again!.payload), attempt: again!.attempt }).toEqual({ payload: "second", attempt: 1 });
    await reopened.close();
  });

  it("a commit the store refuses rejects durable; failed() hands nothing out, and after a reopen the job is still there to work, the next never enqueued", async () => {
    let failing = false;
    const inner = new MemoryStore();
    const store = failWhen(inner, (call, key) => (failing && call === "put" && key.includes("/wal/") ? new InjectedFaultError("put", key, false) : undefined));
    const { queue } = await openQueue({ store });
    const job = await claimedOne(queue);
    await quiesce(queue);
    failing = true;
    const sub = submitted(queue.ackClaimingNextInTurn(job, new SettlementEffects().kvPut("k", enc("v")).enqueue("steps", enc("second")), takeIt));
    const err = await sub.durable.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Error);
    sub.failed(err);
    // The queue is poisoned by the failed write: nothing more is handed out or committed.
    expect(queue.closed).toBe(true);
    await expect(queue.claim("steps")).rejects.toThrow();
    await queue.close();
    failing = false;
    const reopened = await Queue.open(inner, "q", { flushIntervalMs: 0 });
    expect(await reopened.kvGet("k")).toBeNull();
    expect(await reopened.view().stats("steps")).toMatchObject({ pending: 1, claimed: 0, done: 0 });
    const again = await reopened.claim("steps");
    expect(dec(again!.payload)).toBe("first");
    await reopened.close();
  });

  it("refuses a ClaimNext it cannot use with a rejected promise, and settles nothing", async () => {
    const { queue } = await openQueue();
    const job = await claimedOne(queue);
    const effects = new SettlementEffects().enqueue("steps", enc("second"));
    const refused = queue.ackClaimingNextInTurn(job, effects, { index: 3, reserve: () => true });
    expect(refused).toBeInstanceOf(Promise);
    await expect(refused).rejects.toThrow(ValidationError);
    const odd = queue.ackClaimingNextInTurn(job, effects, { index: 0, reserve: () => "yes" as unknown as boolean });
    await expect(odd instanceof Promise ? odd : Promise.resolve()).rejects.toThrow(/reserve must answer true/);
    for (const bad of [null, { index: Number.NaN, reserve: () => true }, { index: 0, leaseMs: Number.POSITIVE_INFINITY, reserve: () => true }]) {
      const r = queue.ackClaimingNextInTurn(job, effects, bad as unknown as ClaimNext);
      await expect(r instanceof Promise ? r : Promise.resolve()).rejects.toThrow(ValidationError);
    }
    // A copy of the claimed job is not a claim.
    const copy = queue.ackClaimingNextInTurn({ ...job }, effects, takeIt);
    await expect(copy instanceof Promise ? copy : Promise.resolve()).rejects.toThrow(/settle only ClaimedJobs/);
    expect(await queue.view().job(job.id)).toMatchObject({ state: "claimed" });
    // Still held: it acks.
    await queue.ack(job);
    await queue.close();
  });
  it("a claim applied after the ack counts as a commit since it: nothingCommittedSince turns false", async () => {
    const { queue } = await openQueue();
    const job = await claimedOne(queue);
    await queue.enqueue("other", enc("elsewhere"));
    await quiesce(queue);
    const sub = submitted(queue.ackClaimingNextInTurn(job, new SettlementEffects().enqueue("steps", enc("second")), takeIt));
    await sub.durable;
    // Durable alone commits nothing more.
    expect(sub.nothingCommittedSince?.()).toBe(true);
    const other = await queue.claim("other");
    expect(other === null ? null : dec(other.payload)).toBe("elsewhere");
    expect(sub.nothingCommittedSince?.()).toBe(false);
    const res = await sub.settled();
    await queue.ack(res.next!);
    await queue.ack(other!);
    await queue.close();
  });
});
