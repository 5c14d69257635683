/**
 * @module A settlement whose job record a checkpoint paged out, over a
 * store whose reads keep failing: each try fails with the store's error,
 * and what its enqueues held for the commit that never came is given back.
 * A dead-lettering settlement, which writes the record back and so reads
 * it (an ack deleting its job acts on the record its claim kept, unread,
 * while nothing else wrote it).
 * The caller id an enqueue names is held off the queue's draws only while
 * its commit may still be built: a failed load used to leave it held for
 * the life of the queue (one more hold at each failed try), and an
 * offloaded payload of the enqueue stayed in the store, never swept.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue, SettlementEffects, withFaults } from "taquba";
import { nextUlid } from "../support/next-ulid.js";
import { enc } from "./helpers.js";

/** A queue whose records a checkpoint pages out and no cache keeps, over a store whose reads fail at `faulty.failureRate`. */
async function openPaged() {
  const memory = new MemoryStore();
  const faulty = withFaults(memory, { failureRate: 0, seed: 7, ops: ["get"] });
  const queue = await Queue.open(faulty, "q", {
    clock: new MockClock(1_700_000_000_000),
    flushIntervalMs: 0,
    recordCacheBytes: 0,
    maxPayloadBytes: 1 << 20,
    engineOptions: { checkpointWalObjects: 2, retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } },
  });
  return { memory, faulty, queue };
}

/** Writes enough after the claim that a checkpoint pages the claimed record out. */
async function pageOut(queue: Queue): Promise<void> {
  for (let i = 0; i < 8; i++) {
    await queue.enqueue("other", enc(`filler ${i}`));
    await queue.flush();
  }
}

/** Objects in the store under the queue's offloaded payloads. */
async function payloadObjects(store: MemoryStore): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list("")) if (o.key.includes("payloads/")) out.push(o.key);
  return out;
}

describe("a settlement of a paged-out record over a store that keeps failing", () => {
  it("gives its enqueues' caller ids back to the draws after every failed try", async () => {
    const { faulty, queue } = await openPaged();
    await queue.enqueue("jobs", enc("work"));
    const job = (await queue.claim("jobs", 60_000))!;
    await pageOut(queue);
    // The id the queue would draw next: the settlement's enqueue names it.
    const named = nextUlid(queue.nextJobId());
    faulty.failureRate = 1;
    for (let attempt = 0; attempt < 20; attempt++) {
      await expect(queue.deadLetter(job, "gave up", new SettlementEffects().enqueue("next", enc("then"), { jobId: named }))).rejects.toThrow();
    }
    faulty.failureRate = 0;
    // No job holds the id and no enqueue naming it is under way: the draw takes it.
    expect(queue.nextJobId()).toBe(named);
    await queue.close();
  });

  it("deletes the payload objects its enqueues offloaded when a try fails", async () => {
    const { memory, faulty, queue } = await openPaged();
    await queue.enqueue("jobs", enc("work"));
    const job = (await queue.claim("jobs", 60_000))!;
    await pageOut(queue);
    const before = await payloadObjects(memory);
    faulty.failureRate = 1;
    const big = new Uint8Array(300 * 1024).fill(7);
    await expect(queue.deadLetter(job, "gave up", new SettlementEffects().enqueue("next", big))).rejects.toThrow();
    faulty.failureRate = 0;
    await queue.flush();
    expect(await payloadObjects(memory)).toEqual(before);
    // The settlement goes through once reads work again, its payload offloaded afresh.
    await queue.deadLetter(job, "gave up", new SettlementEffects().enqueue("next", big));
    const next = (await queue.claim("next", 60_000))!;
    expect(next.payload).toEqual(big);
    await queue.close();
  });
});
