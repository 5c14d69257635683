/**
 * @module Enqueue and claim: priority then FIFO order (also across restarts and a
 * clock that went back), runAt, dedup keys and caller ids.
 */
import { describe, expect, it } from "vitest";
import { DuplicateJobIdError, MemoryStore, Priority, Queue, ValidationError } from "taquba";
import { encodeTime } from "ulid";
import { AHEAD_MS } from "../../runtime/queue/seq-high-water.js";
import { nextUlid, ulidAfter } from "../support/next-ulid.js";
import { dec, drainPayloads, enc, openQueue, settle } from "./helpers.js";

describe("enqueue and claim order", () => {
  it("claims FIFO within a priority, lower priority first", async () => {
    const { queue } = await openQueue();
    await queue.enqueue("q", enc("n1"));
    await queue.enqueue("q", enc("low"), { priority: Priority.LOW });
    await queue.enqueue("q", enc("n2"));
    await queue.enqueue("q", enc("high"), { priority: Priority.HIGH });
    await queue.enqueue("q", enc("zero"), { priority: 0 });
    await queue.enqueue("q", enc("n3"));
    expect(await drainPayloads(queue, "q")).toEqual(["zero", "high", "n1", "n2", "n3", "low"]);
    await queue.close();
  });

  it("keeps FIFO for caller ids that do not sort by time", async () => {
    const { queue } = await openQueue();
    for (const id of ["zz", "aa", "mm"]) await queue.enqueue("q", enc(id), { jobId: id });
    expect(await drainPayloads(queue, "q")).toEqual(["zz", "aa", "mm"]);
    await queue.close();
  });

  it("keeps queues apart", async () => {
    const { queue } = await openQueue();
    await queue.enqueue("a", enc("1"));
    await queue.enqueue("ab", enc("2"));
    expect(await drainPayloads(queue, "a")).toEqual(["1"]);
    expect(await drainPayloads(queue, "ab")).toEqual(["2"]);
    expect(await queue.view().listQueues()).toEqual(["a", "ab"]);
    await queue.close();
  });

  it("claimBatch takes up to max jobs in order and shares one lease start", async () => {
    const { queue, clock } = await openQueue();
    for (let i = 0; i < 5; i++) await queue.enqueue("q", enc(String(i)));
    const jobs = await queue.claimBatch("q", 3, 10_000);
    expect(jobs.map((j) => dec(j.payload))).toEqual(["0", "1", "2"]);
    expect(new Set(jobs.map((j) => j.lease.expiresAt))).toEqual(new Set([clock.now() + 10_000]));
    expect(jobs.every((j) => j.attempt === 1 && j.maxAttempts === 3)).toBe(true);
    expect(await queue.view().stats("q")).toMatchObject({ pending: 2, claimed: 3 });
    await queue.close();
  });

  it("ids are ULIDs that increase even when the clock stands still or goes back", async () => {
    const { queue, clock } = await openQueue();
    const ids = [queue.nextJobId(), queue.nextJobId()];
    clock.set(clock.now() - 60_000);
    ids.push((await queue.enqueue("q", enc("x"))).jobId, queue.nextJobId());
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(4);
    expect(ids[0]).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    await queue.close();
  });

  it("keeps headers and reports them on claim", async () => {
    const { queue } = await openQueue();
    await queue.enqueue("q", enc("x"), { headers: { tenant: "acme" }, maxAttempts: 7 });
    const job = await queue.claim("q");
    expect(job?.headers).toEqual({ tenant: "acme" });
    expect(job?.maxAttempts).toBe(7);
    await queue.close();
  });
});

describe("FIFO across restarts", () => {
  it("keeps order for jobs enqueued in the same millisecond by two processes, and after the clock went back", async () => {
    for (let round = 0; round < 8; round++) {
      const store = new MemoryStore();
      const { queue, clock } = await openQueue({ store });
      const first = await queue.enqueue("q", enc("first"));
      await queue.close();
      if (round % 2 === 1) clock.set(clock.now() - 5000);
      const again = await Queue.open(store, "q", { clock, flushIntervalMs: 0 });
      const second = await again.enqueue("q", enc("second"));
      expect(second.jobId > first.jobId).toBe(true);
      expect(await drainPayloads(again, "q")).toEqual(["first", "second"]);
      await again.close();
    }
  });
});

