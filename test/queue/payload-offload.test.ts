/**
 * @module Payload offload: large payloads in their own objects, kept while a record
 * refers to them and deleted after; missing objects and read failures.
 */
import { describe, expect, it } from "vitest";
import { ClaimLostError, MemoryStore, SettlementEffects, StoreUnavailableError, type DeadLetteredEvent, type ObjectStore } from "taquba";
import { failWhen } from "../support/failing-store.js";
import { eventually } from "../support/until.js";
import { enc, openQueue, settle } from "./helpers.js";

async function payloadObjects(store: ObjectStore, name = "q"): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(`${name}/payloads/`)) out.push(o.key);
  return out;
}

const big = (tag: string) => enc(tag.padEnd(100, "."));

describe("payload offload", () => {
  it("stores a large payload in its own object, delivers it, deletes it after ack", async () => {
    const store = new MemoryStore();
    const { queue } = await openQueue({ store, payloadOffloadBytes: 64 });
    const { jobId } = await queue.enqueue("q", big("a"));
    await queue.enqueue("q", enc("small"));
    expect(await payloadObjects(store)).toHaveLength(1);
    expect(await queue.view().job(jobId)).toMatchObject({ payloadOffloaded: true, payloadSize: 100 });
    const [job, small] = await queue.claimBatch("q", 2);
    expect(job!.payload).toEqual(big("a"));
    await queue.ack(job!);
    await queue.ack(small!);
    expect(await payloadObjects(store)).toEqual([]);
    await queue.close();
  });

  it("deletes the object after cancel and after a dedup hit", async () => {
    const store = new MemoryStore();
    const { queue } = await openQueue({ store, payloadOffloadBytes: 64 });
    const a = await queue.enqueue("q", big("a"), { dedupKey: "d" });
    expect((await queue.enqueue("q", big("b"), { dedupKey: "d" })).newlyEnqueued).toBe(false);
    await settle();
    expect(await payloadObjects(store)).toHaveLength(1);
    expect(await queue.cancel(a.jobId)).toBe(true);
    expect(await payloadObjects(store)).toEqual([]);
    await queue.close();
  });

  it("keeps the object through retries and removes it with the dead record's retention", async () => {
    const store = new MemoryStore();
    const { queue, clock } = await openQueue({
      store,
      payloadOffloadBytes: 64,
      defaultQueueConfig: { maxAttempts: 2, deadRetention: 1000, backoff: { baseMs: 0, maxMs: 0 } },
    });
    await queue.enqueue("q", big("a"));
    await queue.nack((await queue.claim("q"))!, "once");
    const again = (await queue.claim("q"))!;
    expect(again.payload).toEqual(big("a"));
    await queue.nack(again, "twice");
    expect(await payloadObjects(store)).toHaveLength(1);
    clock.advance(1000);
    await settle(10);
    expect(await payloadObjects(store)).toEqual([]);
    await queue.close();
  });

  it("offloads effect enqueues, and removes the done record's object with done retention", async () => {
    const store = new MemoryStore();
    const { queue, clock } = await openQueue({ store, payloadOffloadBytes: 64, queueConfigs: { next: { doneRetentionMs: 500 } } });
    await queue.enqueue("q", enc("a"));
    await queue.ack((await queue.claim("q"))!, new SettlementEffects().enqueue("next", big("n")));
    expect(await payloadObjects(store)).toHaveLength(1);
    const n = (await queue.claim("next"))!;
    expect(n.payload).toEqual(big("n"));
    await queue.ack(n);
    expect(await payloadObjects(store)).toHaveLength(1);
    clock.advance(500);
    await settle(10);
    expect(await payloadObjects(store)).toEqual([]);
    await queue.close();
  });

  it("a failed settlement deletes the objects its effect enqueues wrote", async () => {
    const store = new MemoryStore();
    const { queue } = await openQueue({ store, payloadOffloadBytes: 64 });
    await queue.enqueue("q", enc("a"));
    const job = (await queue.claim("q"))!;
    await queue.ack(job);
    const err = await queue.ack(job, new SettlementEffects().enqueue("next", big("n"))).catch((e: unknown) => e);
    // The second ack finds the claim gone: refused before anything is committed.
    expect(err).toBeInstanceOf(ClaimLostError);
    expect((err as Error).message).toContain(job.id);
    await settle();
    expect(await payloadObjects(store)).toEqual([]);
    await queue.close();
  });

  it("a missing payload object dead-letters that job; a store failure puts the batch back", async () => {
    const store = new MemoryStore();
    const events: DeadLetteredEvent[] = [];
    const { queue } = await openQueue({ store, payloadOffloadBytes: 64, onDeadLettered: (e) => events.push(e) });
    const lost = await queue.enqueue("q", big("lost"));
    const fine = await queue.enqueue("q", enc("fine"));
    const [obj] = await payloadObjects(store);
    await store.delete(obj!);
    const jobs = await queue.claimBatch("q", 2);
    expect(jobs.map((j) => j.id)).toEqual([fine.jobId]);
    expect(await queue.view().job(lost.jobId)).toMatchObject({ state: "dead", lastError: expect.stringContaining("missing") });
    await eventually(() => expect(events.map((e) => [e.jobId, e.reason])).toEqual([[lost.jobId, "payload_missing"]]));
    await queue.close();
  });

  it("a payload object with a flipped byte, or cut short, dead-letters its job instead of handing it out", async () => {
    for (const damage of [(b: Uint8Array) => b.map((x, i) => (i === 50 ? x ^ 0x01 : x)), (b: Uint8Array) => b.subarray(0, b.byteLength - 1)]) {
      const store = new MemoryStore();
      const events: DeadLetteredEvent[] = [];
      const { queue } = await openQueue({ store, payloadOffloadBytes: 64, onDeadLettered: (e) => events.push(e) });
      const bad = await queue.enqueue("q", big("bad"));
      const fine = await queue.enqueue("q", big("fine"));
      // Find the object of the first job: the one whose bytes start with its payload.
      const objects = await payloadObjects(store);
      const target = (await Promise.all(objects.map(async (k) => [k, (await store.get(k))!.body] as const))).find(
        ([, b]) => new TextDecoder().decode(b.subarray(0, 3)) === "bad",
      )!;
      await store.put(target[0], damage(target[1]));
      const jobs = await queue.claimBatch("q", 2);
      expect(jobs.map((j) => j.id)).toEqual([fine.jobId]);
      expect(jobs[0]!.payload).toEqual(big("fine"));
      expect(await queue.view().job(bad.jobId)).toMatchObject({ state: "dead", lastError: expect.stringContaining("corrupted") });
      await eventually(() => expect(events.map((e) => [e.jobId, e.reason])).toEqual([[bad.jobId, "payload_corrupted"]]));
      await queue.close();
    }
  });

  it("reads a payload object written before objects carried a checksum", async () => {
    const store = new MemoryStore();
    const { queue } = await openQueue({ store, payloadOffloadBytes: 64 });
    const { jobId } = await queue.enqueue("q", big("old"));
    const [obj] = await payloadObjects(store);
    const framed = (await store.get(obj!))!.body;
    // The old form: the payload bytes alone, exactly the size the record holds.
    await store.put(obj!, framed.subarray(0, framed.byteLength - 8));
    const job = await queue.claim("q");
    expect(job?.id).toBe(jobId);
    expect(job?.payload).toEqual(big("old"));
    await queue.close();
  });

  it("a payload read failure releases the claims without using attempts", async () => {
    let failGets = false;
    const store = failWhen(new MemoryStore(), (call) => (failGets && call === "get" ? new Error("store down") : undefined));
    const { queue } = await openQueue({ store, payloadOffloadBytes: 64 });
    const { jobId } = await queue.enqueue("q", big("a"));
    failGets = true;
    const err = await queue.claim("q").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(((err as StoreUnavailableError).cause as Error).message).toBe("store down");
    expect(await queue.view().job(jobId)).toMatchObject({ state: "pending", attempt: 0 });
    failGets = false;
    expect((await queue.claim("q"))?.attempt).toBe(1);
    await queue.close();
  });

  it("the orphan sweep deletes objects no job refers to and keeps referenced ones", async () => {
    const store = new MemoryStore();
    const { queue, clock } = await openQueue({ store, payloadOffloadBytes: 64 });
    const kept = await queue.enqueue("q", big("kept"));
    const done = await queue.enqueue("q", big("done"));
    await queue.close();
    // What a crash between writing an object and committing its job leaves behind:
    await store.put("q/payloads/01ORPHAN0000000000000000AA", big("orphan"));
    const again = await openQueue({ store, clock, payloadOffloadBytes: 64 });
    // The open sweeps in the background.
    await eventually(async () => expect(await payloadObjects(store)).toHaveLength(2));
    expect(await payloadObjects(store)).not.toContain("q/payloads/01ORPHAN0000000000000000AA");
    const jobs = await again.queue.claimBatch("q", 2);
    expect(jobs.map((j) => j.id)).toEqual([kept.jobId, done.jobId]);
    await again.queue.ack(jobs[1]!);
    expect(await payloadObjects(store)).toHaveLength(1);
    await store.put("q/payloads/01ORPHAN0000000000000000BB", big("orphan"));
    expect(await again.queue.sweepOrphanPayloads()).toBe(1);
    expect(jobs[0]!.payload).toEqual(big("kept"));
    expect(await payloadObjects(store)).toHaveLength(1);
    await again.queue.close();
  });

  it("null disables offloading", async () => {
    const store = new MemoryStore();
    const { queue } = await openQueue({ store, payloadOffloadBytes: null });
    await queue.enqueue("q", new Uint8Array(1024 * 1024));
    expect(await payloadObjects(store)).toEqual([]);
    expect((await queue.claim("q"))!.payload.byteLength).toBe(1024 * 1024);
    await queue.close();
  });
});
