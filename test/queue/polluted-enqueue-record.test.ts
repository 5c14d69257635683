/**
 * @module An enqueue while `Object.prototype` holds a job record's field
 * name (a library that merged a parsed `{"__proto__": ...}` into one): the
 * record written is the caller's job and nothing inherited. A polluted
 * `payloadRef` once made the insert record the payload as held in an
 * object of that name, and the job's payload was lost for good.
 */
import { describe, expect, it } from "vitest";
import { ValidationError } from "taquba";
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

  it("refuses a batch with a hole instead of enqueuing an item the prototype holds at that index", async () => {
    const { queue } = await openQueue();
    const sparse: unknown[] = [{ queueName: "q", payload: enc("first") }];
    sparse[2] = { queueName: "q", payload: enc("third") };
    let err: unknown;
    await whilePolluted({ 1: { queueName: "q", payload: enc("planted") } }, async () => {
      err = await queue.enqueueBatch(sparse as never).catch((e: unknown) => e);
    });
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toMatch(/^enqueueBatch item 1 is missing \(a hole in the items\)/);
    expect((await queue.view().stats("q")).pending).toBe(0);
    await queue.close();
  });
});