describe("runAt", () => {
  it("schedules a future job and promotes it exactly when due", async () => {
    const { queue, clock } = await openQueue();
    const now = clock.now();
    const { jobId } = await queue.enqueue("q", enc("later"), { runAt: now + 5000 });
    await queue.enqueue("q", enc("past"), { runAt: now - 1 });
    expect(await queue.view().stats("q")).toMatchObject({ pending: 1, scheduled: 1 });
    expect(dec((await queue.claim("q"))!.payload)).toBe("past");
    expect(await queue.claim("q")).toBeNull();
    clock.advance(4999);
    await settle();
    expect(await queue.claim("q")).toBeNull();
    clock.advance(1);
    await settle();
    const job = await queue.claim("q");
    expect(job?.id).toBe(jobId);
    expect(await queue.view().stats("q")).toMatchObject({ pending: 0, scheduled: 0, claimed: 2 });
    await queue.close();
  });
});

describe("dedup", () => {
  it("returns the held job while pending or scheduled, releases on claim", async () => {
    const { queue } = await openQueue();
    const a = await queue.enqueue("q", enc("a"), { dedupKey: "k" });
    const b = await queue.enqueue("q", enc("b"), { dedupKey: "k" });
    expect(b).toEqual({ jobId: a.jobId, newlyEnqueued: false });
    expect(await queue.view().stats("q")).toMatchObject({ pending: 1 });
    // Same key in another queue is independent.
    expect((await queue.enqueue("other", enc("c"), { dedupKey: "k" })).newlyEnqueued).toBe(true);
    const job = await queue.claim("q");
    const c = await queue.enqueue("q", enc("c"), { dedupKey: "k" });
    expect(c.newlyEnqueued).toBe(true);
    expect(c.jobId).not.toBe(a.jobId);
    await queue.ack(job!);
    await queue.close();
  });

  it("releases on cancel and holds for scheduled jobs", async () => {
    const { queue, clock } = await openQueue();
    const a = await queue.enqueue("q", enc("a"), { dedupKey: "k", runAt: clock.now() + 1000 });
    expect((await queue.enqueue("q", enc("b"), { dedupKey: "k" })).newlyEnqueued).toBe(false);
    expect(await queue.cancel(a.jobId)).toBe(true);
    expect((await queue.enqueue("q", enc("b"), { dedupKey: "k" })).newlyEnqueued).toBe(true);
    await queue.close();
  });

  it("holds across a restart", async () => {
    const store = new MemoryStore();
    const { queue, clock } = await openQueue({ store });
    const a = await queue.enqueue("q", enc("a"), { dedupKey: "k" });
    await queue.close();
    const again = await Queue.open(store, "q", { clock });
    expect(await again.enqueue("q", enc("b"), { dedupKey: "k" })).toEqual({ jobId: a.jobId, newlyEnqueued: false });
    await again.close();
  });
});

