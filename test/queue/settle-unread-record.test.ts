/**
 * @module An ack that deletes its job acts on the record its claim kept
 * without reading it only while the stored record is still the one the
 * claim wrote: nothing but the queue committed to its engine since the
 * claim, and no cancel flagged the job. Every other writer of a claimed
 * job's record (a commit straight to the engine, a cancel, the reaper and a
 * second claim, a damaged record set aside) still makes the ack read what
 * is stored, or refuses it as before.
 *
 * That an ack did not read is seen through a store whose reads fail: the
 * claimed record is paged out by a checkpoint and no cache keeps it, so an
 * ack that reads it fails with the store's error, and one that does not
 * settles.
 */
import { describe, expect, it } from "vitest";
import {
  ClaimLostError,
  type ClaimNext,
  type ClaimedJob,
  JobRecordDamagedError,
  MemoryStore,
  MockClock,
  type OpenOptions,
  Queue,
  SettlementEffects,
  WriteBatch,
  withFaults,
} from "taquba";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import * as K from "../../runtime/queue/keys.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { decodeJob, encodeJob } from "../../runtime/queue/record.js";
import { enc, settle } from "./helpers.js";

const always: ClaimNext = { index: 0, reserve: () => true };

/** A queue whose records a checkpoint pages out and no cache keeps, over a store whose reads fail while `faulty.failureRate` is 1. */
async function openPaged(opts: OpenOptions = {}) {
  const memory = new MemoryStore();
  const faulty = withFaults(memory, { failureRate: 0, seed: 11, ops: ["get"] });
  const clock = new MockClock(1_700_000_000_000);
  const queue = await Queue.open(faulty, "q", {
    clock,
    flushIntervalMs: 0,
    recordCacheBytes: 0,
    engineOptions: { checkpointWalObjects: 2, retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } },
    ...opts,
  });
  return { faulty, queue, clock };
}

/** Writes enough that a checkpoint pages every earlier record out. */
async function pageOut(queue: Queue): Promise<void> {
  for (let i = 0; i < 8; i++) {
    await queue.enqueue("other", enc(`filler ${i}`));
    await queue.flush();
  }
}

function coreOf(job: ClaimedJob): QueueCore {
  return ticketOf(job)!.owner as QueueCore;
}

/** Commits `batch` straight to the queue's engine, as a writer beside the queue would. */
async function commitBeside(job: ClaimedJob, batch: WriteBatch): Promise<void> {
  await coreOf(job).engine.commit(batch);
}

/** Writes the stored record of `job` again as `change` leaves a decoded copy of it, straight through the queue's engine. */
async function rewriteRecord(job: ClaimedJob, change: (r: ReturnType<typeof decodeJob>) => void): Promise<void> {
  const key = K.jobKey(job.id);
  const r = decodeJob(key, coreOf(job).engine.get(key)!);
  change(r);
  await commitBeside(job, new WriteBatch().put(key, encodeJob(r)));
}

/** A job of "jobs" claimed by a plain claim. */
async function claimedJob(queue: Queue): Promise<ClaimedJob> {
  await queue.enqueue("jobs", enc("work"));
  return (await queue.claim("jobs", 60_000))!;
}

type FaultyStore = Awaited<ReturnType<typeof openPaged>>["faulty"];

/** Acks `job` while every store read fails: it settles only if the ack does not read the job's record. */
async function ackUnread(faulty: FaultyStore, queue: Queue, job: ClaimedJob): Promise<void> {
  faulty.failureRate = 1;
  try {
    await queue.ack(job);
  } finally {
    faulty.failureRate = 0;
  }
}

/** The ack of `job` reads its record: it fails while store reads fail, and settles the job once they succeed. */
async function expectAckReads(faulty: FaultyStore, queue: Queue, job: ClaimedJob): Promise<void> {
  faulty.failureRate = 1;
  await expect(queue.ack(job)).rejects.toThrow();
  faulty.failureRate = 0;
  await queue.ack(job);
  expect(await queue.view().job(job.id)).toBeNull();
}

/** A job of "jobs" claimed by a chained ack. */
async function chainedJob(queue: Queue): Promise<ClaimedJob> {
  await queue.enqueue("jobs", enc("first"));
  const first = (await queue.claim("jobs", 60_000))!;
  const next = (await queue.ackClaimingNext(first, new SettlementEffects().enqueue("jobs", enc("next")), always)).next;
  if (next === undefined) throw new Error("the ack did not chain");
  return next;
}

