/**
 * @module An enqueue without a caller id looks its drawn id up only when a
 * caller's job may hold it (`CallerIdBound`): a batch of generated ids asks
 * the engine nothing about their record keys, while a caller id equal to a
 * draw, in the same batch, an earlier one or before a restart, is still
 * passed over and never overwritten.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Engine } from "taquba";
import { encodeTime } from "ulid";
import { AHEAD_MS } from "../../runtime/queue/seq-high-water.js";
import { nextUlid, ulidAfter } from "../support/next-ulid.js";
import { drainPayloads, enc, openQueue } from "./helpers.js";

const realHas = Engine.prototype.has;

/** Counts the engine's `has` calls of job record keys (`j/`), in every engine of the process, until `afterEach`. */
function countJobLookups(): { count: number } {
  const counted = { count: 0 };
  Engine.prototype.has = function (this: Engine, key: string) {
    if (key.startsWith("j/")) counted.count++;
    return realHas.call(this, key);
  };
  return counted;
}

afterEach(() => {
  Engine.prototype.has = realHas;
});

describe("lookups of drawn job ids", () => {
  it("a batch of generated ids looks none of them up; a caller's id is looked up", async () => {
    const { queue } = await openQueue();
    const lookups = countJobLookups();
    const out = await queue.enqueueBatch(Array.from({ length: 500 }, (_, i) => ({ queueName: "q", payload: enc(String(i)) })));
    expect(new Set(out.map((o) => o.jobId)).size).toBe(500);
    expect(lookups.count).toBe(0);
    await queue.enqueue("q", enc("caller's"), { jobId: "order-1" });
    expect(lookups.count).toBe(1);
    expect((await queue.view().stats("q")).pending).toBe(501);
    await queue.close();
  });

  it("a caller id equal to a later draw in the same batch is passed over, and both jobs are kept", async () => {
    const { queue } = await openQueue();
    const first = (await queue.enqueue("q", enc("first"))).jobId;
    // The batch draws one id per item for its order: the caller's item takes the id the generated item draws.
    const taken = ulidAfter(first, 2);
    const out = await queue.enqueueBatch([
      { queueName: "q", payload: enc("caller's"), opts: { jobId: taken } },
      { queueName: "q", payload: enc("generated") },
    ]);
    expect(out[0]).toEqual({ jobId: taken, newlyEnqueued: true });
    expect(out[1]!.jobId).toBe(nextUlid(taken));
    expect(await drainPayloads(queue, "q")).toEqual(["first", "caller's", "generated"]);
    await queue.close();
  });

  it("a caller id ahead of the draws is passed over when a batch reaches it after a restart, with that one lookup", async () => {
    const { store, clock, queue: before } = await openQueue();
    await before.enqueue("q", enc("first"));
    // After a restart the ids continue from the stored high-water mark (the lowest id of the millisecond AHEAD_MS
    // later): the caller takes the fifth id drawn after it.
    const mark = `${encodeTime(clock.now() + AHEAD_MS, 10)}${"0".repeat(16)}`;
    const ahead = ulidAfter(mark, 5);
    await before.enqueue("q", enc("caller's"), { jobId: ahead });
    await before.close();
    const { queue } = await openQueue({ store, clock });
    const lookups = countJobLookups();
    const out = await queue.enqueueBatch(Array.from({ length: 10 }, (_, i) => ({ queueName: "q", payload: enc(`g${i}`) })));
    expect(out.map((o) => o.jobId)).toEqual([1, 2, 3, 4, 6, 7, 8, 9, 10, 11].map((n) => ulidAfter(mark, n)));
    expect(lookups.count).toBe(1);
    expect(await drainPayloads(queue, "q")).toEqual(["first", "caller's", ...out.map((_, i) => `g${i}`)]);
    await queue.close();
  });
});
