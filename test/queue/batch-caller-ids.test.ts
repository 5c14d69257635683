/**
 * @module The jobs enqueued together in one commit (a batch, a settlement's
 * or an enqueue's effects) and the ids their callers name: an id drawn for
 * an item without one passes over the ids of the items after it as well,
 * so no caller id is refused unless a job holds it; one id named by two
 * items is refused as such, with nothing enqueued.
 */
import { describe, expect, it } from "vitest";
import { DuplicateJobIdError, MemoryStore, type PutOptions, SettlementEffects } from "taquba";
import { ForwardingStore } from "../support/forwarding-store.js";
import { nextUlid } from "../support/next-ulid.js";
import { dec, drainPayloads, enc, openQueue } from "./helpers.js";

/** What `act` rejects with; fails the test when it resolves. */
async function rejection(act: () => Promise<unknown>): Promise<unknown> {
  return act().then(
    () => expect.fail("expected a refusal"),
    (e: unknown) => e,
  );
}

describe("caller ids of the jobs of one commit", () => {
  it("a batch's generated item that would draw a later item's caller id passes over it, and both jobs are kept", async () => {
    const { queue } = await openQueue();
    // The clock stands still: the batch's first draw is the id after `first`, which the caller's item names.
    const first = (await queue.enqueue("q", enc("first"))).jobId;
    const taken = nextUlid(first);
    const out = await queue.enqueueBatch([
      { queueName: "q", payload: enc("generated") },
      { queueName: "q", payload: enc("caller's"), opts: { jobId: taken } },
    ]);
    expect(out[0]!.newlyEnqueued).toBe(true);
    expect(out[0]!.jobId).not.toBe(taken);
    expect(out[1]).toEqual({ jobId: taken, newlyEnqueued: true });
    expect(await drainPayloads(queue, "q")).toEqual(["first", "generated", "caller's"]);
    await queue.close();
  });

  it("a settlement's generated enqueue passes over the caller id of an enqueue after it", async () => {
    const { queue } = await openQueue();
    await queue.enqueue("work", enc("job"));
    const job = (await queue.claim("work"))!;
    const taken = nextUlid(queue.nextJobId());
    const effects = new SettlementEffects().enqueue("q", enc("generated")).enqueue("q", enc("caller's"), { jobId: taken });
    const out = await queue.ack(job, effects);
    expect(out[0]!.jobId).not.toBe(taken);
    expect(out[1]).toEqual({ jobId: taken, newlyEnqueued: true });
    expect(await drainPayloads(queue, "q")).toEqual(["generated", "caller's"]);
    await queue.close();
  });

  it("an enqueue without an id passes over the caller id its effects name", async () => {
    const { queue } = await openQueue();
    const taken = nextUlid(queue.nextJobId());
    const effects = new SettlementEffects().enqueue("q", enc("caller's"), { jobId: taken });
    const { outcome, enqueued } = await queue.enqueueWithEffects("q", enc("generated"), {}, effects);
    expect(outcome.jobId).not.toBe(taken);
    expect(enqueued).toEqual([{ jobId: taken, newlyEnqueued: true }]);
    expect(await drainPayloads(queue, "q")).toEqual(["generated", "caller's"]);
    await queue.close();
  });

  it("a batch naming one id twice is refused as naming it twice, and enqueues nothing", async () => {
    const { queue } = await openQueue();
    const err = await rejection(() =>
      queue.enqueueBatch([
        { queueName: "q", payload: enc("a"), opts: { jobId: "order-7" } },
        { queueName: "q", payload: enc("b") },
        { queueName: "q", payload: enc("c"), opts: { jobId: "order-7" } },
      ]),
    );
    expect(err).toBeInstanceOf(DuplicateJobIdError);
    expect((err as DuplicateJobIdError).jobId).toBe("order-7");
    expect((err as Error).message).toContain("named twice");
    expect((err as Error).message).toContain("items 0 and 2");
    expect((err as Error).message).not.toContain("existing job");
    expect((await queue.view().stats("q")).pending).toBe(0);
    await queue.close();
  });

  it("a batch naming one id twice with large payloads is refused before any payload object is written", async () => {
    const puts: string[] = [];
    const store = new (class extends ForwardingStore {
      override put(key: string, body: Uint8Array, opts?: PutOptions) {
        if (key.includes("payloads/")) puts.push(key);
        return super.put(key, body, opts);
      }
    })(new MemoryStore());
    const { queue } = await openQueue({ store, payloadOffloadBytes: 16 });
    const big = enc("x".repeat(64));
    const err = await rejection(() =>
      queue.enqueueBatch([
        { queueName: "q", payload: big, opts: { jobId: "dup" } },
        { queueName: "q", payload: big, opts: { jobId: "dup" } },
      ]),
    );
    expect(err).toBeInstanceOf(DuplicateJobIdError);
    expect(puts).toEqual([]);
    await queue.close();
  });

  it("a caller id a job holds is still refused as in use, and the batch enqueues nothing", async () => {
    const { queue } = await openQueue();
    await queue.enqueue("q", enc("held"), { jobId: "order-1" });
    const err = await rejection(() =>
      queue.enqueueBatch([
        { queueName: "q", payload: enc("generated") },
        { queueName: "q", payload: enc("again"), opts: { jobId: "order-1" } },
      ]),
    );
    expect(err).toBeInstanceOf(DuplicateJobIdError);
    expect((err as Error).message).toContain("already used by an existing job");
    const job = (await queue.claim("q"))!;
    expect(dec(job.payload)).toBe("held");
    expect(await queue.claim("q")).toBeNull();
    await queue.close();
  });
});
