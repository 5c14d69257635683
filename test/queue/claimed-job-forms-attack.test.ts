/**
 * @module A claimed job's claim lives in a private slot of the job (see
 * claimed-job.ts), so what a settlement accepts depends on which objects
 * carry that slot, or reach it by inheritance or through a Proxy. Attacked with every way a caller might hand a job back
 * other than as it was given: nothing at all (null from an empty claim, a
 * string), copies made by Object.assign or a JSON round trip, an object
 * inheriting from the job but naming another job or queue, a Proxy, a job of a second
 * queue over the same store; and a job whose cancelSignal is read before and
 * after its settlement.
 */
import { describe, expect, it } from "vitest";
import { ClaimLostError, EngineReader, MemoryStore, SettlementEffects, ValidationError, type ClaimedJob } from "taquba";
import * as K from "../../runtime/queue/keys.js";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { ENGINE_PREFIX } from "../../runtime/queue/queue.js";
import { decodeJob } from "../../runtime/queue/record.js";
import { dec, enc, openQueue } from "./helpers.js";

describe("settling what is not a claimed job", () => {
  it("null, undefined and primitives are refused with ValidationError by every settlement, and releaseClaim ignores them", async () => {
    const { queue } = await openQueue();
    await queue.enqueue("q", enc("a"));
    // What a claim answers when it finds nothing, handed straight on: a clear refusal, not a TypeError from inside.
    const empty = await queue.claim("empty");
    expect(empty).toBeNull();
    for (const bad of [empty, undefined, "job-1", 7]) {
      const job = bad as unknown as ClaimedJob;
      await expect(queue.ack(job)).rejects.toBeInstanceOf(ValidationError);
      await expect(queue.nack(job, "e")).rejects.toBeInstanceOf(ValidationError);
      await expect(queue.deadLetter(job, "e")).rejects.toBeInstanceOf(ValidationError);
      await expect(queue.ack(job)).rejects.toThrow(/settle only ClaimedJobs returned by a queue's claim/);
      expect(() => queue.releaseClaim(job)).not.toThrow();
    }
    // Nothing was settled: the job is still there to claim.
    expect(await queue.view().stats("q")).toMatchObject({ pending: 1, claimed: 0 });
    await queue.close();
  });

  it("copies by Object.assign and a JSON round trip are refused; the job they copied still settles once", async () => {
    const { queue } = await openQueue();
    await queue.enqueue("q", enc("a"));
    const job = (await queue.claim("q"))!;
    const assigned = Object.assign({}, job) as ClaimedJob;
    const parsed = JSON.parse(JSON.stringify(job)) as ClaimedJob;
    for (const copy of [assigned, parsed, Object.freeze({ ...job })]) {
      await expect(queue.ack(copy, new SettlementEffects().kvPut("x", enc("1")))).rejects.toBeInstanceOf(ValidationError);
    }
    // A structured clone cannot even be made of it (it holds functions): the platform refuses, nothing is settled.
    expect(() => structuredClone(job)).toThrow();
    expect(await queue.kvGet("x")).toBeNull();
    await queue.ack(job);
    await expect(queue.ack(job)).rejects.toBeInstanceOf(ClaimLostError);
    expect(await queue.view().stats("q")).toMatchObject({ pending: 0, claimed: 0 });
    await queue.close();
  });

  it("an object inheriting a job's claim but naming another job, settles neither job; a Proxy cannot lie about a frozen job's id", async () => {
    const { queue } = await openQueue();
    const a = await queue.enqueue("q", enc("a"));
    const b = await queue.enqueue("q", enc("b"));
    const jobA = (await queue.claim("q"))!;
    const jobB = (await queue.claim("q"))!;
    expect([jobA.id, jobB.id].sort()).toEqual([a.jobId, b.jobId].sort());
    // The hidden slot is inherited, so the claim is A's; the id is B's. A's token does not hold B's claim.
    const inherited = Object.create(jobA, { id: { value: jobB.id, enumerable: true } }) as ClaimedJob;
    await expect(queue.ack(inherited)).rejects.toBeInstanceOf(ClaimLostError);
    await expect(queue.nack(inherited, "e")).rejects.toBeInstanceOf(ClaimLostError);
    // A Proxy cannot lie about the id: the job is frozen, and the platform refuses the trap's answer.
    const lying = new Proxy(jobA, { get: (t, p, r) => (p === "id" ? jobB.id : Reflect.get(t, p, r)) });
    expect(() => lying.id).toThrow(TypeError);
    queue.releaseClaim(inherited);
    // Both are still claimed by their own holders, and each settles with its own job.
    expect(await queue.view().stats("q")).toMatchObject({ claimed: 2 });
    // A Proxy that only forwards is the job itself.
    await queue.ack(new Proxy(jobB, {}));
    await queue.nack(jobA, "once");
    expect(await queue.view().job(jobB.id)).toBeNull();
    expect(await queue.view().job(jobA.id)).toMatchObject({ state: "scheduled", lastError: "once" });
    await queue.close();
  });

  it("an object inheriting a job's claim but naming another queue settles by its claim's queue: retention and the dead-letter log follow the claim", async () => {
    const errors: { queue: unknown; msg: string }[] = [];
    const logger = { debug: () => {}, info: () => {}, warn: () => {}, error: (o: { queue?: unknown }, msg: string) => errors.push({ queue: o.queue, msg }) };
    // "steps" keeps done jobs, "other" does not; the job is of "steps".
    const { queue, store } = await openQueue({ queueConfigs: { steps: { doneRetentionMs: 60_000 } }, logger });
    await queue.enqueue("steps", enc("first"));
    const first = (await queue.claim("steps"))!;
    const reserve = { index: 0, reserve: () => true };
    // Chained: the claim kept the record it wrote, which shares the job's payload array.
    const job = (await queue.ackClaimingNext(first, new SettlementEffects().enqueue("steps", enc("abc")), reserve)).next!;
    expect(job.queueName).toBe("steps");
    // The worker writes into its own copy of the payload; the done record must keep what was enqueued.
    job.payload[0] = "X".charCodeAt(0);
    const otherQueue = Object.create(job, { queueName: { value: "other", enumerable: true } }) as ClaimedJob;
    await queue.ack(otherQueue);
    expect(await queue.view().job(job.id)).toMatchObject({ state: "done", queueName: "steps" });
    // A dead letter through such an object is logged under the claim's queue and the attempt its record counted.
    await queue.enqueue("steps", enc("d"));
    const doomed = (await queue.claim("steps"))!;
    const lying = Object.create(doomed, { queueName: { value: "other", enumerable: true }, attempt: { value: 99, enumerable: true } }) as ClaimedJob;
    await queue.deadLetter(lying, "bad");
    expect(errors).toEqual([{ queue: "steps", msg: expect.stringContaining(`job ${doomed.id} of queue "steps" was dead-lettered after attempt 1`) }]);
    await queue.close();
    // The done record as stored (the views show no payload): the bytes enqueued, not the worker's copy.
    const reader = await EngineReader.open(new PrefixedStore(new PrefixedStore(store, "q/"), ENGINE_PREFIX));
    const key = K.jobKey(job.id);
    expect(dec(decodeJob(key, reader.get(key)!).payload)).toBe("abc");
    await reader.close();
  });

  it("a job claimed through one queue is refused by a second queue opened over the same store, which changes nothing", async () => {
    const store = new MemoryStore();
    const first = await openQueue({ store });
    await first.queue.enqueue("q", enc("a"));
    const job = (await first.queue.claim("q"))!;
    await first.queue.close();
    const second = await openQueue({ store, clock: first.clock });
    await expect(second.queue.ack(job, new SettlementEffects().kvPut("x", enc("1")))).rejects.toBeInstanceOf(ClaimLostError);
    expect(await second.queue.kvGet("x")).toBeNull();
    // The second queue's recovery gave the job back; the old claim changed nothing of it.
    expect(await second.queue.view().job(job.id)).toMatchObject({ state: "pending" });
    await second.queue.close();
  });

  it("a cancelSignal read before a settlement is the one read after it, and a cancel after the settlement does not abort it", async () => {
    const { queue } = await openQueue();
    await queue.enqueue("q", enc("a"));
    await queue.enqueue("q", enc("b"));
    const early = (await queue.claim("q"))!;
    const late = (await queue.claim("q"))!;
    const before = early.cancelSignal;
    await queue.ack(early);
    expect(early.cancelSignal).toBe(before);
    expect(await queue.cancel(early.id)).toBe(false);
    expect(before.aborted).toBe(false);
    // Read only after its settlement: still the claim's signal, not aborted by a cancel of nothing.
    await queue.nack(late, "e");
    expect(late.cancelSignal.aborted).toBe(false);
    expect(late.cancelSignal).toBe(late.cancelSignal);
    await queue.close();
  });

  it("a Proxy of a job, an object inheriting from one and a Proxy of that read the job's cancelSignal, see its cancel and settle by its claim; a frozen copy holding its lease does not", async () => {
    const { queue } = await openQueue();
    await queue.enqueue("q", enc("a"));
    await queue.enqueue("q", enc("b"));
    const job = (await queue.claim("q"))!;
    const other = (await queue.claim("q"))!;
    const proxied = new Proxy(job, {});
    const inheritsProxy = Object.create(proxied) as ClaimedJob;
    const proxiedHeir = new Proxy(Object.create(job) as ClaimedJob, {});
    // The private slot shows through none of these: each finds the claim another way, and the same signal.
    expect(proxied.cancelSignal).toBe(job.cancelSignal);
    expect(inheritsProxy.cancelSignal).toBe(job.cancelSignal);
    expect(proxiedHeir.cancelSignal).toBe(job.cancelSignal);
    expect(await queue.cancelJob(job.id)).toBe("requested");
    expect(proxied.cancelSignal.aborted).toBe(true);
    // A copy holding the job's lease (and one handing over the other job's lease) is still a copy.
    const copy = Object.freeze({ ...job }) as ClaimedJob;
    await expect(queue.ack(copy)).rejects.toBeInstanceOf(ValidationError);
    const otherLease = Object.create(job, { lease: { value: other.lease, enumerable: true } }) as ClaimedJob;
    expect(otherLease.cancelSignal).toBe(job.cancelSignal);
    expect(other.cancelSignal.aborted).toBe(false);
    // Settled through the object inheriting from the Proxy: the job's own claim, once.
    await queue.deadLetter(inheritsProxy, "cancelled");
    await expect(queue.ack(job)).rejects.toBeInstanceOf(ClaimLostError);
    await queue.ack(new Proxy(other, {}));
    expect(await queue.view().stats("q")).toMatchObject({ pending: 0, claimed: 0 });
    await queue.close();
  });
});
