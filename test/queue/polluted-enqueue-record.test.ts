/**
 * @module An enqueue while `Object.prototype` holds a job record's field
 * name (a library that merged a parsed `{"__proto__": ...}` into one): the
 * record written is the caller's job and nothing inherited. A polluted
 * `payloadRef` once made the insert record the payload as held in an
 * object of that name, and the job's payload was lost for good.
 */
import { describe, expect, it } from "vitest";
import { drainPayloads, enc, openQueue } from "./helpers.js";
import { whilePolluted } from "../support/polluted-prototype.js";

describe("an enqueue under a polluted Object.prototype", () => {
  it("writes the caller's payload, not a payload object named on the prototype", async () => {
    const { store, clock, queue } = await openQueue();
    await whilePolluted({ payloadRef: "01HZZZZZZZZZZZZZZZZZZZZZZZ", payloadSize: 3 }, async () => {
      await queue.enqueue("q", enc("single"));
      await queue.enqueueBatch([
        { queueName: "q", payload: enc("batched-1") },
        { queueName: "q", payload: enc("batched-2"), opts: { priority: 5 } },
      ]);
    });
    expect(await drainPayloads(queue, "q")).toEqual(["batched-2", "single", "batched-1"]);
    expect((await queue.view().stats("q")).dead).toBe(0);
    // And as stored: a reopened queue reads the same jobs.
    await whilePolluted({ payloadRef: "01HZZZZZZZZZZZZZZZZZZZZZZZ" }, async () => {
      await queue.enqueue("q", enc("before-reopen"));
    });
    await queue.close();
    const { queue: reopened } = await openQueue({ store, clock });
    expect(await drainPayloads(reopened, "q")).toEqual(["before-reopen"]);
    await reopened.close();
  });
});
