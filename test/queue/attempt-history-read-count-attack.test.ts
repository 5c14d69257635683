/**
 * @module Attack on reading a job's attempt history whose stored count of
 * dropped entries is damaged, before any write mends it: `view()` and a
 * `QueueReader` give the count only when it is one (a whole number from 1
 * to 2^53 - 1, on the oldest entry), as the next write reads it, and leave
 * anything else out; the rest of each entry reads as stored. An entry
 * that is no attempt (null, a number, an attempt or time that is no
 * number) is left out, and an optional field of another kind than its own.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, MockClock, Queue, QueueReader, WriteBatch, type JobAttempt } from "taquba";
import { historyKey } from "../../runtime/queue/keys.js";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { ENGINE_PREFIX } from "../../runtime/queue/queue.js";

const T0 = Date.parse("2026-03-02T10:00:00Z");
const quiet = { error: () => undefined, warn: () => undefined };
const packr = new Packr({ useRecords: false });

const entry = (i: number): JobAttempt => ({ attempt: 1, recordedAt: T0 + i, outcome: "requeued" });

const DAMAGED_COUNTS: ReadonlyArray<readonly [string, unknown]> = [
  ["a count in text", "12"],
  ["a NaN count", Number.NaN],
  ["a negative count", -4],
  ["a zero count", 0],
  ["a fractional count", 2.5],
  ["an infinite count", Number.POSITIVE_INFINITY],
  ["a count past 2^53", 2 ** 53 + 2],
  ["a count as a list", [3]],
  ["a null count", null],
];

/** Queue "app" over `store` whose one job's stored history is `list`, written under the queue; the job's id. */
async function storeWithHistory(store: MemoryStore, list: readonly unknown[]): Promise<string> {
  const first = await Queue.open(store, "app", { clock: new MockClock(T0), logger: quiet });
  const { jobId } = await first.enqueue("mail", new Uint8Array([1]));
  await first.close();
  const engine = await Engine.open(new PrefixedStore(new PrefixedStore(store, "app/"), ENGINE_PREFIX));
  await engine.commit(new WriteBatch().put(historyKey(jobId), packr.pack(list)));
  await engine.close();
  return jobId;
}

async function readBoth(store: MemoryStore, jobId: string): Promise<JobAttempt[][]> {
  const queue = await Queue.open(store, "app", { clock: new MockClock(T0), logger: quiet });
  const reader = await QueueReader.open(store, "app");
  try {
    return [await queue.view().attemptHistory(jobId), await reader.attemptHistory(jobId)];
  } finally {
    await reader.close();
    await queue.close();
  }
}

describe("an attempt history read with a damaged count", () => {
  for (const [what, count] of DAMAGED_COUNTS) {
    it(`${what} on the oldest entry is read as none, the entries as stored`, async () => {
      const store = new MemoryStore();
      const list = [{ ...entry(0), earlierDropped: count }, entry(1), entry(2)];
      const jobId = await storeWithHistory(store, list);
      for (const read of await readBoth(store, jobId)) {
        expect(read).toEqual([entry(0), entry(1), entry(2)]);
        expect(Object.hasOwn(read[0]!, "earlierDropped")).toBe(false);
      }
    });
  }

  it("a count on a later entry, which nothing counts, is left out; a good count on the oldest is kept", async () => {
    const store = new MemoryStore();
    const jobId = await storeWithHistory(store, [{ ...entry(0), earlierDropped: 40 }, { ...entry(1), earlierDropped: 7 }, entry(2)]);
    for (const read of await readBoth(store, jobId)) expect(read).toEqual([{ ...entry(0), earlierDropped: 40 }, entry(1), entry(2)]);
  });

  it("the greatest exact count is read as stored", async () => {
    const store = new MemoryStore();
    const jobId = await storeWithHistory(store, [{ ...entry(0), earlierDropped: Number.MAX_SAFE_INTEGER }, entry(1)]);
    for (const read of await readBoth(store, jobId)) expect(read[0]!.earlierDropped).toBe(Number.MAX_SAFE_INTEGER);
  });

  const NO_ENTRIES: ReadonlyArray<readonly [string, unknown]> = [
    ["null", null],
    ["a number", 5],
    ["a text", "requeued"],
    ["a list", [1, 2]],
    ["an entry whose attempt is NaN", { ...entry(9), attempt: Number.NaN }],
    ["an entry whose attempt is negative", { ...entry(9), attempt: -1 }],
    ["an entry whose attempt is text", { ...entry(9), attempt: "2" }],
    ["an entry without its time", { attempt: 1, outcome: "retried" }],
    ["an entry whose time is Infinity", { ...entry(9), recordedAt: Number.POSITIVE_INFINITY }],
    ["an entry whose outcome is a number", { ...entry(9), outcome: 3 }],
  ];
  for (const [what, damaged] of NO_ENTRIES) {
    for (const at of [0, 1, 2]) {
      it(`${what} at entry ${at} is left out; the others read as stored`, async () => {
        const store = new MemoryStore();
        const good = [{ ...entry(0), earlierDropped: 40 }, entry(1)];
        const list: unknown[] = [...good];
        list.splice(at, 0, damaged);
        const jobId = await storeWithHistory(store, list);
        // A good count stays on the entry it was stored on, the first one or not once a damaged first is left out.
        const expected = at === 0 ? [entry(0), entry(1)] : good;
        for (const read of await readBoth(store, jobId)) expect(read).toEqual(expected);
      });
    }
  }

  it("optional fields of another kind are left out, the entry kept", async () => {
    const store = new MemoryStore();
    const jobId = await storeWithHistory(store, [
      { ...entry(0), claimedAt: Number.NaN, error: 7, errorName: null, errorStack: ["x"] },
      { ...entry(1), claimedAt: T0, error: "boom", errorName: "Error", errorStack: "at x" },
    ]);
    for (const read of await readBoth(store, jobId)) {
      expect(read).toEqual([entry(0), { ...entry(1), claimedAt: T0, error: "boom", errorName: "Error", errorStack: "at x" }]);
    }
  });
});
