/**
 * @module Random operation sequences against the queue and a small reference model;
 * after every operation the claim choices, outcomes and per-queue counters
 * must agree.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ClaimLostError, MemoryStore, MockClock, Queue, type ClaimedJob, type QueueStats } from "taquba";
import { HEAVY_TEST_MS } from "../support/load.js";

type Op =
  | { kind: "enqueue"; queue: string; priority: number; dedup?: string; delay: number }
  | { kind: "claim"; queue: string }
  | { kind: "ack" | "nack"; pick: number }
  | { kind: "cancel"; pick: number }
  | { kind: "wake"; pick: number }
  | { kind: "advance"; ms: number }
  | { kind: "reopen" };

interface MJob {
  id: string;
  queue: string;
  priority: number;
  seq: number;
  state: "pending" | "scheduled" | "claimed" | "dead" | "gone";
  attempts: number;
  runAt: number;
  dedup?: string;
  leaseExpiry: number;
  claimToken: number;
}

const QUEUES = ["a", "b"];
const LEASE = 700;
const MAX_ATTEMPTS = 3;
const backoff = (attempts: number) => Math.min(100 * 2 ** (attempts - 1), 1000);

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("enqueue" as const),
      queue: fc.constantFrom(...QUEUES),
      priority: fc.constantFrom(0, 1, 2),
      dedup: fc.option(fc.constantFrom("k1", "k2"), { nil: undefined }),
      delay: fc.constantFrom(0, 0, 100, 500),
    }),
  },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("claim" as const), queue: fc.constantFrom(...QUEUES) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("ack" as const), pick: fc.nat(20) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("nack" as const), pick: fc.nat(20) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("cancel" as const), pick: fc.nat(20) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("wake" as const), pick: fc.nat(20) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("reopen" as const) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.constantFrom(50, 100, 300, 800) }) },
);

class Model {
  now: number;
  seq = 0;
  jobs: MJob[] = [];
  done: Record<string, number> = { a: 0, b: 0 };
  constructor(now: number) {
    this.now = now;
  }
  byId(id: string) {
    return this.jobs.find((j) => j.id === id)!;
  }
  stats(queue: string): QueueStats {
    const s = { pending: 0, scheduled: 0, claimed: 0, done: this.done[queue]!, dead: 0 };
    for (const j of this.jobs) if (j.queue === queue && j.state !== "gone") s[j.state]++;
    return s;
  }
  dedupHolder(queue: string, key: string) {
    return this.jobs.find((j) => j.queue === queue && j.dedup === key && (j.state === "pending" || j.state === "scheduled"));
  }
  nextClaim(queue: string) {
    const ps = this.jobs.filter((j) => j.queue === queue && j.state === "pending");
    ps.sort((x, y) => x.priority - y.priority || x.seq - y.seq);
    return ps[0];
  }
  fail(j: MJob) {
    if (j.attempts >= MAX_ATTEMPTS) j.state = "dead";
    else {
      j.state = "scheduled";
      j.runAt = this.now + backoff(j.attempts);
    }
  }
  /** A restart: every claim is void; recovery requeues or dead-letters at the limit. */
  reopen() {
    for (const j of this.jobs) {
      if (j.state !== "claimed") continue;
      j.claimToken = -1;
      j.state = j.attempts >= MAX_ATTEMPTS ? "dead" : "pending";
    }
  }
  tick() {
    for (const j of this.jobs) {
      if (j.state === "claimed" && j.leaseExpiry <= this.now) {
        j.claimToken = -1;
        j.state = j.attempts >= MAX_ATTEMPTS ? "dead" : "pending";
      }
    }
    for (const j of this.jobs) if (j.state === "scheduled" && j.runAt <= this.now) j.state = "pending";
  }
}

