/**
 * Acceptance: the "Queue" section of the public API contract.
 */
import { afterEach, beforeEach, describe, expect, expectTypeOf, it } from "vitest";
import {
  ClaimLostError,
  ExpiryIndex,
  FencedError,
  MAX_KV_VALUE_SIZE,
  MemoryStore,
  MockClock,
  PermanentError,
  PreconditionFailedError,
  Queue,
  QueueReader,
  SettlementEffects,
  StoreCorruptedError,
  TaqubaError,
  ValidationError,
  runWorker,
  type AckedClaimingNext,
  type ClaimedJob,
  type ClaimNext,
  type EnqueueOptions,
  type EnqueueOutcome,
  type LeaseHandle,
  type OpenOptions,
  type QueueConfig,
  type QueueView,
  type Worker,
} from "taquba";
import { dec, enc, until } from "./support.js";

let store: MemoryStore;
let clock: MockClock;
let queue: Queue;

beforeEach(async () => {
  store = new MemoryStore();
  clock = new MockClock(1_700_000_000_000);
  queue = await Queue.open(store, "demo", { clock, flushIntervalMs: 0 });
});
afterEach(async () => {
  if (!queue.closed) await queue.close();
});

describe("Queue.open and options", () => {
  it("takes (store, name, opts?) with the documented OpenOptions and QueueConfig fields", async () => {
    const config: QueueConfig = {
      leaseMs: 10_000,
      maxAttempts: 2,
      backoff: { baseMs: 100, maxMs: 1_000, factor: 3 },
      doneRetentionMs: 60_000,
      deadRetention: null,
    };
    const opts: OpenOptions = { clock, queueConfigs: { work: config }, flushIntervalMs: 5, payloadOffloadBytes: 1024 };
    const q = await Queue.open(new MemoryStore(), "configured", opts);
    const { jobId } = await q.enqueue("work", enc("x"));
    const job = (await q.claim("work", 1_000))!;
    expect(job.maxAttempts).toBe(2);
    await q.ack(job);
    // doneRetentionMs keeps the done record.
    expect(await q.view().job(jobId)).toMatchObject({ state: "done" });
    // payloadOffloadBytes: a larger payload lives in its own object and comes back whole.
    const big = new Uint8Array(4096).map((_, i) => i % 251);
    const offloaded = await q.enqueue("work", big);
    expect(await q.view().job(offloaded.jobId)).toMatchObject({ payloadOffloaded: true, payloadSize: 4096 });
    const bigJob = (await q.claim("work", 1_000))!;
    expect(bigJob.payload).toEqual(big);
    await q.ack(bigJob);
    await q.close();
  });

  it("close(): Promise<void>", async () => {
    expectTypeOf(queue.close).returns.toEqualTypeOf<Promise<void>>();
    await queue.close();
    expect(queue.closed).toBe(true);
  });
});