describe("enqueueBatch", () => {
  it("is atomic: a duplicate caller id writes nothing", async () => {
    const { queue } = await openQueue();
    await queue.enqueue("q", enc("x"), { jobId: "taken" });
    await expect(
      queue.enqueueBatch([
        { queueName: "q", payload: enc("1") },
        { queueName: "q", payload: enc("2"), opts: { jobId: "taken" } },
      ]),
    ).rejects.toBeInstanceOf(DuplicateJobIdError);
    expect(await queue.view().stats("q")).toMatchObject({ pending: 1 });
    const out = await queue.enqueueBatch([
      { queueName: "q", payload: enc("1"), opts: { dedupKey: "d" } },
      { queueName: "r", payload: enc("2") },
      { queueName: "q", payload: enc("3"), opts: { dedupKey: "d" } },
    ]);
    expect(out.map((o) => o.newlyEnqueued)).toEqual([true, true, false]);
    expect(out[2]!.jobId).toBe(out[0]!.jobId);
    await queue.close();
  });

  it("a generated id equal to a caller id already taken is drawn again: the enqueue succeeds and the caller's job is left as it was", async () => {
    // Ids generated in one millisecond count up by one, so a caller can take the id the queue generates next.
    const { queue } = await openQueue();
    const first = (await queue.enqueue("q", enc("first"))).jobId;
    // The caller's enqueue draws an id of its own for its order, one more; the next generated job id is two more.
    const taken = nextUlid(nextUlid(first));
    await queue.enqueue("q", enc("caller's"), { jobId: taken });
    const generated = await queue.enqueue("q", enc("generated"));
    // The next id drawn after the taken one: fresh, and still after every id generated before it.
    expect(generated).toEqual({ jobId: nextUlid(taken), newlyEnqueued: true });
    expect(await queue.view().stats("q")).toMatchObject({ pending: 3 });
    expect(await drainPayloads(queue, "q")).toEqual(["first", "caller's", "generated"]);
    // Ids a caller takes in a row are all passed over: the three caller enqueues draw the next three ids for
    // their order, and take the three after those, which the next generated id would be.
    const idsOn = (id: string, n: number): string => (n === 0 ? id : idsOn(nextUlid(id), n - 1));
    const takenInARow = [4, 5, 6].map((n) => idsOn(generated.jobId, n));
    for (const [i, jobId] of takenInARow.entries()) await queue.enqueue("q", enc(`caller ${i}`), { jobId });
    expect(await queue.enqueue("q", enc("generated again"))).toEqual({ jobId: idsOn(generated.jobId, 7), newlyEnqueued: true });
    expect(await drainPayloads(queue, "q")).toEqual(["caller 0", "caller 1", "caller 2", "generated again"]);
    await queue.close();
  });

  it("nextJobId passes over ids a caller's job holds, and hands out one a caller's job left", async () => {
    const { queue } = await openQueue();
    const drawn = queue.nextJobId();
    // The caller's batch draws the next two ids for its jobs' order; the two after those are the next two nextJobId would give.
    const taken = [ulidAfter(drawn, 3), ulidAfter(drawn, 4)];
    await queue.enqueueBatch(taken.map((jobId) => ({ queueName: "q", payload: enc(jobId), opts: { jobId } })));
    const fresh = queue.nextJobId();
    expect(fresh).toBe(nextUlid(taken[1]!));
    expect((await queue.enqueue("q", enc("mine"), { jobId: fresh })).jobId).toBe(fresh);
    // A drawn id is checked when drawn: one whose job is gone again is as fresh as any.
    const next = queue.nextJobId();
    const job = await queue.enqueue("q", enc("gone"), { jobId: nextUlid(nextUlid(next)) });
    expect(await queue.cancelJob(job.jobId)).toBe("removed");
    expect(queue.nextJobId()).toBe(job.jobId);
    expect(await drainPayloads(queue, "q")).toEqual([...taken, "mine"]);
    await queue.close();
  });

  it("nextJobId passes over ids a caller's job took before a restart; ids of other shapes change nothing", async () => {
    const { store, clock, queue: first } = await openQueue();
    await first.enqueue("q", enc("first"));
    // The stored high-water mark: the lowest id of the millisecond AHEAD_MS later. After a restart the ids continue
    // from it, so a caller can take the ones drawn first after the next open.
    const mark = `${encodeTime(clock.now() + AHEAD_MS, 10)}${"0".repeat(16)}`;
    const taken = Array.from({ length: 8 }, (_, i) => ulidAfter(mark, i + 1));
    // More ids of other shapes where ULIDs sort than the open looks at: the bound settles for one of them (lookups, still right).
    const others = ["0", "7zzz", "1234", "Z", "order-1", "zzz", ...Array.from({ length: 70 }, (_, i) => `1-${i}`)];
    await first.enqueueBatch([...others, ...taken].map((jobId) => ({ queueName: "q", payload: enc(jobId), opts: { jobId } })));
    await first.close();
    const { queue } = await openQueue({ store, clock });
    expect(queue.nextJobId()).toBe(ulidAfter(mark, 9));
    expect(await drainPayloads(queue, "q")).toEqual(["first", ...others, ...taken]);
    await queue.close();
  });

  it("rejects bad input before writing anything", async () => {
    const { queue } = await openQueue();
    const bad = [
      () => queue.enqueue("bad/name", enc("x")),
      () => queue.enqueue("q", enc("x"), { priority: -1 }),
      () => queue.enqueue("q", enc("x"), { priority: 1.5 }),
      () => queue.enqueue("q", enc("x"), { jobId: "no spaces" }),
      () => queue.enqueue("q", enc("x"), { maxAttempts: 0 }),
      () => queue.enqueue("q", "text" as unknown as Uint8Array),
      () => queue.enqueue("q", enc("x"), { headers: { a: 1 as unknown as string } }),
      () => queue.enqueue("q", enc("x"), { headers: { "": "v" } }),
      () => queue.enqueue("q", enc("x"), { headers: { a: "\uD800" } }),
      () =>
        queue.enqueueBatch([
          { queueName: "q", payload: enc("1") },
          { queueName: "", payload: enc("2") },
        ]),
    ];
    for (const f of bad) await expect(f()).rejects.toBeInstanceOf(ValidationError);
    expect(await queue.view().listQueues()).toEqual([]);
    await queue.close();
  });
});
