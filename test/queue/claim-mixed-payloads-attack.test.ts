/**
 * @module A claim of jobs some of whose payloads are inline and some in
 * objects of their own (the claim then waits for their reads, where one of
 * inline payloads alone hands its jobs out in its own turn): a payload
 * object gone dead-letters its job alone and hands out the others with
 * their own payloads; reads that fail put every job back, attempts
 * uncounted; a close while the reads wait ends the claim with ClosedError
 * and leaves every job pending.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, MemoryStore, Queue, type ObjectStore } from "taquba";
import { failWhen } from "../support/failing-store.js";

/** Offloaded past 16 bytes: even jobs get 64-byte payloads (objects of their own), odd ones 4 bytes (inline). */
const OPTIONS = { payloadOffloadBytes: 16, flushIntervalMs: 0 };
const payloadOf = (i: number) => new Uint8Array(i % 2 === 0 ? 64 : 4).fill(i + 1);
const JOBS = 6;

async function filled(store: ObjectStore): Promise<void> {
  const queue = await Queue.open(store, "q", OPTIONS);
  try {
    await queue.enqueueBatch(Array.from({ length: JOBS }, (_, i) => ({ queueName: "jobs", payload: payloadOf(i), opts: { maxAttempts: 1 } })));
  } finally {
    await queue.close();
  }
}

async function payloadKeys(store: ObjectStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.list("q/payloads/")) keys.push(o.key);
  return keys;
}

describe("a claim of inline and offloaded payloads together", () => {
  it("a payload object gone dead-letters its job alone; every other job is handed out once with its own payload", async () => {
    const store = new MemoryStore();
    await filled(store);
    const objects = await payloadKeys(store);
    expect(objects).toHaveLength(JOBS / 2);
    await store.delete(objects[1]!);
    const queue = await Queue.open(store, "q", OPTIONS);
    try {
      const jobs = await queue.claimBatch("jobs", JOBS);
      expect(jobs).toHaveLength(JOBS - 1);
      for (const j of jobs) {
        const i = j.payload[0]! - 1;
        expect(j.payload, `job ${i}`).toEqual(payloadOf(i));
      }
      expect(await queue.view().stats("jobs")).toMatchObject({ pending: 0, claimed: JOBS - 1, dead: 1 });
      expect(await queue.claimBatch("jobs", JOBS)).toEqual([]);
    } finally {
      await queue.close();
    }
  });

  it("reads of the payload objects that fail put every job back, attempts uncounted, and the next claim hands them all out", async () => {
    const inner = new MemoryStore();
    await filled(inner);
    let failing = false;
    const store = failWhen(inner, (call, key) =>
      failing && call === "get" && key.includes("/payloads/") ? new Error(`injected: get of ${key} failed`) : undefined,
    );
    const queue = await Queue.open(store, "q", { ...OPTIONS, engineOptions: { retry: { attempts: 1 } } });
    try {
      failing = true;
      await expect(queue.claimBatch("jobs", JOBS)).rejects.toThrow();
      failing = false;
      expect(await queue.view().stats("jobs")).toMatchObject({ pending: JOBS, claimed: 0, dead: 0 });
      const jobs = await queue.claimBatch("jobs", JOBS);
      expect(jobs.map((j) => j.attempt)).toEqual(Array(JOBS).fill(1));
      expect(jobs.map((j) => j.payload[0]! - 1).sort()).toEqual([0, 1, 2, 3, 4, 5]);
      for (const j of jobs) expect(j.payload).toEqual(payloadOf(j.payload[0]! - 1));
    } finally {
      await queue.close();
    }
  });

  it("a close while the claim waits for its payload reads ends it with ClosedError; a reopen finds every job pending, attempt uncounted", async () => {
    const inner = new MemoryStore();
    await filled(inner);
    let hold: Promise<void> | undefined;
    let release: () => void = () => {};
    let held = 0;
    const store: ObjectStore = {
      ...inner,
      get: async (k) => {
        if (hold !== undefined && k.includes("/payloads/")) {
          held++;
          await hold;
        }
        return inner.get(k);
      },
      put: (k, b, o) => inner.put(k, b, o),
      delete: (k) => inner.delete(k),
      list: (p, o) => inner.list(p, o),
    };
    const queue = await Queue.open(store, "q", OPTIONS);
    hold = new Promise<void>((r) => (release = r));
    const claiming = queue.claimBatch("jobs", JOBS).then(
      (jobs) => jobs,
      (e: unknown) => e,
    );
    while (held === 0) await new Promise<void>((r) => setImmediate(r));
    const closing = queue.close();
    release();
    expect(await claiming).toBeInstanceOf(ClosedError);
    await closing;
    const reopened = await Queue.open(inner, "q", OPTIONS);
    try {
      // One attempt allowed: a claim handed out during the close would dead-letter its job at the reopen's recovery.
      expect(await reopened.view().stats("jobs")).toMatchObject({ pending: JOBS, claimed: 0, dead: 0 });
      expect((await reopened.claimBatch("jobs", JOBS)).map((j) => j.attempt)).toEqual(Array(JOBS).fill(1));
    } finally {
      await reopened.close();
    }
  });
});
