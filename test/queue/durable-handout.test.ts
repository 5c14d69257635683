/**
 * @module A claim hands out a job only once the commit that made it
 * claimable is durable (WAL puts are held back to open that window).
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue } from "taquba";
import { GatedStore } from "../support/gated-store.js";
import { enc, settle } from "./helpers.js";

/** A queue whose WAL puts can be held, so commits apply in memory but are not yet durable. */
async function heldQueue() {
  let holding = false;
  const store = new GatedStore(new MemoryStore(), (key) => holding && key.includes("/wal/"));
  const queue = await Queue.open(store, "q", { flushIntervalMs: 0 });
  return {
    queue,
    store,
    hold: () => (holding = true),
    releaseAll: () => {
      holding = false;
      for (const h of [...store.held]) store.release(h.key);
    },
  };
}

describe("jobs are handed out only once durable", () => {
  it("a claim waits for the enqueue that made the job claimable", async () => {
    const { queue, store, hold, releaseAll } = await heldQueue();
    hold();
    let enqueued = false;
    const enqueue = queue.enqueue("q", enc("a")).then(() => (enqueued = true));
    await store.waitHeld(1);
    let claimed: unknown;
    const claim = queue.claim("q").then((j) => (claimed = j));
    await settle(20);
    // The job is in memory and its claim is made, but the worker is not told yet.
    expect(enqueued).toBe(false);
    expect(claimed).toBeUndefined();
    expect(await queue.view().stats("q")).toMatchObject({ pending: 0, claimed: 1 });
    releaseAll();
    await Promise.all([enqueue, claim]);
    expect(claimed).toMatchObject({ attempt: 1 });
    await queue.close();
  });

  it("with many jobs per commit: a claim waits for the batch that made its jobs claimable, and not for one that did not", async () => {
    const { queue, store, hold, releaseAll } = await heldQueue();
    await queue.enqueue("q", enc("early"));
    hold();
    let enqueued = false;
    const batch = queue.enqueueBatch(Array.from({ length: 40 }, (_, i) => ({ queueName: "q", payload: enc(`b${i}`) }))).then(() => (enqueued = true));
    await store.waitHeld(1);
    // The durable job comes first and is handed out while the batch is held.
    const first = await queue.claim("q");
    expect(first).not.toBeNull();
    expect(enqueued).toBe(false);
    let claimed: unknown[] | undefined;
    const claim = queue.claimBatch("q", 40).then((js) => (claimed = js));
    await settle(20);
    expect(claimed).toBeUndefined();
    expect(await queue.view().stats("q")).toMatchObject({ pending: 0, claimed: 41 });
    releaseAll();
    await Promise.all([batch, claim]);
    expect(claimed).toHaveLength(40);
    await queue.close();
  });

  it("a claim of a job enqueued durably earlier does not wait for unrelated writes", async () => {
    const { queue, store, hold, releaseAll } = await heldQueue();
    await queue.enqueue("q", enc("early"));
    hold();
    const later = queue.kvPut("k", enc("v"));
    await store.waitHeld(1);
    const job = await queue.claim("q");
    expect(job).not.toBeNull();
    releaseAll();
    await later;
    await queue.close();
  });

  it("a woken job's attached bytes reach a worker only once the wake is durable", async () => {
    const { queue, store, hold, releaseAll } = await heldQueue();
    const { jobId } = await queue.enqueue("q", enc("w"), { runAt: Date.now() + 3_600_000 });
    hold();
    const wake = queue.wakeScheduled("q", jobId, enc("signal"));
    await store.waitHeld(1);
    let claimed = false;
    const claim = queue.claim("q").then((j) => {
      claimed = true;
      return j;
    });
    await settle(20);
    expect(claimed).toBe(false);
    releaseAll();
    await wake;
    const job = await claim;
    expect(new TextDecoder().decode(job!.attached!)).toBe("signal");
    await queue.close();
  });
});
