/**
 * @module A quick end-to-end pass through the queue API.
 */
import { describe, expect, it } from "vitest";
import { dec, enc, openQueue, settle } from "./helpers.js";

describe("queue smoke", () => {
  it("enqueue, claim, ack", async () => {
    const { queue } = await openQueue();
    const a = await queue.enqueue("jobs", enc("a"));
    expect(a.newlyEnqueued).toBe(true);
    expect(await queue.view().stats("jobs")).toMatchObject({ pending: 1 });
    const job = await queue.claim("jobs");
    expect(job && dec(job.payload)).toBe("a");
    expect(await queue.view().stats("jobs")).toMatchObject({ pending: 0, claimed: 1 });
    await queue.ack(job!);
    expect(await queue.view().stats("jobs")).toMatchObject({ pending: 0, claimed: 0, done: 1 });
    expect(await queue.view().job(a.jobId)).toBeNull();
    await settle();
    await queue.close();
  });
});
