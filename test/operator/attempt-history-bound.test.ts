/**
 * @module A job's attempt history, as `view().attemptHistory` and the
 * operator's reader show it, keeps its last `JOB_ATTEMPT_HISTORY_LIMIT`
 * entries: a job requeued from the dead letters many times keeps the
 * latest, the oldest kept counting those dropped, across a reopen; a
 * history written before the bound (longer, no count) reads whole and is
 * bounded at its next entry; a run's detail counts the attempts left out.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { Engine, JOB_ATTEMPT_HISTORY_LIMIT, LocalStore, MockClock, Queue, QueueReader, WriteBatch, type JobAttempt } from "taquba";
import { readRunDetail } from "../../operator/inspect/run-detail.js";
import { historyKey } from "../../runtime/queue/keys.js";
import type { QueueReader as Reader } from "../../runtime/queue/reader.js";
import type { WorkflowView } from "../../runtime/workflow/runs/workflow-view.js";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { ENGINE_PREFIX } from "../../runtime/queue/queue.js";
import { scaledForLoad } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-attempt-history-bound-");
const T0 = Date.parse("2026-03-02T10:00:00Z");
const quiet = { error: () => undefined, warn: () => undefined };
const enc = new TextEncoder();
// About 75 commits on a directory store, one after another: 40 rounds took 21 s at load 40 on two cores.
const ROUNDS_TEST_MS = scaledForLoad(30_000);

async function open(dir: string, clock: MockClock): Promise<Queue> {
  return Queue.open(new LocalStore(dir), "app", { clock, logger: quiet });
}

/** Claims job `id` of queue "mail" and dead-letters it with `error`. */
async function deadLetter(queue: Queue, id: string, error: string): Promise<void> {
  const job = (await queue.claim("mail"))!;
  expect(job.id).toBe(id);
  await queue.deadLetter(job, error);
}

const errors = (list: readonly JobAttempt[]) => list.filter((a) => a.outcome === "dead_lettered").map((a) => a.error);

