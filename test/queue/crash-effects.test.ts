/**
 * @module Effects of ack, nack at the limit, deadLetter and cancel across a
 * crash: applied whole with their settlement or not at all.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue, SettlementEffects } from "taquba";
import { enc } from "./helpers.js";

/**
 * Each settlement kind with effects, then a "crash": a second writer opens
 * the same store without the first closing (the first is fenced). The new
 * process must see each settlement whole, state and effects together.
 */
describe("settlement effects survive a crash whole", () => {
  it("ack, nack at the limit, deadLetter and cancel", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    const q1 = await Queue.open(store, "q", { clock, flushIntervalMs: 0, defaultQueueConfig: { maxAttempts: 1 } });
    const ids = {
      ack: (await q1.enqueue("q", enc("ack"))).jobId,
      nack: (await q1.enqueue("q", enc("nack"))).jobId,
      dead: (await q1.enqueue("q", enc("dead"))).jobId,
      cancel: (await q1.enqueue("other", enc("cancel"))).jobId,
    };
    const fx = (tag: string) => new SettlementEffects().kvPut(`fx/${tag}`, enc(tag)).enqueue("follow", enc(tag), { dedupKey: tag });
    const [a, n, d] = await q1.claimBatch("q", 3);
    await q1.ack(a!, fx("ack"));
    await q1.nack(n!, "boom", fx("nack"));
    await q1.deadLetter(d!, "bad", fx("dead"));
    expect(await q1.cancelJob(ids.cancel, fx("cancel"))).toBe("removed");
    // A claim after the last durable commit may or may not survive; either is consistent.
    await q1.enqueue("late", enc("x"));
    void q1.claim("late");

    const q2 = await Queue.open(store, "q", { clock, flushIntervalMs: 0 });
    for (const tag of ["ack", "nack", "dead", "cancel"]) expect(await q2.kvGet(`fx/${tag}`)).not.toBeNull();
    expect(await q2.view().stats("follow")).toMatchObject({ pending: 4 });
    expect(await q2.view().job(ids.ack)).toBeNull();
    expect(await q2.view().job(ids.nack)).toMatchObject({ state: "dead", lastError: "boom" });
    expect(await q2.view().job(ids.dead)).toMatchObject({ state: "dead", lastError: "bad" });
    expect(await q2.view().job(ids.cancel)).toBeNull();
    expect(await q2.view().stats("q")).toMatchObject({ pending: 0, claimed: 0, done: 1, dead: 2 });
    const late = await q2.view().stats("late");
    expect(late.pending + late.claimed).toBe(0 + 1);
    expect(late.claimed).toBe(0); // recovery requeued it if the claim had become durable
    await q2.close();
    await q1.close().catch(() => undefined);
  });
});