describe("enqueue, claim, ack", () => {
  it("enqueue(queueName, payload, opts) → { jobId, newlyEnqueued }", async () => {
    expectTypeOf(queue.enqueue).parameters.toEqualTypeOf<[queueName: string, payload: Uint8Array, opts?: EnqueueOptions]>();
    expectTypeOf(queue.enqueue).returns.toEqualTypeOf<Promise<EnqueueOutcome>>();
    expectTypeOf<EnqueueOutcome>().toEqualTypeOf<{ jobId: string; newlyEnqueued: boolean; superseded?: string }>();

    const opts: EnqueueOptions = { priority: 5, dedupKey: "once", maxAttempts: 4, headers: { tenant: "acme" } };
    const first = await queue.enqueue("emails", enc("hello"), opts);
    expect(first).toEqual({ jobId: expect.any(String), newlyEnqueued: true });
    const dup = await queue.enqueue("emails", enc("again"), opts);
    expect(dup).toEqual({ jobId: first.jobId, newlyEnqueued: false });
  });

  it("a round trip: claim gives a ClaimedJob with the documented fields; ack applies effects atomically", async () => {
    const { jobId } = await queue.enqueue("emails", enc("hello"), { headers: { tenant: "acme" }, maxAttempts: 4 });
    const job = await queue.claim("emails", 30_000);
    expect(job).not.toBeNull();
    expect(job!.id).toBe(jobId);
    expect(job!.queueName).toBe("emails");
    expect(dec(job!.payload)).toBe("hello");
    expect(job!.headers).toEqual({ tenant: "acme" });
    expect(job!.attempt).toBe(1);
    expect(job!.maxAttempts).toBe(4);
    expect(job!.attached).toBeUndefined();
    expect(job!.lease.expiresAt).toBe(clock.now() + 30_000);
    expectTypeOf(job!.lease).toMatchTypeOf<LeaseHandle>();
    expectTypeOf<ClaimedJob>().toHaveProperty("attached").toEqualTypeOf<Uint8Array | undefined>();

    const effects = new SettlementEffects().kvPut("sent/1", enc("yes")).kvDelete("draft/1").enqueue("audit", enc("sent"), { priority: 1 });
    await queue.kvPut("draft/1", enc("draft"));
    await queue.ack(job!, effects);
    expect(dec(await queue.kvGet("sent/1"))).toBe("yes");
    expect(await queue.kvGet("draft/1")).toBeNull();
    expect(await queue.view().stats("emails")).toMatchObject({ pending: 0, claimed: 0, done: 1 });
    expect(dec((await queue.claim("audit", 1_000))!.payload)).toBe("sent");
    expect(await queue.claim("emails", 1_000)).toBeNull();
  });

  it("enqueueBatch(items) is atomic: one bad item writes nothing", async () => {
    const outcomes = await queue.enqueueBatch([
      { queueName: "a", payload: enc("1") },
      { queueName: "b", payload: enc("2"), opts: { priority: 1 } },
    ]);
    expect(outcomes).toHaveLength(2);
    expect(outcomes.every((o) => o.newlyEnqueued)).toBe(true);
    await expect(
      queue.enqueueBatch([
        { queueName: "a", payload: enc("3") },
        { queueName: "not a valid name!", payload: enc("4") },
      ]),
    ).rejects.toBeInstanceOf(ValidationError);
    expect(await queue.view().stats("a")).toMatchObject({ pending: 1 });
  });

  it("enqueueWithEffects(queueName, payload, opts, effects) commits the job and the effects together", async () => {
    await queue.enqueueWithEffects("orders", enc("o-1"), { dedupKey: "o-1" }, new SettlementEffects().kvPut("order/o-1", enc("placed")));
    expect(dec(await queue.kvGet("order/o-1"))).toBe("placed");
    expect(await queue.view().stats("orders")).toMatchObject({ pending: 1 });
  });

  it("ackClaimingNext(job, effects, claimNext: ClaimNext) → AckedClaimingNext: the ack hands its enqueue back claimed when reserve answers true", async () => {
    expectTypeOf(queue.ackClaimingNext).parameters.toEqualTypeOf<[job: ClaimedJob, effects: SettlementEffects, claimNext: ClaimNext]>();
    expectTypeOf(queue.ackClaimingNext).returns.toEqualTypeOf<Promise<AckedClaimingNext>>();
    expectTypeOf<ClaimNext["reserve"]>().toEqualTypeOf<(waiting: number) => boolean>();
    await queue.enqueue("steps", enc("first"));
    const job = (await queue.claim("steps"))!;
    const claimNext: ClaimNext = { index: 0, reserve: () => true };
    const { enqueued, next } = await queue.ackClaimingNext(job, new SettlementEffects().enqueue("steps", enc("second")), claimNext);
    expect(next?.id).toBe(enqueued[0]!.jobId);
    expect(dec(next!.payload)).toBe("second");
    await queue.ack(next!);
    expect(await queue.view().stats("steps")).toMatchObject({ pending: 0, claimed: 0 });
  });

  it("claimBatch(queueName, max, leaseMs) claims up to max jobs in priority order", async () => {
    await queue.enqueue("q", enc("low"), { priority: 10 });
    await queue.enqueue("q", enc("high"), { priority: 1 });
    await queue.enqueue("q", enc("mid"), { priority: 5 });
    const jobs = await queue.claimBatch("q", 2, 5_000);
    expect(jobs.map((j) => dec(j.payload))).toEqual(["high", "mid"]);
  });

  it("runAt schedules a job; wakeScheduled(queueName, jobId, attached) makes it pending now with attached bytes", async () => {
    const { jobId } = await queue.enqueue("timers", enc("t"), { runAt: clock.now() + 3_600_000 });
    expect(await queue.view().stats("timers")).toMatchObject({ scheduled: 1 });
    expect(await queue.claim("timers", 1_000)).toBeNull();
    expect(await queue.wakeScheduled("timers", jobId, enc("woken"))).toBe(true);
    expect(await queue.wakeScheduled("timers", jobId)).toBe(false);
    const job = (await queue.claim("timers", 1_000))!;
    expect(job.id).toBe(jobId);
    expect(dec(job.attached)).toBe("woken");
  });
});

