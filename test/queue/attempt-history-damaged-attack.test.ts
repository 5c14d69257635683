/**
 * @module A job's stored attempt history whose count of dropped entries is
 * damaged (text, NaN, negative, past exact integers) or whose oldest entry
 * is no entry at all (null, a number): the job's next failure still
 * settles, the history stays bounded, and the count it carries on is a
 * count, never the damaged value nor a TypeError from the reader.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { Engine, JOB_ATTEMPT_HISTORY_LIMIT, MemoryStore, MockClock, Queue, WriteBatch, type JobAttempt } from "taquba";
import { boundedHistory, droppedBefore } from "../../runtime/queue/attempt-history.js";
import { historyKey } from "../../runtime/queue/keys.js";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { ENGINE_PREFIX } from "../../runtime/queue/queue.js";

const T0 = Date.parse("2026-03-02T10:00:00Z");
const quiet = { error: () => undefined, warn: () => undefined };
const packr = new Packr({ useRecords: false });

const entry = (i: number): JobAttempt => ({ attempt: 1, recordedAt: T0 + i, outcome: "requeued" });
const withCount = (earlierDropped: unknown) => ({ ...entry(0), earlierDropped }) as unknown as JobAttempt;

/** Oldest entries as a damaged store may hold them. */
const DAMAGED_FIRSTS: ReadonlyArray<readonly [string, unknown]> = [
  ["a count in text", withCount("12")],
  ["a NaN count", withCount(Number.NaN)],
  ["a negative count", withCount(-4)],
  ["a fractional count", withCount(2.5)],
  ["an infinite count", withCount(Number.POSITIVE_INFINITY)],
  ["a null entry", null],
  ["a number for an entry", 5],
  ["a text for an entry", "requeued"],
];

/** A queue "app" whose job's history holds `list`, as a damaged store would. */
async function queueWithHistory(list: readonly unknown[]): Promise<{ queue: Queue; jobId: string; store: MemoryStore; clock: MockClock }> {
  const store = new MemoryStore();
  const clock = new MockClock(T0);
  const first = await Queue.open(store, "app", { clock, logger: quiet });
  const { jobId } = await first.enqueue("mail", new Uint8Array([1]), { maxAttempts: 1 });
  await first.close();
  const engine = await Engine.open(new PrefixedStore(new PrefixedStore(store, "app/"), ENGINE_PREFIX));
  await engine.commit(new WriteBatch().put(historyKey(jobId), packr.pack(list)));
  await engine.close();
  return { queue: await Queue.open(store, "app", { clock, logger: quiet }), jobId, store, clock };
}

const isCount = (n: unknown) => typeof n === "number" && Number.isSafeInteger(n) && n > 0;

describe("an attempt history whose stored count is damaged", () => {
  for (const [what, first] of DAMAGED_FIRSTS) {
    for (const length of [3, JOB_ATTEMPT_HISTORY_LIMIT, JOB_ATTEMPT_HISTORY_LIMIT + 8]) {
      it(`with ${what} and ${length} entries: the next failure settles and the count carried on is a count`, async () => {
        const list = [first, ...Array.from({ length: length - 1 }, (_, i) => entry(i + 1))];
        const { queue, jobId } = await queueWithHistory(list);
        try {
          expect(droppedBefore(list as JobAttempt[])).toBe(0);
          const job = (await queue.claim("mail"))!;
          expect(job.id).toBe(jobId);
          await queue.deadLetter(job, "boom");
          expect(await queue.view().job(jobId)).toMatchObject({ state: "dead" });
          const after = await queue.view().attemptHistory(jobId);
          // An oldest entry that is no attempt, still stored when nothing was cut, is left out of what is read.
          const noEntry = first === null || typeof first !== "object";
          expect(after.length).toBe(Math.min(length + 1, JOB_ATTEMPT_HISTORY_LIMIT) - (noEntry && length + 1 <= JOB_ATTEMPT_HISTORY_LIMIT ? 1 : 0));
          expect(after.at(-1)).toMatchObject({ outcome: "dead_lettered", error: "boom" });
          const dropped = length + 1 - JOB_ATTEMPT_HISTORY_LIMIT;
          if (dropped > 0) expect(after[0]!.earlierDropped).toBe(dropped);
          // A damaged count is not carried into what is written: the field is a count or absent.
          else if (after[0] !== null && typeof after[0] === "object" && "earlierDropped" in after[0]) expect(isCount(after[0].earlierDropped)).toBe(true);
          expect(droppedBefore(after)).toBe(Math.max(dropped, 0));
          // Requeued and failed again: the count keeps counting from there.
          expect(await queue.requeueDead(jobId)).toBe(true);
          const again = (await queue.claim("mail"))!;
          await queue.deadLetter(again, "boom again");
          const last = await queue.view().attemptHistory(jobId);
          expect(droppedBefore(last)).toBe(Math.max(length + 3 - JOB_ATTEMPT_HISTORY_LIMIT, 0));
        } finally {
          await queue.close();
        }
      });
    }
  }

  it("a count at the greatest exact integer stays exact at the next trim instead of falling back to the entries just cut", () => {
    const list = [withCount(Number.MAX_SAFE_INTEGER), ...Array.from({ length: JOB_ATTEMPT_HISTORY_LIMIT }, (_, i) => entry(i + 1))];
    const bounded = boundedHistory(list);
    expect(bounded).toHaveLength(JOB_ATTEMPT_HISTORY_LIMIT);
    expect(bounded[0]!.earlierDropped).toBe(Number.MAX_SAFE_INTEGER);
    expect(droppedBefore(boundedHistory([...bounded, entry(99)]))).toBe(Number.MAX_SAFE_INTEGER);
  });
});
