/**
 * @module A job named with an id the queue's own `nextJobId` drew (a
 * workflow's next step, staged with `jobIdDrawn`): inserted without a
 * look-up of the id while no caller's job can hold it, and refused with
 * `DuplicateJobIdError`, changing nothing, when a caller's job took it
 * between the draw and the commit. An id the queue did not draw (above
 * every draw, or after a restart) is looked up as a caller's id is, and a
 * caller's options cannot carry the flag.
 *
 * The queue's clock stands still, so ids drawn count up by one from the id
 * `nextJobId` handed out (see next-ulid.ts): a test names the id the next
 * draw would take.
 */
import { describe, expect, it } from "vitest";
import { DuplicateJobIdError, MemoryStore, type Queue, SettlementEffects, ValidationError } from "taquba";
import { stageRebuiltEnqueue } from "../../runtime/queue/effects.js";
import { GatedStore } from "../support/gated-store.js";
import { whilePolluted } from "../support/polluted-prototype.js";
import { ulidAfter } from "../support/next-ulid.js";
import { until } from "../support/until.js";
import { dec, enc, openQueue } from "./helpers.js";

/** A claimed job of queue "work" to settle. */
async function claimedWork(queue: Queue) {
  await queue.enqueue("work", enc("step"));
  return (await queue.claim("work"))!;
}

/** A settlement's effects enqueuing job `jobId` to queue "q", drawn by the queue (`drawn`) or not, as a workflow's next step does. */
function nextJobEffects(jobId: string, drawn = true, payload = enc("next")): SettlementEffects {
  const effects = new SettlementEffects();
  const opts = { jobId, dedupKey: `next-${jobId}`, priority: 1000, maxAttempts: 3, headers: { step: "1" } };
  stageRebuiltEnqueue(effects, "q", payload, drawn ? { ...opts, jobIdDrawn: true } : opts);
  return effects;
}

/** The job `id` of queue "q" as the caller enqueued it: pending, its payload "the caller's". */
async function expectCallersJob(queue: Queue, id: string): Promise<void> {
  expect(await queue.view().job(id)).toMatchObject({ id, queueName: "q", state: "pending", headers: {}, attempt: 0 });
  const claimed = await queue.claim("q");
  expect(claimed === null ? undefined : [claimed.id, dec(claimed.payload)]).toEqual([id, "the caller's"]);
}