describe("nack, deadLetter, cancel", () => {
  it("nack(job, error, effects?) retries with backoff; the last attempt dead-letters", async () => {
    const q = await Queue.open(new MemoryStore(), "retry", {
      clock,
      flushIntervalMs: 0,
      queueConfigs: { r: { maxAttempts: 2, backoff: { baseMs: 1_000, maxMs: 1_000 } } },
    });
    const { jobId } = await q.enqueue("r", enc("x"));
    const first = (await q.claim("r", 10_000))!;
    await q.nack(first, "flaky", new SettlementEffects().kvPut("nacked", enc("1")));
    expect(await q.view().job(jobId)).toMatchObject({ state: "scheduled", lastError: "flaky" });
    expect(await q.claim("r", 10_000)).toBeNull();
    clock.advance(1_000);
    let second: ClaimedJob | null = null;
    await until(async () => (second = await q.claim("r", 10_000)) !== null, "the retry");
    expect(second!.attempt).toBe(2);
    await q.nack(second!, "still flaky");
    expect(await q.view().job(jobId)).toMatchObject({ state: "dead", lastError: "still flaky" });
    await q.close();
  });

  it("deadLetter(job, error, effects?) and view().deadJobs(queueName, { after?, limit? })", async () => {
    const ids: string[] = [];
    for (const p of ["a", "b", "c"]) ids.push((await queue.enqueue("dl", enc(p))).jobId);
    for (const job of await queue.claimBatch("dl", 3, 1_000))
      await queue.deadLetter(job, `bad ${dec(job.payload)}`, new SettlementEffects().kvPut(`dead/${job.id}`, enc("1")));
    const dead = await queue.view().deadJobs("dl", {});
    expect(dead.map((j) => j.id)).toEqual([...ids].sort());
    expect(dead.every((j) => j.state === "dead")).toBe(true);
    expect(await queue.view().deadJobs("dl", { limit: 1 })).toHaveLength(1);
    expect((await queue.view().deadJobs("dl", { after: dead[0]!.id })).map((j) => j.id)).toEqual(dead.slice(1).map((j) => j.id));
    for (const id of ids) expect(await queue.kvGet(`dead/${id}`)).not.toBeNull();
  });

  it("cancel(jobId): Promise<boolean> removes a pending or scheduled job", async () => {
    expectTypeOf(queue.cancel).toEqualTypeOf<(jobId: string) => Promise<boolean>>();
    const pending = await queue.enqueue("c", enc("p"));
    const scheduled = await queue.enqueue("c", enc("s"), { runAt: clock.now() + 60_000 });
    expect(await queue.cancel(pending.jobId)).toBe(true);
    expect(await queue.cancel(scheduled.jobId)).toBe(true);
    expect(await queue.cancel(pending.jobId)).toBe(false);
    expect(await queue.cancel("unknown-job")).toBe(false);
    expect(await queue.view().stats("c")).toMatchObject({ pending: 0, scheduled: 0 });
    const claimedJob = await queue.enqueue("c", enc("claimed"));
    await queue.claim("c", 1_000);
    expect(await queue.cancel(claimedJob.jobId)).toBe(false);
  });
});

