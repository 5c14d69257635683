/**
 * @module The queue with job records paged out of memory and a record cache
 * that keeps nothing past a turn: every operation that reads a record
 * (claims, settlements, cancel, wake, views, completion waits, lease
 * expiry, promotion, open-time recovery) must load it first and still
 * give the results it gives with every record in memory.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue } from "taquba";
import { dec, enc, settle } from "./helpers.js";

const pagedOpts = (clock: MockClock) => ({
  clock,
  flushIntervalMs: 0,
  recordCacheBytes: 0,
  // Checkpoint every two WAL objects, so records leave memory all the time.
  engineOptions: { checkpointWalObjects: 2 },
});

describe("queue with paged job records", () => {
  it("claims, settles, cancels, wakes, views and recovers records read back from the store", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const store = new MemoryStore();
    let queue = await Queue.open(store, "q", pagedOpts(clock));
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push((await queue.enqueue("jobs", enc(`job ${i}`))).jobId);
    const later = await queue.enqueue("jobs", enc("later"), { runAt: clock.now() + 60_000 });
    const claimedBeforeCrash = await queue.claim("jobs", 5_000);
    expect(claimedBeforeCrash?.id).toBe(ids[0]);
    await queue.flush();
    await queue.close();

    // Reopen: every record comes from segments; the claim of the closed queue is requeued.
    queue = await Queue.open(store, "q", pagedOpts(clock));
    expect(queue.recovery.requeued).toEqual([ids[0]]);
    const info = await queue.view().job(ids[3]!);
    expect(info?.state).toBe("pending");
    const page = await queue.view().listJobs("jobs", "pending", { limit: 5 });
    expect(page.items.map((j) => j.id)).toEqual(ids.slice(0, 5));
    expect(await queue.cancel(ids[29]!)).toBe(true);
    expect(await queue.wake(later.jobId)).toBe("woken");

    // Drain in order: claim, then ack, nack (retry) or leave to expire.
    const seen: string[] = [];
    const completion = queue.waitForCompletion(ids[1]!);
    for (let n = 0; ; n++) {
      const job = await queue.claim("jobs", 5_000);
      if (job === null) break;
      seen.push(dec(job.payload));
      if (job.id === ids[2] && job.attempt === 1) await queue.nack(job, "once more");
      else if (job.id === ids[4] && job.attempt === 1) {
        // Left to expire: the reaper must load it to requeue it.
        clock.advance(10_000);
        await queue.runMaintenance();
      } else await queue.ack(job);
      await settle(2);
      if (n > 100) throw new Error("the drain does not end");
    }
    expect((await completion).kind).toBe("done");
    expect(seen.filter((p) => p === "job 2")).toHaveLength(2);
    expect(seen.filter((p) => p === "job 4")).toHaveLength(2);
    expect(seen).not.toContain("job 29");
    expect(new Set(seen)).toEqual(new Set([...Array.from({ length: 29 }, (_, i) => `job ${i}`), "later"]));
    expect(queue.engineStats.segmentFetches).toBeGreaterThan(10);
    expect(queue.engineStats.cacheMisses).toBeGreaterThan(0);
    await queue.close();
  });

  it("promotes scheduled jobs whose records are paged out", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const store = new MemoryStore();
    let queue = await Queue.open(store, "q", pagedOpts(clock));
    for (let i = 0; i < 6; i++) await queue.enqueue("jobs", enc(`s${i}`), { runAt: clock.now() + 1_000 });
    await queue.close();
    queue = await Queue.open(store, "q", pagedOpts(clock));
    clock.advance(2_000);
    await queue.runMaintenance();
    expect((await queue.view().stats("jobs")).pending).toBe(6);
    const got = await queue.claimBatch("jobs", 10);
    expect(got.map((j) => dec(j.payload)).sort()).toEqual(["s0", "s1", "s2", "s3", "s4", "s5"]);
    await queue.close();
  });

  it("settles claims whose records a checkpoint paged out after the claim, acks and nacks alike", async () => {
    const clock = new MockClock(1_700_000_000_000);
    const queue = await Queue.open(new MemoryStore(), "q", pagedOpts(clock));
    // Records of at least 64 bytes are paged: a payload that size makes sure of it.
    const pad = "x".repeat(64);
    for (let i = 0; i < 3; i++) await queue.enqueue("jobs", enc(`job ${i} ${pad}`));
    const claimed = await queue.claimBatch("jobs", 3);
    expect(claimed).toHaveLength(3);
    // Later commits checkpoint the claimed records out of memory; nothing keeps them cached.
    const fetches = queue.engineStats.segmentFetches;
    for (let i = 0; i < 6; i++) await queue.enqueue("other", enc(`filler ${i}`));
    await queue.flush();
    for (let i = 0; i < 50 && queue.engineStats.checkpoints < 2; i++) await settle(2);
    expect(queue.engineStats.checkpoints).toBeGreaterThanOrEqual(2);
    await queue.ack(claimed[0]!);
    expect(await queue.nack(claimed[1]!, "again")).toMatchObject({ kind: "retried" });
    await queue.ack(claimed[2]!);
    // The settlements loaded the records they read.
    expect(queue.engineStats.segmentFetches).toBeGreaterThan(fetches);
    expect(await queue.view().stats("jobs")).toMatchObject({ pending: 0, scheduled: 1, claimed: 0, done: 2 });
    clock.advance(3_600_000);
    await queue.runMaintenance();
    const again = await queue.claim("jobs");
    expect(again?.id).toBe(claimed[1]!.id);
    expect(again?.attempt).toBe(2);
    await queue.close();
  });

  it("refuses a bad recordCacheBytes before opening anything", async () => {
    await expect(Queue.open(new MemoryStore(), "q", { recordCacheBytes: -1 })).rejects.toThrow(/recordCacheBytes/);
    await expect(Queue.open(new MemoryStore(), "q", { recordCacheBytes: Number.NaN })).rejects.toThrow(/recordCacheBytes/);
  });
});
