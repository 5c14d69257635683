/**
 * @module A claimed job's `isLastAttempt` answers for that job's claim
 * alone: jobs claimed together on different attempts answer apart, an
 * earlier claim's answer stays what it was after the job is claimed again,
 * it works called off the job, and no job can change what another answers.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue } from "taquba";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

describe("a claimed job's isLastAttempt", () => {
  it("answers for its own claim, called on the job or off it, across claims and jobs", async () => {
    const q = await Queue.open(new MemoryStore(), "q", { defaultQueueConfig: { backoff: { baseMs: 0, maxMs: 0 } } });
    try {
      await q.enqueue("jobs", enc("once"), { maxAttempts: 1 });
      await q.enqueue("jobs", enc("twice"), { maxAttempts: 2 });
      await q.enqueue("jobs", enc("thrice"), { maxAttempts: 3 });
      const batch = await q.claimBatch("jobs", 3);
      const byName = new Map(batch.map((j) => [dec(j.payload), j]));
      const once = byName.get("once")!;
      const twice = byName.get("twice")!;
      const thrice = byName.get("thrice")!;
      // Off the job, as a destructuring handler calls it.
      const { isLastAttempt: onceLast } = once;
      const { isLastAttempt: twiceFirst } = twice;
      expect([once.isLastAttempt(), onceLast()]).toEqual([true, true]);
      expect([twice.isLastAttempt(), twiceFirst()]).toEqual([false, false]);
      expect(thrice.isLastAttempt()).toBe(false);

      // No job can change what another job's answer is: the function is frozen.
      expect(Object.isFrozen(once.isLastAttempt)).toBe(true);
      expect(() => {
        (twice.isLastAttempt as unknown as { call: unknown }).call = () => true;
      }).toThrow(TypeError);
      expect(thrice.isLastAttempt()).toBe(false);

      await q.ack(once);
      await q.nack(twice, "again");
      await q.nack(thrice, "again");
      const again = await q.claimBatch("jobs", 3);
      const twiceAgain = again.find((j) => dec(j.payload) === "twice")!;
      const thriceAgain = again.find((j) => dec(j.payload) === "thrice")!;
      expect([twiceAgain.attempt, twiceAgain.isLastAttempt()]).toEqual([2, true]);
      expect([thriceAgain.attempt, thriceAgain.isLastAttempt()]).toEqual([2, false]);
      // The first claim's answer is still that claim's.
      expect([twice.isLastAttempt(), twiceFirst()]).toEqual([false, false]);
      await q.ack(twiceAgain);
      await q.nack(thriceAgain, "again");
      const last = (await q.claim("jobs"))!;
      expect([dec(last.payload), last.attempt, last.isLastAttempt()]).toEqual(["thrice", 3, true]);
      await q.ack(last);
    } finally {
      await q.close();
    }
  });
});