describe("leases and claim loss", () => {
  it("lease.ensureAtLeast(ms) extends expiresAt; an expired claim's settlement fails with ClaimLostError", async () => {
    await queue.enqueue("l", enc("x"));
    const job = (await queue.claim("l", 1_000))!;
    const before = job.lease.expiresAt;
    await job.lease.ensureAtLeast(60_000);
    expect(job.lease.expiresAt).toBeGreaterThanOrEqual(before + 59_000);

    await queue.enqueue("l2", enc("y"));
    const short = (await queue.claim("l2", 1_000))!;
    clock.advance(1_000);
    let again: ClaimedJob | null = null;
    await until(async () => (again = await queue.claim("l2", 1_000)) !== null, "the reaped job");
    expect(again!.attempt).toBe(2);
    await expect(queue.ack(short)).rejects.toBeInstanceOf(ClaimLostError);
    await queue.ack(again!);
    await queue.ack(job);
  });
});

describe("caller KV", () => {
  it("kvGet/kvPut/kvDelete/kvScan, limited to MAX_KV_VALUE_SIZE bytes", async () => {
    expect(MAX_KV_VALUE_SIZE).toBeGreaterThan(0);
    await queue.kvPut("cfg/b", enc("2"));
    await queue.kvPut("cfg/a", enc("1"));
    await queue.kvPut("other", enc("x"));
    expect(dec(await queue.kvGet("cfg/a"))).toBe("1");
    const page = await queue.kvScan("cfg/");
    expect(page.entries.map((e) => [e.key, dec(e.value)])).toEqual([
      ["cfg/a", "1"],
      ["cfg/b", "2"],
    ]);
    await queue.kvDelete("cfg/a");
    await queue.kvDelete("cfg/a");
    expect(await queue.kvGet("cfg/a")).toBeNull();
    await queue.kvPut("big", new Uint8Array(MAX_KV_VALUE_SIZE));
    const tooBig = await queue.kvPut("big", new Uint8Array(MAX_KV_VALUE_SIZE + 1)).catch((e: unknown) => e);
    expect(tooBig).toBeInstanceOf(TaqubaError);
    expect((await queue.kvGet("big"))!.byteLength).toBe(MAX_KV_VALUE_SIZE);
  });

  it("view() offers stats, job, deadJobs, kvGet and kvScan", async () => {
    const view: QueueView = queue.view();
    const { jobId } = await queue.enqueue("v", enc("x"), { headers: { h: "1" } });
    await queue.kvPut("k/1", enc("v"));
    expect(await view.stats("v")).toEqual({ pending: 1, scheduled: 0, claimed: 0, done: 0, dead: 0 });
    expect(await view.job(jobId)).toMatchObject({ id: jobId, queueName: "v", state: "pending", headers: { h: "1" } });
    expect(await view.job("nope")).toBeNull();
    expect(await view.deadJobs("v")).toEqual([]);
    expect(dec(await view.kvGet("k/1"))).toBe("v");
    expect((await view.kvScan("k/")).entries.map((e) => e.key)).toEqual(["k/1"]);
  });
});

describe("QueueReader", () => {
  it("QueueReader.open(store, name) reads the durable state read-only; refresh() picks up new commits", async () => {
    await queue.enqueue("r", enc("1"));
    await queue.kvPut("seen", enc("1"));
    await queue.flush();
    const reader = await QueueReader.open(store, "demo");
    expect(await reader.stats("r")).toMatchObject({ pending: 1 });
    expect(dec(await reader.kvGet("seen"))).toBe("1");
    await queue.enqueue("r", enc("2"));
    await queue.flush();
    expect(await reader.stats("r")).toMatchObject({ pending: 1 });
    expect(await reader.refresh()).toBe(true);
    expect(await reader.stats("r")).toMatchObject({ pending: 2 });
    // The reader never fences the writer.
    await queue.enqueue("r", enc("3"));
  });
});

