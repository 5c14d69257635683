/**
 * @module A chained claim's settlement takes the record its claim wrote
 * without decoding it again only while the store holds those bytes: a
 * record written since with other bytes is decoded, so the settlement acts
 * on what is stored, and one written with the same bytes settles as the
 * claim's.
 */
import { describe, expect, it } from "vitest";
import { ClaimLostError, type ClaimNext, type ClaimedJob, type Queue, SettlementEffects, WriteBatch } from "taquba";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import * as K from "../../runtime/queue/keys.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { decodeJob, encodeJob } from "../../runtime/queue/record.js";
import { dec, enc, openQueue } from "./helpers.js";

const always: ClaimNext = { index: 0, reserve: () => true };

/** A job of "steps" claimed by a chained ack (its ticket kept the record its claim wrote). */
async function chainedJob(queue: Queue, payload = "next"): Promise<ClaimedJob> {
  await queue.enqueue("steps", enc("first"));
  const first = (await queue.claim("steps"))!;
  const next = (await queue.ackClaimingNext(first, new SettlementEffects().enqueue("steps", enc(payload)), always)).next;
  if (next === undefined) throw new Error("the ack did not chain");
  return next;
}

/** Writes the stored record of `job` again, as `change` leaves a decoded copy of it, straight through the queue's engine. */
async function rewriteRecord(job: ClaimedJob, change: (r: ReturnType<typeof decodeJob>) => void): Promise<void> {
  const core = ticketOf(job)!.owner as QueueCore;
  const key = K.jobKey(job.id);
  const r = decodeJob(key, core.engine.get(key)!);
  change(r);
  await core.engine.commit(new WriteBatch().put(key, encodeJob(r)));
}

describe("a chained claim's settlement and the record its claim wrote", () => {
  it("an ack with nothing written since the claim settles the job", async () => {
    const { queue } = await openQueue();
    const next = await chainedJob(queue);
    expect(ticketOf(next)!.claimedRecord).toBeDefined();
    await queue.ack(next);
    expect(await queue.view().job(next.id)).toBeNull();
    expect(await queue.view().stats("steps")).toMatchObject({ pending: 0, claimed: 0, done: 2 });
    await queue.close();
  });

  it("reads a record written since the claim: one no longer claimed refuses the ack, which changes nothing", async () => {
    const { queue } = await openQueue();
    const next = await chainedJob(queue);
    await rewriteRecord(next, (r) => {
      r.state = "pending";
    });
    await expect(queue.ack(next)).rejects.toBeInstanceOf(ClaimLostError);
    expect(await queue.view().job(next.id)).toMatchObject({ state: "pending" });
    await queue.close();
  });

  it("reads a record written since the claim with the same bytes, and settles it", async () => {
    const { queue } = await openQueue();
    const next = await chainedJob(queue);
    await rewriteRecord(next, () => {});
    await queue.ack(next);
    expect(await queue.view().job(next.id)).toBeNull();
    await queue.close();
  });

  it("a nack, which writes the record back, reads what is stored: the attempt the claim counted and the payload", async () => {
    const { queue } = await openQueue();
    const next = await chainedJob(queue, "payload of the next job");
    await rewriteRecord(next, (r) => {
      r.maxAttempts = 1;
    });
    // The stored record allows one attempt: the nack dead-letters the job (the claim's record allowed more).
    expect(await queue.nack(next, "boom")).toMatchObject({ kind: "dead" });
    const dead = await queue.view().job(next.id);
    expect(dead).toMatchObject({ state: "dead", attempt: 1 });
    await queue.close();
    expect(dec(next.payload)).toBe("payload of the next job");
  });
});
