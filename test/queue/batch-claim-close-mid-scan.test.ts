/**
 * @module A batch claim that set a damaged job aside and claimed a good one
 * in its first commit, then scans again and loads a paged-out record for
 * its second scan, while the queue closes (or the load fails). The claims
 * of the first commit are given back, their attempts uncounted: the close
 * waits for that, so the next open finds nothing claimed to recover and
 * the job runs as its first attempt. Before, they stayed claimed by no one
 * until the next open's recovery, which counted their attempt.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, MemoryStore, MockClock, type OpenOptions, Queue, type StoredObject, WriteBatch } from "taquba";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import { jobKey } from "../../runtime/queue/keys.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { ForwardingStore } from "../support/forwarding-store.js";
import { until } from "../support/until.js";
import { counted, recount } from "./stats-recount.js";
import { enc, settle } from "./helpers.js";

/** Holds every read while `holding`, until `open()`; every read fails while `failing`. */
class HeldReads extends ForwardingStore {
  holding = false;
  failing = false;
  readonly #held: (() => void)[] = [];

  get heldCount(): number {
    return this.#held.length;
  }

  override async get(key: string): Promise<StoredObject | null> {
    if (this.holding) await new Promise<void>((r) => this.#held.push(r));
    if (this.failing) throw new Error("the store is unreachable");
    return this.inner.get(key);
  }

  open(): void {
    this.holding = false;
    for (const r of this.#held.splice(0)) r();
  }
}

const body = (s: string) => enc(s.padEnd(300, "."));

/** A queue whose job "later" (a worse priority) is only in the store's segments, and "victim" (damaged) and "good" ahead of it in memory. */
async function prepared(store: HeldReads, opts: OpenOptions) {
  const coreOf = async (q: Queue) => {
    await q.enqueue("h", enc("handle"));
    const handle = (await q.claim("h"))!;
    await q.ack(handle);
    return ticketOf(handle)!.owner as QueueCore;
  };
  const first = await Queue.open(store, "q", opts);
  await first.enqueue("w", body("later"), { jobId: "later", priority: 2000 });
  await (await coreOf(first)).engine.checkpoint();
  await first.close();
  const queue = await Queue.open(store, "q", opts);
  const core = await coreOf(queue);
  await queue.enqueue("w", body("victim"), { jobId: "victim", priority: 0 });
  await queue.enqueue("w", body("good"), { jobId: "good", priority: 0 });
  await core.engine.commit(new WriteBatch().put(jobKey("victim"), core.engine.get(jobKey("victim"))!.subarray(0, 3)));
  return { queue, core };
}

describe("a batch claim whose second scan loads a paged-out record", () => {
  const opts = (): OpenOptions => ({
    clock: new MockClock(1_764_000_000_000),
    flushIntervalMs: 0,
    recordCacheBytes: 0,
    engineOptions: { checkpointWalObjects: 1000, segmentBlockBytes: 256 },
  });

  it("gives back its first commit's claims when the queue closes meanwhile, and the close waits for that", async () => {
    const store = new HeldReads(new MemoryStore());
    const { queue } = await prepared(store, opts());
    store.holding = true;
    const claiming = queue.claimBatch("w", 2).then(
      (jobs) => jobs,
      (e: unknown) => e,
    );
    await until("the second scan loads a record", async () => store.heldCount > 0);
    const closing = queue.close();
    await settle();
    store.open();
    expect(await claiming).toBeInstanceOf(ClosedError);
    await closing;
    const reopened = await Queue.open(store, "q", opts());
    try {
      expect(reopened.recovery.requeued).toEqual([]);
      expect(await reopened.view().stats("w")).toMatchObject({ pending: 2, claimed: 0, dead: 1 });
      const jobs = await reopened.claimBatch("w", 2);
      expect(jobs.map((j) => [j.id, j.attempt])).toEqual([
        ["good", 1],
        ["later", 1],
      ]);
      for (const j of jobs) await reopened.ack(j);
    } finally {
      await reopened.close();
    }
  });

  it("gives back its first commit's claims when that load fails, and rejects with the load's error", async () => {
    const store = new HeldReads(new MemoryStore());
    const { queue, core } = await prepared(store, opts());
    try {
      store.holding = true;
      store.failing = true;
      const claiming = queue.claimBatch("w", 2).then(
        (jobs) => jobs,
        (e: unknown) => e,
      );
      await until("the second scan loads a record", async () => store.heldCount > 0);
      store.failing = true;
      store.open();
      const err = await claiming;
      expect(err).toBeInstanceOf(Error);
      expect(err).not.toBeInstanceOf(ClosedError);
      store.failing = false;
      expect(await queue.view().stats("w")).toMatchObject({ pending: 2, claimed: 0, dead: 1 });
      expect(counted(await queue.view().stats("w"))).toEqual(recount(core.engine, "w"));
      const jobs = await queue.claimBatch("w", 2);
      expect(jobs.map((j) => [j.id, j.attempt])).toEqual([
        ["good", 1],
        ["later", 1],
      ]);
    } finally {
      store.open();
      await queue.close();
    }
  });
});