describe("SettlementEffects and ExpiryIndex", () => {
  it("new SettlementEffects().kvPut(key, value).kvDelete(key).enqueue(queueName, payload, opts?) chains", () => {
    const fx = new SettlementEffects().kvPut("a", enc("1")).kvDelete("b").enqueue("q", enc("p")).enqueue("q", enc("p2"), { priority: 1 });
    expect(fx).toBeInstanceOf(SettlementEffects);
  });

  it("new ExpiryIndex(prefix): entries ordered by expiry; scanExpired(now) returns the due ones, earliest first", async () => {
    const idx = new ExpiryIndex("exp/", queue);
    const now = clock.now();
    const fx = new SettlementEffects();
    idx.add(fx, now + 3_000, "c");
    idx.add(fx, now + 1_000, "a");
    idx.add(fx, now + 2_000, "b");
    await queue.enqueueWithEffects("holder", enc("x"), {}, fx);
    expect(await idx.scanExpired(now)).toEqual([]);
    expect((await idx.scanExpired(now + 2_000)).map((e) => e.suffix)).toEqual(["a", "b"]);
    // The prefix-only constructor, scanning a source given per call.
    const unbound = new ExpiryIndex("exp/");
    expect((await unbound.scanExpired(queue, now + 5_000)).map((e) => e.suffix)).toEqual(["a", "b", "c"]);
  });
});

describe("runWorker", () => {
  it("runWorker(queue, queueName, worker, { concurrency, leaseMs, signal }): resolve acks with effects, PermanentError dead-letters, other errors nack", async () => {
    const q = await Queue.open(new MemoryStore(), "worker", {
      clock,
      flushIntervalMs: 0,
      queueConfigs: { w: { maxAttempts: 2, backoff: { baseMs: 0, maxMs: 0 } } },
    });
    const ok = await q.enqueue("w", enc("ok"));
    const perm = await q.enqueue("w", enc("perm"));
    const flaky = await q.enqueue("w", enc("flaky"));
    const seen: string[] = [];
    const worker: Worker = {
      async process(job) {
        seen.push(`${dec(job.payload)}#${job.attempt}`);
        switch (dec(job.payload)) {
          case "ok":
            return new SettlementEffects().kvPut(`done/${job.id}`, enc("1"));
          case "perm":
            throw new PermanentError("never works");
          default:
            if (job.attempt === 1) throw new Error("try again");
            return undefined;
        }
      },
    };
    const ac = new AbortController();
    const done = runWorker(q, "w", worker, { concurrency: 2, leaseMs: 10_000, signal: ac.signal });
    await until(async () => (await q.view().stats("w")).done === 2 && (await q.view().stats("w")).dead === 1, "all three settled");
    ac.abort();
    await done;
    expect(await q.kvGet(`done/${ok.jobId}`)).not.toBeNull();
    expect(await q.view().job(perm.jobId)).toMatchObject({ state: "dead", lastError: "never works" });
    expect(seen).toContain("flaky#2");
    expect(seen.filter((s) => s.startsWith("perm"))).toEqual(["perm#1"]);
    expect(await q.view().job(flaky.jobId)).toBeNull();
    await q.close();
  });
});

describe("errors", () => {
  it("exports ClaimLostError, FencedError, PreconditionFailedError, ValidationError, StoreCorruptedError as TaqubaErrors", () => {
    for (const E of [ClaimLostError, FencedError, PreconditionFailedError, ValidationError, StoreCorruptedError]) {
      expect(E.prototype).toBeInstanceOf(Error);
    }
    expect(new PreconditionFailedError("k")).toBeInstanceOf(TaqubaError);
    expect(new ValidationError("bad")).toBeInstanceOf(TaqubaError);
    expect(new StoreCorruptedError("k", "checksum")).toBeInstanceOf(TaqubaError);
    expect(new FencedError("x")).toBeInstanceOf(TaqubaError);
    expect(new ClaimLostError("j")).toBeInstanceOf(TaqubaError);
  });

  it("a second writer on the same store fences the first: FencedError", async () => {
    await queue.enqueue("f", enc("1"));
    const second = await Queue.open(store, "demo", { clock, flushIntervalMs: 0 });
    const err = await queue.enqueue("f", enc("stale")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FencedError);
    expect(await second.view().stats("f")).toMatchObject({ pending: 1 });
    await second.close();
    await queue.close().catch(() => undefined);
  });

  it("bad input gets ValidationError and changes nothing", async () => {
    await expect(queue.enqueue("", enc("x"))).rejects.toBeInstanceOf(ValidationError);
    await expect(queue.enqueue("ok", enc("x"), { priority: -1 })).rejects.toBeInstanceOf(ValidationError);
    expect(await queue.view().listQueues()).toEqual([]);
  });
});