describe("a job's attempt history is bounded", () => {
  it(
    "keeps the last entries of a job requeued many times, the oldest kept counting those dropped, across a reopen",
    async () => {
      expect(JOB_ATTEMPT_HISTORY_LIMIT).toBe(32);
      const dir = await tempDir();
      const clock = new MockClock(T0);
      let queue = await open(dir, clock);
      const { jobId } = await queue.enqueue("mail", enc.encode("x"), { maxAttempts: 1 });
      // Each round adds two entries: the dead letter and the requeue.
      const rounds = 24;
      for (let i = 0; i < rounds; i++) {
        clock.advance(1_000);
        await deadLetter(queue, jobId, `bounce ${i}`);
        expect(await queue.requeueDead(jobId)).toBe(true);
      }
      const check = (list: readonly JobAttempt[], dropped: number, lastError: number) => {
        expect(list).toHaveLength(JOB_ATTEMPT_HISTORY_LIMIT);
        expect(list[0]!.earlierDropped).toBe(dropped);
        expect(list.slice(1).filter((a) => "earlierDropped" in a)).toEqual([]);
        // The latest ones, in order: the dead letters of the last 16 rounds.
        const firstKept = lastError + 1 - JOB_ATTEMPT_HISTORY_LIMIT / 2;
        expect(errors(list)).toEqual(Array.from({ length: JOB_ATTEMPT_HISTORY_LIMIT / 2 }, (_, i) => `bounce ${firstKept + i}`));
        expect(list.map((a) => a.recordedAt)).toEqual([...list.map((a) => a.recordedAt)].sort((a, b) => a - b));
      };
      const written = await queue.view().attemptHistory(jobId);
      check(written, 2 * rounds - JOB_ATTEMPT_HISTORY_LIMIT, rounds - 1);
      expect(written.at(-1)!.outcome).toBe("requeued");
      await queue.close();

      // Another process's reader sees the same, and the owner reopened keeps counting.
      const reader = await QueueReader.open(new LocalStore(dir), "app");
      try {
        expect(await reader.attemptHistory(jobId)).toEqual(written);
      } finally {
        await reader.close();
      }
      queue = await open(dir, clock);
      try {
        expect(await queue.view().attemptHistory(jobId)).toEqual(written);
        clock.advance(1_000);
        await deadLetter(queue, jobId, `bounce ${rounds}`);
        const after = await queue.view().attemptHistory(jobId);
        // The round's requeue is not there yet: one entry more, one more dropped.
        expect(after.slice(0, -1).map((a) => a.recordedAt)).toEqual(written.slice(1).map((a) => a.recordedAt));
        expect(after[0]!.earlierDropped).toBe(2 * rounds - JOB_ATTEMPT_HISTORY_LIMIT + 1);
        expect(after.at(-1)).toMatchObject({ outcome: "dead_lettered", error: `bounce ${rounds}` });
        expect(await queue.view().job(jobId)).toMatchObject({ state: "dead", requeues: rounds });
      } finally {
        await queue.close();
      }
    },
    ROUNDS_TEST_MS,
  );

  it("reads a history written before the bound whole, and bounds it at its next entry", async () => {
    const dir = await tempDir();
    const clock = new MockClock(T0);
    const queue = await open(dir, clock);
    const { jobId } = await queue.enqueue("mail", enc.encode("x"), { maxAttempts: 1 });
    await queue.close();
    // As the version before the bound wrote it: a plain list of 50 entries, no count.
    const old: JobAttempt[] = Array.from({ length: 50 }, (_, i) => ({
      attempt: 1,
      claimedAt: T0 + i,
      recordedAt: T0 + i,
      outcome: i % 2 === 0 ? "dead_lettered" : "requeued",
      ...(i % 2 === 0 ? { error: `old ${i}` } : {}),
    }));
    const engine = await Engine.open(new PrefixedStore(new PrefixedStore(new LocalStore(dir), "app/"), ENGINE_PREFIX));
    await engine.commit(new WriteBatch().put(historyKey(jobId), new Packr({ useRecords: false }).pack(old)));
    await engine.close();

    const reopened = await open(dir, clock);
    try {
      expect(await reopened.view().attemptHistory(jobId)).toEqual(old);
      clock.advance(1_000);
      await deadLetter(reopened, jobId, "new");
      const after = await reopened.view().attemptHistory(jobId);
      expect(after).toHaveLength(JOB_ATTEMPT_HISTORY_LIMIT);
      expect(after[0]).toEqual({ ...old[51 - JOB_ATTEMPT_HISTORY_LIMIT]!, earlierDropped: 51 - JOB_ATTEMPT_HISTORY_LIMIT });
      expect(after.slice(1, -1)).toEqual(old.slice(52 - JOB_ATTEMPT_HISTORY_LIMIT));
      expect(after.at(-1)).toMatchObject({ outcome: "dead_lettered", error: "new" });
    } finally {
      await reopened.close();
    }
  });

  it("a run's step job whose history was bounded shows the attempts left out", async () => {
    const history = (earlierDropped?: number): JobAttempt[] => [
      { attempt: 1, recordedAt: T0, outcome: "requeued", ...(earlierDropped === undefined ? {} : { earlierDropped }) },
      { attempt: 1, recordedAt: T0 + 1, outcome: "retried", error: "boom" },
    ];
    // Only what `readRunDetail` reads of an active run: its records, its step job and that job's history.
    const view = {
      records: async () => ({ kind: "active", run: { submittedAtMs: T0, headers: {} }, pointer: { jobId: "J1", step: 3 }, runBytes: new Uint8Array() }),
    } as unknown as WorkflowView;
    const reader = (list: JobAttempt[]) => ({ job: async () => null, attemptHistory: async () => list }) as unknown as Reader;
    expect((await readRunDetail(view, reader(history(40)), "order-7"))!.omitted).toEqual({ steps: 0, attempts: 40 });
    expect((await readRunDetail(view, reader(history()), "order-7"))!.omitted).toBeUndefined();
  });
});
