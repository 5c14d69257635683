/**
 * @module Attacks on the engine keys kept across uses (JobKeys on a chained
 * claim's ticket, the kept stats and caller KV keys): a ticket kept after
 * its job was acked, dead-lettered, requeued or replaced by a new job of
 * the same id in another queue settles nothing and never touches the job
 * now under that id; caller KV keys that differ only in odd Unicode stay
 * apart, through the kept keys and after a reopen.
 */
import { describe, expect, it } from "vitest";
import { ClaimLostError, MemoryStore, Queue, SettlementEffects } from "taquba";
import type { ClaimNext } from "../../runtime/queue/types.js";
import { dec, enc, openQueue } from "./helpers.js";

const claimNext = (): ClaimNext => ({ index: 0, reserve: () => true });

/** Caller KV keys of odd Unicode: astral, combining marks, a byte order mark, zero-width joiners, the last BMP character, two differing in their last code unit. */
const ODD = ["\u{1f600}", "e\u0301", "é", "\ufeffid", "a\u200db", "\uffff", "\u{10ffff}", "\u{1f600}\u{1f601}", "\u{1f600}\u{1f602}"];

/** Job ids (letters, digits, '_' and '-'): short, of the longest length, one character apart. */
const IDS = ["J", "job-1", "job_1", "x".repeat(128)];

describe("kept engine keys against stale tickets and odd keys", () => {
  for (const id of IDS) {
    it(`a chained claim's ticket for job ${JSON.stringify(id)}, kept after the job was acked and its id reused in another queue, settles nothing`, async () => {
      const { queue } = await openQueue();
      await queue.enqueue("a", enc("first"));
      const first = (await queue.claim("a"))!;
      const stale = (await queue.ackClaimingNext(first, new SettlementEffects().enqueue("a", enc("chained"), { jobId: id }), claimNext())).next!;
      expect(stale.id).toBe(id);
      await queue.ack(stale);
      // The same id, now a job of another queue, claimed by an ordinary claim.
      await queue.enqueue("b", enc("other"), { jobId: id });
      const other = (await queue.claim("b"))!;
      expect(other.id).toBe(id);
      // Every settlement of the stale ticket is refused and leaves the new job as it was.
      await expect(queue.ack(stale)).rejects.toBeInstanceOf(ClaimLostError);
      await expect(queue.nack(stale, "stale")).rejects.toBeInstanceOf(ClaimLostError);
      await expect(queue.deadLetter(stale, "stale")).rejects.toBeInstanceOf(ClaimLostError);
      expect(await queue.view().job(id)).toMatchObject({ queueName: "b", state: "claimed" });
      expect((await queue.view().listJobs("b", "claimed")).items.map((j) => j.id)).toEqual([id]);
      expect(await queue.view().stats("b")).toMatchObject({ claimed: 1 });
      await queue.ack(other);
      expect(await queue.view().job(id)).toBeNull();
      expect(await queue.view().stats("a")).toMatchObject({ pending: 0, claimed: 0 });
      expect(await queue.view().stats("b")).toMatchObject({ pending: 0, claimed: 0 });
      await queue.close();
    });
  }

  it("a chained claim's ticket kept after its job was dead-lettered and requeued settles nothing; the requeued job's own claim does", async () => {
    const { queue } = await openQueue();
    await queue.enqueue("a", enc("first"));
    const first = (await queue.claim("a"))!;
    const chained = (await queue.ackClaimingNext(first, new SettlementEffects().enqueue("a", enc("chained"), { jobId: "job-1" }), claimNext())).next!;
    await queue.deadLetter(chained, "gave up");
    await expect(queue.ack(chained)).rejects.toBeInstanceOf(ClaimLostError);
    expect(await queue.requeueDead(chained.id)).toBe(true);
    await expect(queue.ack(chained)).rejects.toBeInstanceOf(ClaimLostError);
    const again = (await queue.claim("a"))!;
    expect(again.id).toBe(chained.id);
    await expect(queue.ack(chained)).rejects.toBeInstanceOf(ClaimLostError);
    expect(await queue.view().job(chained.id)).toMatchObject({ state: "claimed" });
    await queue.ack(again);
    expect(await queue.view().job(chained.id)).toBeNull();
    expect(await queue.view().stats("a")).toMatchObject({ pending: 0, claimed: 0, dead: 0 });
    await queue.close();
  });

  it("caller KV keys that differ only in odd Unicode keep their own values, read now, after more keys than are kept, and after a reopen", async () => {
    const store = new MemoryStore();
    const { queue } = await openQueue({ store });
    const keys = [...ODD, "k/\u{1f600}", "k/\ud83d\ude00x", "k/é", "k/e\u0301"];
    for (const [i, k] of keys.entries()) await queue.kvPut(k, enc(`v${i}`));
    for (const [i, k] of keys.entries()) expect(dec(queue.kvGetNow(k)!), k).toBe(`v${i}`);
    // Push them out of the kept keys (two generations of 1,024) and read again.
    for (let i = 0; i < 3000; i++) queue.kvGetNow(`filler/${i}`);
    for (const [i, k] of keys.entries()) expect(dec(queue.kvGetNow(k)!), k).toBe(`v${i}`);
    await queue.close();
    const reopened = await Queue.open(store, "q", { flushIntervalMs: 0 });
    for (const [i, k] of keys.entries()) expect(dec(reopened.kvGetNow(k)!), k).toBe(`v${i}`);
    await reopened.close();
  });
});
