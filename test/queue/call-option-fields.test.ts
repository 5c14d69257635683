/**
 * @module The queue's per-call option objects refuse a field that is none
 * of theirs: enqueue options and their debounce (also staged in a
 * settlement's effects), `enqueueBatch`'s items, `nack`'s,
 * `deadLetter`'s and `waitForCompletion`'s options, and the reads' (`kvScan`, `listJobs`,
 * `deadJobs`). Each names the field and suggests the close name before
 * anything is written (a misspelt `maxAtempts` used to leave the queue's 3
 * attempts in force); spelt right, each is taken.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue, SettlementEffects, withCounting, type CountingStore } from "../../runtime/index.js";
import { refusal } from "../support/refusal.js";

const enc = (s: string) => new TextEncoder().encode(s);

/** Asserts `err` refuses `field` alone and suggests `near`. */
function expectRefused(err: { issues: readonly string[] }, field: string, near: string): void {
  expect(err.issues).toHaveLength(1);
  expect(err.issues[0]).toMatch(new RegExp(`^${field.replace(/\./g, "\\.")} is not an option \\(misspelt\\?\\); the options are .*; did you mean ${near}\\?$`));
}

async function withQueue(act: (queue: Queue, store: CountingStore) => Promise<void>): Promise<void> {
  const store = withCounting(new MemoryStore());
  const queue = await Queue.open(store, "q", { flushIntervalMs: 1 });
  try {
    await act(queue, store);
  } finally {
    await queue.close();
  }
}

describe("the queue's per-call options refuse a field that is no option, writing nothing", () => {
  it("enqueue, its debounce and enqueueBatch's items", () =>
    withQueue(async (queue, store) => {
      store.reset();
      expectRefused(await refusal(() => queue.enqueue("jobs", enc("a"), { maxAtempts: 1 } as never)), "EnqueueOptions.maxAtempts", "maxAttempts");
      expectRefused(
        await refusal(() => queue.enqueue("jobs", enc("a"), { debounce: { key: "k", periodMS: 10 } } as never)),
        "EnqueueOptions.debounce.periodMS",
        "periodMs",
      );
      expectRefused(
        await refusal(() => queue.enqueueBatch([{ queueName: "jobs", payload: enc("a") }, { queueName: "jobs", payload: enc("b"), opt: {} } as never])),
        "enqueueBatch item 1: opt",
        "opts",
      );
      await expect(queue.enqueueBatch([null as never])).rejects.toThrow(/^enqueueBatch item 0 must be an object \{ queueName, payload, opts\? \}, got null$/);
      // A bad value in an item's options is named by the item and by the option's path.
      await expect(
        queue.enqueueBatch([
          { queueName: "jobs", payload: enc("a") },
          { queueName: "jobs", payload: enc("b"), opts: { headers: { t: 5 as never } } },
        ]),
      ).rejects.toThrow(/^enqueueBatch item 1: header "t" in EnqueueOptions\.headers /);
      await expect(queue.enqueueBatch([{ queueName: "jobs", payload: enc("a"), opts: { priority: 1.5 } }])).rejects.toThrow(
        /^enqueueBatch item 0: EnqueueOptions\.priority must be an integer from 0 to \d+ \(lower is claimed first\), got 1\.5$/,
      );
      await expect(queue.enqueue("jobs", enc("a"), { priority: Number.NaN })).rejects.toThrow(/^EnqueueOptions\.priority must be an integer/);
      expect(() => new SettlementEffects().enqueue("jobs", enc("a"), { priorty: 1 } as never)).toThrow(/EnqueueOptions\.priorty is not an option/);
      expect(store.counts.puts).toBe(0);
      expect(await queue.view().stats("jobs")).toMatchObject({ pending: 0, scheduled: 0 });
      // Spelt right: taken, and the attempts are the job's own.
      const { jobId } = await queue.enqueue("jobs", enc("a"), { maxAttempts: 1 });
      expect(await queue.view().job(jobId)).toMatchObject({ maxAttempts: 1 });
      await queue.enqueueBatch([{ queueName: "jobs", payload: enc("b"), opts: { priority: 1 } }]);
      expect(await queue.view().stats("jobs")).toMatchObject({ pending: 2 });
    }));

  it("nack, deadLetter and waitForCompletion: refused, the claim still held and its attempt not counted", () =>
    withQueue(async (queue) => {
      await queue.enqueue("jobs", enc("a"), { maxAttempts: 5 });
      const job = (await queue.claim("jobs"))!;
      expectRefused(await refusal(() => queue.nack(job, "boom", undefined, { retryAfterMS: 10 } as never)), "NackOptions.retryAfterMS", "retryAfterMs");
      expectRefused(await refusal(() => queue.deadLetter(job, "boom", undefined, { caus: 1 } as never)), "DeadLetterOptions.caus", "cause");
      await expect(queue.nack(job, "boom", undefined, null as never)).rejects.toThrow(/^NackOptions must be an object, got null$/);
      await expect(queue.deadLetter(job, "boom", undefined, 5 as never)).rejects.toThrow(/^DeadLetterOptions must be an object, got 5$/);
      expect(await queue.view().stats("jobs")).toMatchObject({ claimed: 1, dead: 0 });
      expect(await queue.view().attemptHistory(job.id)).toEqual([]);
      // A misspelt timeout would wait for ever: refused at once instead.
      expectRefused(await refusal(() => queue.waitForCompletion(job.id, { timeoutMS: 5 } as never)), "waitForCompletion's options.timeoutMS", "timeoutMs");
      await expect(queue.nack(job, "boom", undefined, { retryAfterMs: 10 })).resolves.toMatchObject({ kind: "retried" });
      expect(await queue.view().stats("jobs")).toMatchObject({ claimed: 0, scheduled: 1 });
    }));

  it("kvScan, listJobs and deadJobs", () =>
    withQueue(async (queue) => {
      await queue.kvPut("a/1", enc("x"));
      await queue.enqueue("jobs", enc("a"));
      expectRefused(await refusal(() => queue.kvScan("a/", { limt: 1 } as never)), "KvScanOptions.limt", "limit");
      expectRefused(await refusal(() => queue.view().kvScan("a/", { aftr: "a/0" } as never)), "KvScanOptions.aftr", "after");
      expectRefused(await refusal(() => queue.view().listJobs("jobs", "pending", { curser: "x" } as never)), "ListJobsOptions.curser", "cursor");
      expectRefused(await refusal(() => queue.view().deadJobs("jobs", { limti: 1 } as never)), "deadJobs' options.limti", "limit");
      expect((await queue.kvScan("a/", { limit: 1 })).entries).toHaveLength(1);
      expect((await queue.view().listJobs("jobs", "pending", { limit: 1 })).items).toHaveLength(1);
      expect(await queue.view().deadJobs("jobs", { limit: 1 })).toEqual([]);
    }));
});
