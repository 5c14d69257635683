/**
 * @module A lease released and claimed again in the same turn, so the
 * expiry order holds the ended lease's node beside the new one's for the
 * same job: the old expiry must not end the new claim (the job handed to a
 * second worker while the first works it), the old claim's settlement must
 * be refused, and the new lease must still expire once, at its own time.
 */
import { describe, expect, it } from "vitest";
import { ClaimLostError, type ClaimedJob, MemoryStore, MockClock, Queue } from "taquba";

const enc = (s: string) => new TextEncoder().encode(s);

async function openQueue(clock: MockClock): Promise<Queue> {
  return Queue.open(new MemoryStore(), "app", { flushIntervalMs: 0, clock, queueConfigs: { jobs: { leaseMs: 1_000, maxAttempts: 5 } } });
}

/** Lets the queue's timers and queued work run at the clock's present time. */
async function turns(n = 20): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((r) => setImmediate(r));
}

/** Settles `p` to its value or its error. */
const settled = <T>(p: Promise<T>): Promise<T | unknown> =>
  p.then(
    (v) => v,
    (err: unknown) => err,
  );

describe("a lease released and claimed again in the same turn", () => {
  it("the old lease's expiry does not end the new claim; the new one expires once, at its own time", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const queue = await openQueue(clock);
    try {
      await queue.enqueue("jobs", enc("a"));
      const first = (await queue.claim("jobs"))!;
      clock.advance(500);
      // Released and claimed again with no turn between.
      queue.releaseClaim(first);
      const again = queue.claim("jobs");
      const second = (await again) as ClaimedJob;
      expect(second?.id).toBe(first.id);
      // Past the first lease's end, before the second's: the second claim still holds.
      clock.advance(700);
      await turns();
      expect(await queue.view().stats("jobs")).toMatchObject({ claimed: 1, pending: 0 });
      expect(await queue.claim("jobs")).toBeNull();
      // The first claim's settlement is refused; the second's is taken.
      const stale = await settled(queue.ack(first));
      expect(stale).toBeInstanceOf(ClaimLostError);
      await queue.ack(second);
      expect(await queue.view().stats("jobs")).toMatchObject({ claimed: 0, pending: 0, done: 1 });
    } finally {
      await queue.close();
    }
  });

  it("claimed again, then left to expire: requeued once at the new lease's end, and claimable once", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const queue = await openQueue(clock);
    try {
      await queue.enqueue("jobs", enc("b"));
      const first = (await queue.claim("jobs"))!;
      clock.advance(300);
      queue.releaseClaim(first);
      const second = (await queue.claim("jobs"))!;
      clock.advance(900); // past the first lease (1,000 after the first claim), inside the second (1,300)
      await turns();
      expect(await queue.claim("jobs")).toBeNull();
      clock.advance(200); // past the second
      await turns();
      const third = await queue.claim("jobs");
      expect(third?.id).toBe(first.id);
      // Only one expiry counted: released claims give their attempt back.
      expect(third!.attempt).toBeLessThanOrEqual(2);
      expect(await queue.claim("jobs")).toBeNull();
      await expect(queue.ack(second)).rejects.toBeInstanceOf(ClaimLostError);
      await queue.ack(third!);
    } finally {
      await queue.close();
    }
  });

  it("many jobs released and claimed again in one turn, over and over: no claim ends before its lease, none is handed out twice", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const queue = await openQueue(clock);
    try {
      const n = 40;
      await queue.enqueueBatch(Array.from({ length: n }, (_, i) => ({ queueName: "jobs", payload: enc(String(i)) })));
      let held = await queue.claimBatch("jobs", n);
      expect(held).toHaveLength(n);
      for (let round = 0; round < 6; round++) {
        clock.advance(400);
        // Release every claim and claim them all again, in one turn.
        for (const job of held) queue.releaseClaim(job);
        const next = queue.claimBatch("jobs", n);
        held = await next;
        expect(new Set(held.map((j) => j.id)).size).toBe(n);
        await turns();
        // Each round passes the lease of a claim taken two rounds before: none of the live ones may end.
        expect(await queue.view().stats("jobs")).toMatchObject({ claimed: n, pending: 0 });
      }
      for (const job of held) await queue.ack(job);
      expect(await queue.view().stats("jobs")).toMatchObject({ claimed: 0, pending: 0, done: n });
    } finally {
      await queue.close();
    }
  });
});
