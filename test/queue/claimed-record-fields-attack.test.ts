/**
 * @module Every field of a job record, through the claimed record's copy:
 * jobs with headers, inline and offloaded payloads, priorities, attempt
 * limits, dedup keys, run times and attached bytes are claimed, failed and
 * retried, claimed again after a reopen over the same directory, and each
 * delivery hands out exactly what was enqueued (with the attempt count and
 * the last error of the one before). A stale claim (its lease reaped, the
 * job claimed again) settles nothing, twice or through a second queue.
 */
import { describe, expect, it } from "vitest";
import { ClaimLostError, type ClaimedJob, LocalStore, MockClock, Queue, ValidationError } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";
import { dec, enc } from "./helpers.js";

const tempDir = useTempDirs("taquba-record-fields-");
const T0 = 1_700_000_000_000;

interface Spec {
  payload: Uint8Array;
  headers: Record<string, string>;
  priority: number;
  maxAttempts: number;
  dedupKey: string;
}

const specs: Spec[] = [0, 1, 2, 3].map((i) => ({
  // Two inline, two past the offload bound (512 B below).
  payload: enc(`${i}:`.padEnd(i < 2 ? 40 : 2000, String.fromCharCode(97 + i))),
  headers: { "x-index": String(i), "x-long": "h".repeat(300 + i), "x-unicode": "é🙂" },
  priority: 10 + i,
  maxAttempts: 3 + i,
  dedupKey: `dedup-${i}`,
}));

function open(dir: string, clock: MockClock): Promise<Queue> {
  return Queue.open(new LocalStore(dir), "app", {
    clock,
    flushIntervalMs: 0,
    payloadOffloadBytes: 512,
    queueConfigs: { w: { backoff: { baseMs: 100, maxMs: 100 } } },
  });
}

/** Waits until `n` jobs of queue w are pending (scheduled ones promoted by the queue's timer). */
function pending(queue: Queue, n: number): Promise<void> {
  return until(`${n} pending`, async () => (await queue.view().stats("w")).pending === n);
}

function expectFields(job: ClaimedJob, s: Spec, attempt: number, lastError: string | undefined): void {
  expect(dec(job.payload)).toBe(dec(s.payload));
  expect({ ...job.headers }).toEqual(s.headers);
  expect(job.priority).toBe(s.priority);
  expect(job.maxAttempts).toBe(s.maxAttempts);
  expect(job.attempt).toBe(attempt);
  expect(job.isLastAttempt()).toBe(attempt >= s.maxAttempts);
  expect(job.lastError).toBe(lastError);
  expect(job.enqueuedAt).toBe(T0);
  expect(job.queueName).toBe("w");
}

describe("a job record's fields across claim, retry and reopen", () => {
  it("each delivery hands out what was enqueued, over a reopen; dedup keys release at claim", async () => {
    const dir = await tempDir();
    const clock = new MockClock(T0);
    let queue = await open(dir, clock);
    const ids: string[] = [];
    for (const s of specs) {
      const { dedupKey, payload, ...opts } = s;
      const out = await queue.enqueue("w", payload, { ...opts, dedupKey, runAt: T0 + 50 });
      ids.push(out.jobId);
      // A second enqueue with the key while the first is scheduled returns it and writes nothing.
      expect(await queue.enqueue("w", enc("other"), { dedupKey })).toEqual({ jobId: out.jobId, newlyEnqueued: false });
    }
    expect(await queue.claim("w", 60_000)).toBeNull();
    clock.advance(50);
    await pending(queue, 4);
    // Claimed in priority order, each with every field.
    const first = await queue.claimBatch("w", 4, 60_000);
    expect(first.map((j) => j.id)).toEqual(ids);
    first.forEach((j, i) => {
      expectFields(j, specs[i]!, 1, undefined);
    });
    // Claimed: the dedup keys are free again (a new job), which is cancelled to keep the count.
    const again = await queue.enqueue("w", enc("new"), { dedupKey: "dedup-0", runAt: T0 + 10_000_000 });
    expect(again.newlyEnqueued).toBe(true);
    expect(await queue.cancel(again.jobId)).toBe(true);
    for (const [i, j] of first.entries()) expect((await queue.nack(j, `failed ${i}`)).kind).toBe("retried");
    await queue.close();

    queue = await open(dir, clock);
    clock.advance(100);
    await pending(queue, 4);
    const second = await queue.claimBatch("w", 4, 60_000);
    expect(second.map((j) => j.id)).toEqual(ids);
    second.forEach((j, i) => {
      expectFields(j, specs[i]!, 2, `failed ${i}`);
    });
    // Back to scheduled with attached bytes, woken, claimed after a reopen: attached and fields kept.
    for (const [i, j] of second.entries()) await queue.nack(j, `again ${i}`, undefined, { retryAfterMs: 1_000_000 });
    for (const [i, id] of ids.entries()) expect(await queue.wakeScheduled("w", id, enc(`attached-${i}`))).toBe(true);
    await queue.close();

    queue = await open(dir, clock);
    const third = await queue.claimBatch("w", 4, 60_000);
    expect(third.map((j) => j.id)).toEqual(ids);
    third.forEach((j, i) => {
      expectFields(j, specs[i]!, 3, `again ${i}`);
      expect(dec(j.attached!)).toBe(`attached-${i}`);
    });
    for (const j of third) await queue.ack(j);
    expect(await queue.view().stats("w")).toMatchObject({ pending: 0, claimed: 0, scheduled: 0 });
    await queue.close();
  });
});

describe("a stale claim", () => {
  it("after its lease was reaped and the job claimed again, settles nothing: twice, or through a second queue over the same directory", async () => {
    const dir = await tempDir();
    const clock = new MockClock(T0);
    const queue = await open(dir, clock);
    const { jobId } = await queue.enqueue("w", enc("x".repeat(1000)), { headers: { h: "1" }, maxAttempts: 5 });
    const stale = (await queue.claim("w", 1000))!;
    clock.advance(1001);
    await queue.runMaintenance();
    const fresh = (await queue.claim("w", 60_000))!;
    expect(fresh.id).toBe(jobId);
    expect(fresh.attempt).toBe(2);
    expect(dec(fresh.payload)).toBe("x".repeat(1000));
    // The stale delivery's lease cannot be extended, and every settlement of it is refused.
    await expect(stale.lease.ensureAtLeast(10_000)).rejects.toBeInstanceOf(ClaimLostError);
    await expect(queue.ack(stale)).rejects.toBeInstanceOf(ClaimLostError);
    await expect(queue.nack(stale, "late")).rejects.toBeInstanceOf(ClaimLostError);
    await expect(queue.deadLetter(stale, "late")).rejects.toBeInstanceOf(ClaimLostError);
    expect(await queue.view().stats("w")).toMatchObject({ claimed: 1, dead: 0, done: 0 });
    // The fresh claim settles once; a second settlement of it and the stale one's are refused.
    await queue.ack(fresh);
    await expect(queue.ack(fresh)).rejects.toBeInstanceOf(ClaimLostError);
    await expect(queue.nack(stale, "late")).rejects.toBeInstanceOf(ClaimLostError);
    await queue.close();
    // A second queue over the directory does not know either claim: refused, nothing changed.
    const other = await open(dir, clock);
    for (const j of [stale, fresh]) {
      const e = await other.ack(j).then(
        () => null,
        (x: unknown) => x,
      );
      expect(e instanceof ValidationError || e instanceof ClaimLostError).toBe(true);
    }
    expect(await other.view().stats("w")).toMatchObject({ claimed: 0, pending: 0, done: 1 });
    await other.close();
  });
});