describe("an ack acting on its claim's record unread", () => {
  it("settles a job whose record is paged out and unreadable: nothing wrote it since the claim", async () => {
    const { faulty, queue } = await openPaged();
    const job = await claimedJob(queue);
    await pageOut(queue);
    await ackUnread(faulty, queue, job);
    expect(await queue.view().job(job.id)).toBeNull();
    expect(await queue.view().stats("jobs")).toMatchObject({ pending: 0, claimed: 0, done: 1 });
    await queue.close();
  });

  it("the same for a job a chained ack claimed", async () => {
    const { faulty, queue } = await openPaged();
    const next = await chainedJob(queue);
    await pageOut(queue);
    await ackUnread(faulty, queue, next);
    expect(await queue.view().job(next.id)).toBeNull();
    expect(await queue.view().stats("jobs")).toMatchObject({ pending: 0, claimed: 0, done: 2 });
    await queue.close();
  });

  it("reads the record after a commit straight to the engine, even of another key", async () => {
    const { faulty, queue } = await openPaged();
    const job = await claimedJob(queue);
    await pageOut(queue);
    await commitBeside(job, new WriteBatch().put("elsewhere", enc("x")));
    await expectAckReads(faulty, queue, job);
    await queue.close();
  });

  it("reads the record after a cancel flagged it", async () => {
    const { faulty, queue } = await openPaged();
    const job = await claimedJob(queue);
    expect(await queue.cancelJob(job.id)).toBe("requested");
    await pageOut(queue);
    await expectAckReads(faulty, queue, job);
    await queue.close();
  });

  it("reads the record after a cancel flagged a job a chained ack claimed", async () => {
    const { faulty, queue } = await openPaged();
    const next = await chainedJob(queue);
    expect(await queue.cancelJob(next.id)).toBe("requested");
    await pageOut(queue);
    await expectAckReads(faulty, queue, next);
    await queue.close();
  });

  it("refuses the ack of a record a commit straight to the engine put back to pending, and leaves it", async () => {
    const { queue } = await openPaged();
    const job = await claimedJob(queue);
    await rewriteRecord(job, (r) => {
      r.state = "pending";
    });
    await expect(queue.ack(job)).rejects.toBeInstanceOf(ClaimLostError);
    expect(await queue.view().job(job.id)).toMatchObject({ state: "pending" });
    await queue.close();
  });

  it("reads the record a commit straight to the engine damaged: the ack sets the job aside instead of settling it", async () => {
    const { queue } = await openPaged();
    const job = await claimedJob(queue);
    await commitBeside(job, new WriteBatch().put(K.jobKey(job.id), new Uint8Array([0xc1, 0xc1, 0xc1])));
    const refused = await queue.ack(job).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(JobRecordDamagedError);
    expect(String((refused as Error).message)).toContain(job.id);
    expect(await queue.view().stats("jobs")).toMatchObject({ claimed: 0, dead: 1, done: 0 });
    await queue.close();
  });

  it("refuses the ack of a claim the reaper ended and a second claim took; the second claim's ack settles unread", async () => {
    const { faulty, queue, clock } = await openPaged({ queueConfigs: { jobs: { leaseMs: 1_000, maxAttempts: 5 } } });
    await queue.enqueue("jobs", enc("work"));
    const first = (await queue.claim("jobs"))!;
    clock.advance(1_500);
    await settle(20);
    const second = (await queue.claim("jobs", 60_000))!;
    expect(second.id).toBe(first.id);
    expect(second.attempt).toBe(2);
    await expect(queue.ack(first)).rejects.toBeInstanceOf(ClaimLostError);
    expect(await queue.view().stats("jobs")).toMatchObject({ claimed: 1, done: 0 });
    await pageOut(queue);
    await ackUnread(faulty, queue, second);
    expect(await queue.view().job(first.id)).toBeNull();
    expect(await queue.view().stats("jobs")).toMatchObject({ pending: 0, claimed: 0, done: 1 });
    await queue.close();
  });

  it("refuses the ack of a claim whose damaged record the reaper set aside", async () => {
    const { queue, clock } = await openPaged({ queueConfigs: { jobs: { leaseMs: 1_000, maxAttempts: 5 } } });
    await queue.enqueue("jobs", enc("work"));
    const job = (await queue.claim("jobs"))!;
    await commitBeside(job, new WriteBatch().put(K.jobKey(job.id), new Uint8Array([0xc1])));
    clock.advance(1_500);
    await settle(20);
    await expect(queue.ack(job)).rejects.toBeInstanceOf(ClaimLostError);
    expect(await queue.view().stats("jobs")).toMatchObject({ claimed: 0, dead: 1, done: 0 });
    await queue.close();
  });

  it("refuses the ack of a claim a cancel of its damaged record removed", async () => {
    const { queue } = await openPaged();
    const job = await claimedJob(queue);
    await commitBeside(job, new WriteBatch().put(K.jobKey(job.id), new Uint8Array([0xc1])));
    expect(await queue.cancelJob(job.id)).toBe("removed");
    await expect(queue.ack(job)).rejects.toBeInstanceOf(ClaimLostError);
    expect(await queue.view().job(job.id)).toBeNull();
    expect(await queue.view().stats("jobs")).toMatchObject({ claimed: 0, done: 0 });
    await queue.close();
  });
});
