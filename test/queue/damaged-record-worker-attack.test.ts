/**
 * @module A damaged job record that is the only job of its queue, or every
 * job of it, under a running worker: each is set aside as dead once and
 * the worker then waits without claiming again and again (claims counted
 * over a stretch of real time, not only the outcome). A cancel of a
 * damaged job racing a claim, in both orders: either the cancel removes it
 * or the claim sets it aside, never both nor neither, and the counts
 * agree with the jobs left, also after a reopen.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, MockClock, type ObjectStore, Queue, type QueueStats, runWorker, WriteBatch } from "taquba";
import { jobKey } from "../../runtime/queue/keys.js";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { ENGINE_PREFIX } from "../../runtime/queue/queue.js";
import { until } from "../support/until.js";
import { enc } from "./helpers.js";

const general = new Packr({ useRecords: false, mapsAsObjects: true });
const T0 = 1_764_000_000_000;
const quiet = { error: () => undefined, warn: () => undefined };

const stats = (s: Partial<QueueStats>): QueueStats => ({ pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 0, ...s });

function open(store: ObjectStore, clock: MockClock): Promise<Queue> {
  return Queue.open(store, "q", { clock, logger: quiet });
}

/** Rewrites the records of jobs `ids` with a priority in text, the queue closed. */
async function damage(store: ObjectStore, ids: readonly string[]): Promise<void> {
  const engine = await Engine.open(new PrefixedStore(new PrefixedStore(store, "q/"), ENGINE_PREFIX));
  const batch = new WriteBatch();
  for (const id of ids) {
    const r = general.unpack(engine.get(jobKey(id))!) as Record<string, unknown>;
    r.priority = "high";
    batch.put(jobKey(id), new Uint8Array(general.pack(r)));
  }
  await engine.commit(batch);
  await engine.close();
}

/** A store holding jobs `ids` of queue "w", the records of `damaged` among them damaged. */
async function storeWith(ids: readonly string[], damaged: readonly string[]): Promise<MemoryStore> {
  const store = new MemoryStore();
  const queue = await open(store, new MockClock(T0));
  for (const id of ids) await queue.enqueue("w", enc(`payload of ${id}`), { jobId: id });
  await queue.close();
  await damage(store, damaged);
  return store;
}

/** Counts `Queue.prototype.claimBatch` and `claim` calls of `queue` from now. */
function countClaims(queue: Queue): { count: number } {
  const counted = { count: 0 };
  for (const name of ["claim", "claimBatch"] as const) {
    const real = queue[name].bind(queue) as (...args: unknown[]) => unknown;
    Object.defineProperty(queue, name, {
      value: (...args: unknown[]) => {
        counted.count++;
        return real(...args);
      },
    });
  }
  return counted;
}

/** Waits `ms` of real time: the stretch over which an idle worker's claims are counted. */
const realWait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe("damaged records under a running worker", () => {
  for (const [what, ids, damaged] of [
    ["the only job", ["victim"], ["victim"]],
    ["every job", ["v1", "v2", "v3", "v4"], ["v1", "v2", "v3", "v4"]],
  ] as const) {
    it(`${what} of the queue is set aside once, and the worker then waits without claiming on`, async () => {
      const store = await storeWith(ids, damaged);
      const clock = new MockClock(T0);
      const queue = await open(store, clock);
      const claims = countClaims(queue);
      const stop = new AbortController();
      const processed: string[] = [];
      const errors: unknown[] = [];
      const worker = runWorker(
        queue,
        "w",
        { process: async (job) => void processed.push(job.id) },
        { signal: stop.signal, onError: (e) => void errors.push(e) },
      );
      try {
        await until("every damaged job set aside", async () => (await queue.view().stats("w")).dead === damaged.length);
        const settled = claims.count;
        // The worker claims through the queue: the count sees its calls.
        expect(settled).toBeGreaterThan(0);
        await realWait(300);
        // A worker claiming in a loop makes thousands of calls in this stretch; one waiting makes none (its clock stands still).
        expect(claims.count - settled).toBeLessThanOrEqual(1);
        expect(processed).toEqual([]);
        expect(errors).toEqual([]);
        expect(await queue.view().stats("w")).toEqual(stats({ dead: damaged.length }));
        // A good job enqueued now is still picked up.
        await queue.enqueue("w", enc("fresh"), { jobId: "fresh" });
        await until("the fresh job processed", async () => processed.length === 1);
        expect(processed).toEqual(["fresh"]);
      } finally {
        stop.abort();
        await worker;
        await queue.close();
      }
    });
  }
});

describe("a cancel of a damaged job racing a claim", () => {
  for (const order of ["cancel first", "claim first"] as const) {
    it(`(${order}) either removes it or finds it set aside, and the counts agree with the jobs left, also after a reopen`, async () => {
      const store = await storeWith(["victim", "good"], ["victim"]);
      const clock = new MockClock(T0);
      let queue = await open(store, clock);
      try {
        const cancel = () => queue.cancelJob("victim");
        const claim = () => queue.claim("w", 30_000);
        const [outcome, claimed] =
          order === "cancel first" ? await Promise.all([cancel(), claim()]) : await Promise.all([claim(), cancel()]).then(([c, o]) => [o, c] as const);
        expect(claimed?.id).toBe("good");
        const info = await queue.view().job("victim");
        if (outcome === "removed") {
          expect(info).toBeNull();
          expect(await queue.view().stats("w")).toEqual(stats({ claimed: 1 }));
        } else {
          expect(outcome).toBe("not_found");
          expect(info).toMatchObject({ state: "dead" });
          expect(await queue.view().stats("w")).toEqual(stats({ claimed: 1, dead: 1 }));
          expect((await queue.view().deadJobs("w")).map((j) => j.id)).toEqual(["victim"]);
        }
        await queue.ack(claimed!);
        const before = await queue.view().stats("w");
        await queue.close();
        queue = await open(store, clock);
        expect(await queue.view().stats("w")).toEqual(before);
        expect(await queue.claim("w", 30_000)).toBeNull();
      } finally {
        await queue.close();
      }
    });
  }
});