describe("a job named with an id the queue drew", () => {
  it("is inserted under that id, and ids drawn after it pass over it", async () => {
    const { queue } = await openQueue();
    const job = await claimedWork(queue);
    const drawn = queue.nextJobId();
    expect(await queue.ack(job, nextJobEffects(drawn))).toEqual([{ jobId: drawn, newlyEnqueued: true }]);
    expect(await queue.view().job(drawn)).toMatchObject({ id: drawn, state: "pending", headers: { step: "1" } });
    const later = await queue.enqueue("q", enc("later"));
    expect(later.jobId > drawn).toBe(true);
    await queue.close();
  });

  it("taken by a caller's job after the draw is refused with DuplicateJobIdError: nothing is committed and the job stays claimed", async () => {
    const { queue } = await openQueue();
    const job = await claimedWork(queue);
    const drawn = queue.nextJobId();
    await queue.enqueue("q", enc("the caller's"), { jobId: drawn });
    const refused = await queue.ack(job, nextJobEffects(drawn)).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DuplicateJobIdError);
    expect((refused as DuplicateJobIdError).jobId).toBe(drawn);
    expect(await queue.view().job(job.id)).toMatchObject({ state: "claimed" });
    await expectCallersJob(queue, drawn);
    // Settled again with another draw, as the runtime does.
    const again = queue.nextJobId();
    expect(await queue.ack(job, nextJobEffects(again))).toEqual([{ jobId: again, newlyEnqueued: true }]);
    await queue.close();
  });

  it("is looked up when a caller's job took it after later draws, and a later draw the caller's id cannot reach is inserted", async () => {
    const { queue } = await openQueue();
    const first = await claimedWork(queue);
    const second = await claimedWork(queue);
    const early = queue.nextJobId();
    const late = queue.nextJobId();
    // Taken after both draws: only the earlier one is the caller's.
    await queue.enqueue("q", enc("the caller's"), { jobId: early });
    expect(await queue.ack(second, nextJobEffects(late))).toEqual([{ jobId: late, newlyEnqueued: true }]);
    const refused = await queue.ack(first, nextJobEffects(early)).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DuplicateJobIdError);
    expect(await queue.view().job(first.id)).toMatchObject({ state: "claimed" });
    await expectCallersJob(queue, early);
    await queue.close();
  });

  it("named by a caller's enqueue still writing its payload: exactly one of the two gets the id, the other is refused", async () => {
    const store = new GatedStore(new MemoryStore(), (key) => key.includes("/payloads/"));
    const { queue } = await openQueue({ store, payloadOffloadBytes: 16 });
    const job = await claimedWork(queue);
    const drawn = queue.nextJobId();
    const caller = queue.enqueue("q", enc("the caller's".padEnd(64, ".")), { jobId: drawn }).catch((e: unknown) => e);
    await store.waitHeld(1);
    expect(await queue.ack(job, nextJobEffects(drawn))).toEqual([{ jobId: drawn, newlyEnqueued: true }]);
    store.release(store.held[0]!.key);
    const settled = await caller;
    expect(settled).toBeInstanceOf(DuplicateJobIdError);
    expect(await queue.view().job(drawn)).toMatchObject({ headers: { step: "1" } });
    await queue.close();
  });

  it("taken by a caller's job while its own large payload is written is refused at the commit, and its payload object deleted", async () => {
    const store = new GatedStore(new MemoryStore(), (key) => key.includes("/payloads/"));
    const { queue } = await openQueue({ store, payloadOffloadBytes: 16 });
    const job = await claimedWork(queue);
    const drawn = queue.nextJobId();
    const settling = queue.ack(job, nextJobEffects(drawn, true, enc("next".padEnd(64, ".")))).catch((e: unknown) => e);
    await store.waitHeld(1);
    const payloadKey = store.held[0]!.key;
    await queue.enqueue("q", enc("the caller's"), { jobId: drawn });
    store.release(payloadKey);
    const refused = await settling;
    expect(refused).toBeInstanceOf(DuplicateJobIdError);
    expect((refused as DuplicateJobIdError).jobId).toBe(drawn);
    expect(await queue.view().job(job.id)).toMatchObject({ state: "claimed" });
    await expectCallersJob(queue, drawn);
    await until("the refused settlement's payload object deleted", async () => (await store.inner.get(payloadKey)) === null);
    await queue.close();
  });

  it("an id above every draw of the queue is looked up: a caller's job holding it is kept and the settlement refused", async () => {
    const { queue } = await openQueue();
    const job = await claimedWork(queue);
    const ahead = ulidAfter(queue.nextJobId(), 5);
    await queue.enqueue("q", enc("the caller's"), { jobId: ahead });
    const refused = await queue.ack(job, nextJobEffects(ahead)).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DuplicateJobIdError);
    await expectCallersJob(queue, ahead);
    await queue.close();
  });

  it("an id drawn before a restart is looked up after it", async () => {
    const store = new MemoryStore();
    const { queue } = await openQueue({ store });
    const drawn = queue.nextJobId();
    await queue.enqueue("q", enc("the caller's"), { jobId: drawn });
    await queue.close();
    const { queue: reopened } = await openQueue({ store });
    const job = await claimedWork(reopened);
    const refused = await reopened.ack(job, nextJobEffects(drawn)).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DuplicateJobIdError);
    await expectCallersJob(reopened, drawn);
    await reopened.close();
  });

  it("cannot be claimed by a caller: its options naming the flag are refused, and one set on Object.prototype is not read", async () => {
    const { queue } = await openQueue();
    const held = (await queue.enqueue("q", enc("the caller's"))).jobId;
    const named = await queue.enqueue("q", enc("mine"), { jobId: held, jobIdDrawn: true } as Parameters<Queue["enqueue"]>[2]).catch((e: unknown) => e);
    expect(named).toBeInstanceOf(ValidationError);
    expect((named as Error).message).toContain("jobIdDrawn");
    await whilePolluted({ jobIdDrawn: true }, async () => {
      const job = await claimedWork(queue);
      const refused = await queue.ack(job, nextJobEffects(held, false)).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(DuplicateJobIdError);
      const again = await queue.enqueue("q", enc("mine"), { jobId: held }).catch((e: unknown) => e);
      expect(again).toBeInstanceOf(DuplicateJobIdError);
    });
    await expectCallersJob(queue, held);
    await queue.close();
  });
});