async function runSequence(ops: Op[]): Promise<void> {
  const clock = new MockClock(1_000_000);
  const store = new MemoryStore();
  const open = () =>
    Queue.open(store, "prop", {
      clock,
      flushIntervalMs: 0,
      defaultQueueConfig: { maxAttempts: MAX_ATTEMPTS, leaseMs: LEASE, backoff: { baseMs: 100, maxMs: 1000, factor: 2 } },
    });
  let queue = await open();
  const model = new Model(clock.now());
  const held: { job: ClaimedJob; token: number }[] = [];
  let tokens = 0;
  try {
    for (const op of ops) {
      switch (op.kind) {
        case "enqueue": {
          const runAt = op.delay > 0 ? clock.now() + op.delay : undefined;
          const out = await queue.enqueue(op.queue, new Uint8Array([1]), {
            priority: op.priority,
            ...(op.dedup ? { dedupKey: op.dedup } : {}),
            ...(runAt ? { runAt } : {}),
          });
          const holder = op.dedup ? model.dedupHolder(op.queue, op.dedup) : undefined;
          if (holder) expect(out).toEqual({ jobId: holder.id, newlyEnqueued: false });
          else {
            expect(out.newlyEnqueued).toBe(true);
            model.jobs.push({
              id: out.jobId,
              queue: op.queue,
              priority: op.priority,
              seq: model.seq++,
              state: runAt ? "scheduled" : "pending",
              attempts: 0,
              runAt: runAt ?? 0,
              dedup: op.dedup,
              leaseExpiry: 0,
              claimToken: -1,
            });
          }
          break;
        }
        case "claim": {
          const job = await queue.claim(op.queue);
          const expected = model.nextClaim(op.queue);
          expect(job?.id).toBe(expected?.id);
          if (job && expected) {
            expected.state = "claimed";
            expected.attempts++;
            expected.dedup = undefined;
            expected.leaseExpiry = model.now + LEASE;
            expected.claimToken = ++tokens;
            expect(job.attempt).toBe(expected.attempts);
            held.push({ job, token: tokens });
          }
          break;
        }
        case "ack":
        case "nack": {
          if (held.length === 0) break;
          const { job, token } = held.splice(op.pick % held.length, 1)[0]!;
          const m = model.byId(job.id);
          const live = m.state === "claimed" && m.claimToken === token;
          const p = op.kind === "ack" ? queue.ack(job) : queue.nack(job, "x");
          if (!live) {
            await expect(p).rejects.toBeInstanceOf(ClaimLostError);
            break;
          }
          await p;
          m.claimToken = -1;
          if (op.kind === "ack") {
            m.state = "gone";
            model.done[m.queue]!++;
          } else model.fail(m);
          break;
        }
        case "cancel": {
          if (model.jobs.length === 0) break;
          const m = model.jobs[op.pick % model.jobs.length]!;
          const out = await queue.cancelJob(m.id);
          const want = m.state === "pending" || m.state === "scheduled" ? "removed" : m.state === "claimed" ? "requested" : "not_found";
          expect(out).toBe(want);
          if (want === "removed") m.state = "gone";
          break;
        }
        case "wake": {
          if (model.jobs.length === 0) break;
          const m = model.jobs[op.pick % model.jobs.length]!;
          const out = await queue.wake(m.id);
          expect(out).toBe(m.state === "scheduled" ? "woken" : m.state === "gone" ? "not_found" : "not_scheduled");
          if (m.state === "scheduled") m.state = "pending";
          break;
        }
        case "reopen": {
          await queue.close();
          queue = await open();
          model.reopen();
          break;
        }
        case "advance": {
          clock.advance(op.ms);
          model.now = clock.now();
          await queue.runMaintenance();
          model.tick();
          break;
        }
      }
      for (const q of QUEUES) expect(await queue.view().stats(q)).toEqual(model.stats(q));
    }
  } finally {
    await queue.close();
  }
}

describe("queue against a reference model", () => {
  it("agrees on every observable after random operation sequences", { timeout: HEAVY_TEST_MS }, async () => {
    await fc.assert(fc.asyncProperty(fc.array(opArb, { minLength: 10, maxLength: 60, size: "max" }), runSequence), { numRuns: 100 });
  });
});
