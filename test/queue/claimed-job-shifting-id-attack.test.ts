/**
 * @module A settlement reads the claim from the job's hidden slot and the
 * job id from the object it is handed. An object inheriting from a claimed
 * job can define `id` as a getter that answers its own job's id the first
 * time (so the claim's token holds it) and another claimed job's id after:
 * a settlement that reads the id more than once then settles the other
 * job, which a different holder claimed, with this job's claim, and drops
 * that holder's lease. Every settlement must act on one job only: the
 * claim's own, or none.
 */
import { describe, expect, it } from "vitest";
import { ClaimLostError, SettlementEffects, type ClaimedJob } from "taquba";
import { enc, openQueue } from "./helpers.js";

/** An object carrying `own`'s claim whose id is `own.id` on the first read and `other.id` on every later one. */
function shiftingId(own: ClaimedJob, other: ClaimedJob): ClaimedJob {
  let reads = 0;
  return Object.create(own, { id: { get: () => (reads++ === 0 ? own.id : other.id), enumerable: true } }) as ClaimedJob;
}

const settlements: [string, (queue: Awaited<ReturnType<typeof openQueue>>["queue"], job: ClaimedJob) => Promise<unknown>][] = [
  ["ack", (q, j) => q.ack(j, new SettlementEffects().kvPut("x", enc("1")))],
  ["nack", (q, j) => q.nack(j, "e")],
  ["nack uncounted", (q, j) => q.nack(j, "e", undefined, { countAttempt: false })],
  ["deadLetter", (q, j) => q.deadLetter(j, "e")],
  ["ackClaimingNext", (q, j) => q.ackClaimingNext(j, new SettlementEffects().enqueue("q", enc("n")), { index: 0, reserve: () => true })],
];

describe("a claimed job whose id answers differently on each read", () => {
  it.each(settlements)("%s settles its claim's own job or none, never another holder's", async (_name, settleWith) => {
    const { queue } = await openQueue();
    await queue.enqueue("q", enc("a"));
    await queue.enqueue("q", enc("b"));
    const jobA = (await queue.claim("q"))!;
    const jobB = (await queue.claim("q"))!;
    const outcome = await settleWith(queue, shiftingId(jobA, jobB)).then(
      () => "settled",
      (err: unknown) => err,
    );
    if (outcome !== "settled") expect(outcome).toBeInstanceOf(ClaimLostError);
    // B's holder still holds B: its record is claimed, and it settles B once.
    expect(await queue.view().job(jobB.id)).toMatchObject({ state: "claimed" });
    await queue.ack(jobB);
    expect(await queue.view().job(jobB.id)).toBeNull();
    // A was settled through its claim, or is still claimed and settles now.
    if (outcome === "settled") await expect(queue.ack(jobA)).rejects.toBeInstanceOf(ClaimLostError);
    else await queue.ack(jobA);
    await queue.close();
  });
});
