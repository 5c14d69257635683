/**
 * @module An `ackClaimingNext` whose enqueues cannot all be inserted (one
 * names the id of a job that exists): the ack and its enqueues apply
 * nothing, and the payload object an earlier enqueue of the same effects
 * offloaded is deleted, as for any transaction that never commits. The
 * outcomes of the inserts that went in before the refusal must not count
 * those jobs as enqueued.
 */
import { describe, expect, it } from "vitest";
import { DuplicateJobIdError, MemoryStore, SettlementEffects } from "taquba";
import { enc, openQueue, quiesce } from "./helpers.js";

/** Objects in the store under the queue's offloaded payloads. */
async function payloadObjects(store: MemoryStore): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list("")) if (o.key.includes("payloads/")) out.push(o.key);
  return out;
}

describe("a chained ack refused at its second insert", () => {
  it("settles nothing and deletes the payload object its first enqueue offloaded; it then goes through", async () => {
    const store = new MemoryStore();
    const { queue } = await openQueue({ store, maxPayloadBytes: 1 << 20 });
    const taken = await queue.enqueue("other", enc("holds the id"));
    await queue.enqueue("steps", enc("first"));
    const job = (await queue.claim("steps"))!;
    await quiesce(queue);
    const before = await payloadObjects(store);
    const big = new Uint8Array(300 * 1024).fill(7);
    const refused = new SettlementEffects().enqueue("steps", big).enqueue("steps", enc("again"), { jobId: taken.jobId });
    await expect(queue.ackClaimingNext(job, refused, { index: 0, reserve: () => true })).rejects.toBeInstanceOf(DuplicateJobIdError);
    await quiesce(queue);
    expect(await payloadObjects(store)).toEqual(before);
    expect(await queue.view().job(job.id)).toMatchObject({ state: "claimed" });
    expect(await queue.view().stats("steps")).toMatchObject({ pending: 0, claimed: 1, done: 0 });
    // Without the id in use the same ack goes through, its payload offloaded afresh and handed out claimed.
    const res = await queue.ackClaimingNext(job, new SettlementEffects().enqueue("steps", big), { index: 0, reserve: () => true });
    expect(Buffer.from(res.next!.payload).equals(Buffer.from(big))).toBe(true);
    expect(await payloadObjects(store)).toHaveLength(before.length + 1);
    await queue.close();
  });
});
