/**
 * @module Headers enqueued while `Object.prototype` holds a read-only field
 * or an accessor of a header's name: a realm whose intrinsics are frozen
 * makes `constructor`, `toString` and `valueOf` read-only there, and the
 * checked copy's assignment of a header of that name threw a TypeError out
 * of the enqueue; an accessor's setter took a header, and the job was
 * stored without it. The copy now holds each header as its own, and the
 * job keeps them through a claim, a nack and a claim again.
 */
import { describe, expect, it } from "vitest";
import { enc, openQueue } from "./helpers.js";
import { whileReadOnly } from "../support/polluted-prototype.js";

describe("headers under a hostile Object.prototype", () => {
  it("are enqueued, claimed, nacked and claimed again whole when the prototype's own names are read-only", async () => {
    const { queue } = await openQueue({ defaultQueueConfig: { backoff: { baseMs: 0, maxMs: 0 } } });
    const headers = { constructor: "c", toString: "t", valueOf: "v", tenant: "a" };
    await whileReadOnly(["constructor", "toString", "valueOf"], async () => {
      await queue.enqueue("q", enc("p"), { headers });
      const job = (await queue.claim("q"))!;
      expect({ ...job.headers }).toEqual(headers);
      await queue.nack(job, "again");
      const again = (await queue.claim("q"))!;
      expect(again.attempt).toBe(2);
      expect({ ...again.headers }).toEqual(headers);
      await queue.ack(again);
    });
    expect((await queue.view().stats("q")).done).toBe(1);
    await queue.close();
  });

  it("keeps a header whose name an accessor of the prototype held at the enqueue", async () => {
    const { queue } = await openQueue();
    const given: unknown[] = [];
    Object.defineProperty(Object.prototype, "tenant", { get: () => undefined, set: (v: unknown) => given.push(v), configurable: true });
    try {
      await queue.enqueue("q", enc("p"), { headers: { tenant: "a", region: "eu" } });
    } finally {
      delete (Object.prototype as Record<string, unknown>).tenant;
    }
    expect(given).toEqual([]);
    const job = (await queue.claim("q"))!;
    expect({ ...job.headers }).toEqual({ tenant: "a", region: "eu" });
    await queue.ack(job);
    await queue.close();
  });
});
