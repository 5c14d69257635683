/**
 * @module A job whose stored attempt history is not a list (or not
 * MessagePack at all): its nack and dead letter settle as usual, the
 * history starting afresh with the attempt that ended, instead of every
 * settlement throwing and the job staying claimed for ever; the view's
 * read of the damaged history names the job, not an internal key.
 */
import { pack } from "msgpackr";
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, MockClock, Queue, StoreCorruptedError, WriteBatch } from "taquba";
import { historyKey } from "../../runtime/queue/keys.js";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { ENGINE_PREFIX } from "../../runtime/queue/queue.js";

const DAMAGE: [string, Uint8Array][] = [
  ["a string", new Uint8Array(pack("not a list"))],
  ["a map", new Uint8Array(pack({ attempt: 1 }))],
  ["bytes cut short", new Uint8Array([0x93, 0x81])],
];

describe("a job whose attempt history is damaged", () => {
  it.each(DAMAGE)("is nacked and dead-lettered as usual, its history started afresh (%s)", async (_what, damaged) => {
    const store = new MemoryStore();
    const clock = new MockClock(1_764_000_000_000);
    const opts = { clock, flushIntervalMs: 0, queueConfigs: { w: { maxAttempts: 2, backoff: { baseMs: 0, maxMs: 0, factor: 1 } } } };
    let queue = await Queue.open(store, "q", opts);
    const { jobId } = await queue.enqueue("w", new Uint8Array([1]));
    await queue.close();
    const engine = await Engine.open(new PrefixedStore(new PrefixedStore(store, "q/"), ENGINE_PREFIX));
    await engine.commit(new WriteBatch().put(historyKey(jobId), damaged));
    await engine.close();

    queue = await Queue.open(store, "q", opts);
    try {
      const err = await queue
        .view()
        .attemptHistory(jobId)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreCorruptedError);
      expect((err as Error).message).toMatch(new RegExp(`attempt history of job ${jobId}`));
      expect((err as Error).message).not.toMatch(/h\//);

      const first = (await queue.claim("w"))!;
      await queue.nack(first, "try again");
      const second = (await queue.claim("w"))!;
      expect(second.attempt).toBe(2);
      await queue.nack(second, "still failing");
      expect(await queue.view().job(jobId)).toMatchObject({ state: "dead" });
      expect(await queue.view().stats("w")).toMatchObject({ pending: 0, claimed: 0, dead: 1 });
      const history = await queue.view().attemptHistory(jobId);
      expect(history.map((a) => a.attempt)).toEqual([1, 2]);
      expect(history.at(-1)?.outcome).toBe("dead_lettered");
    } finally {
      await queue.close();
    }
  });
});
