/**
 * @module A settlement's effects that are no `SettlementEffects` (a number,
 * null, a string, an object lacking its lists, a revoked Proxy), as a
 * JavaScript caller may pass: each settling call is refused with a
 * `ValidationError` saying what was passed, and nothing is settled (the
 * claim still held, the job still there), instead of a TypeError from
 * inside the settlement.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue, SettlementEffects, ValidationError } from "taquba";

const BAD: [string, unknown][] = [
  ["a number", 0],
  ["null", null],
  ["a string", "effects"],
  ["an object lacking its lists", { kvOps: [] }],
  [
    "a revoked Proxy",
    (() => {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      return proxy;
    })(),
  ],
];

describe("a settlement's effects that are none", () => {
  it.each(BAD)("are refused by every settling call, nothing settled (%s)", async (_what, bad) => {
    const queue = await Queue.open(new MemoryStore(), "q", { clock: new MockClock(1_764_000_000_000), flushIntervalMs: 0 });
    try {
      const effects = bad as SettlementEffects;
      const { jobId } = await queue.enqueue("w", new Uint8Array([1]));
      const job = (await queue.claim("w"))!;
      const calls: [string, () => Promise<unknown>][] = [
        ["ack", () => queue.ack(job, effects)],
        ["nack", () => queue.nack(job, "failed", effects)],
        ["deadLetter", () => queue.deadLetter(job, "dead", effects)],
        ["cancelJob", () => queue.cancelJob(jobId, effects)],
        ["requeueDead", () => queue.requeueDead(jobId, effects)],
        ["wakeScheduled", () => queue.wakeScheduled("w", jobId, undefined, effects)],
      ];
      for (const [name, call] of calls) {
        const err = await call().catch((e: unknown) => e);
        expect(err, name).toBeInstanceOf(ValidationError);
        expect((err as Error).message, name).toMatch(/a settlement's effects must be a SettlementEffects/);
      }
      expect(await queue.view().job(jobId)).toMatchObject({ state: "claimed" });
      // The claim is still held: a real settlement goes through.
      expect(await queue.ack(job, new SettlementEffects())).toEqual([]);
      expect(await queue.view().stats("w")).toMatchObject({ pending: 0, claimed: 0 });
    } finally {
      await queue.close();
    }
  });
});
