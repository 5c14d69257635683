/**
 * @module Debounce: the last enqueue of a key within the window wins; the
 * earlier ones are superseded in the enqueue's own commit, their waiters
 * learn by whom, and all of it survives a crash (a second owner opening
 * the store) and a restart. Time is a `MockClock`.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue, SUPERSEDED_RETENTION_MS, ValidationError, type QueueConfig } from "taquba";

const PERIOD = 1000;
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const quiet = { error: () => undefined, warn: () => undefined };

const open = (store: MemoryStore, clock: MockClock, config: QueueConfig = {}) =>
  Queue.open(store, "q", { clock, flushIntervalMs: 0, logger: quiet, queueConfigs: { jobs: config } });

async function claimAll(queue: Queue): Promise<string[]> {
  const out: string[] = [];
  for (;;) {
    const batch = await queue.claimBatch("jobs", 10);
    if (batch.length === 0) return out;
    for (const j of batch) {
      out.push(dec(j.payload));
      await queue.ack(j);
    }
  }
}

describe("debounce", () => {
  it("keeps the last input of a window, across a crash and a restart, and tells the superseded jobs' waiters", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_000_000);
    let queue = await open(store, clock);
    const debounce = { key: "report:acme", periodMs: PERIOD };
    const a = await queue.enqueue("jobs", enc("a"), { debounce });
    const waitA = queue.waitForCompletion(a.jobId);
    clock.advance(300);
    const b = await queue.enqueue("jobs", enc("b"), { debounce });
    expect(b).toEqual({ jobId: expect.any(String), newlyEnqueued: true, superseded: a.jobId });
    await expect(waitA).resolves.toEqual({ kind: "superseded", by: b.jobId });
    // A job of another key is a window of its own.
    await queue.enqueue("jobs", enc("other"), { debounce: { key: "report:globex", periodMs: PERIOD } });
    expect(await queue.view().job(a.jobId)).toBeNull();
    const shownB = await queue.view().job(b.jobId);
    expect(shownB?.state).toBe("scheduled");
    expect(shownB?.waiting).toEqual({ reason: "debounced", key: "report:acme", until: 1_000_000 + PERIOD });

    // A second owner opens the store without the first closing: the window and the marks are durable.
    queue = await open(store, clock);
    clock.advance(300);
    const c = await queue.enqueue("jobs", enc("c"), { debounce });
    expect(c.superseded).toBe(b.jobId);
    await queue.close();
    queue = await open(store, clock);
    expect(await queue.waitForCompletion(a.jobId)).toEqual({ kind: "superseded", by: b.jobId });
    expect(await queue.waitForCompletion(b.jobId)).toEqual({ kind: "superseded", by: c.jobId });
    // Nothing is claimable before the window ends, measured from the first enqueue.
    expect(await claimAll(queue)).toEqual([]);
    clock.advance(PERIOD - 600 - 1);
    await queue.runMaintenance();
    expect(await claimAll(queue)).toEqual([]);
    clock.advance(1);
    await queue.runMaintenance();
    expect(await claimAll(queue)).toEqual(["c"]);
    // The other key's window opened 300 ms later, and ends so.
    clock.advance(300);
    await queue.runMaintenance();
    expect(await claimAll(queue)).toEqual(["other"]);
    await queue.close();
  });

  it("an enqueue after the window's end opens a new window and leaves the due job to run", async () => {
    const clock = new MockClock(1_000_000);
    const queue = await open(new MemoryStore(), clock);
    const debounce = { key: "k", periodMs: PERIOD };
    await queue.enqueue("jobs", enc("first"), { debounce });
    clock.advance(PERIOD);
    // Due but not yet promoted: its window is over all the same.
    const second = await queue.enqueue("jobs", enc("second"), { debounce });
    expect(second.superseded).toBeUndefined();
    await queue.runMaintenance();
    expect(await claimAll(queue)).toEqual(["first"]);
    clock.advance(PERIOD);
    await queue.runMaintenance();
    expect(await claimAll(queue)).toEqual(["second"]);
    await queue.close();
  });

  it("debounces every enqueue of a queue by a key template over headers (QueueConfig.debounce)", async () => {
    const clock = new MockClock(1_000_000);
    const queue = await open(new MemoryStore(), clock, { debounce: { periodMs: PERIOD, key: "{tenant}" } });
    for (const [tenant, v] of [
      ["acme", "1"],
      ["globex", "2"],
      ["acme", "3"],
      ["acme", "4"],
      ["globex", "5"],
    ] as const) {
      await queue.enqueue("jobs", enc(v), { headers: { tenant } });
      clock.advance(10);
    }
    expect((await queue.view().stats("jobs")).scheduled).toBe(2);
    clock.advance(PERIOD);
    await queue.runMaintenance();
    expect((await claimAll(queue)).sort()).toEqual(["4", "5"]);
    await queue.close();
  });

  it("a claimed job's window is closed: a later enqueue never supersedes work already handed out", async () => {
    const clock = new MockClock(1_000_000);
    const queue = await open(new MemoryStore(), clock);
    const debounce = { key: "k", periodMs: PERIOD };
    const first = await queue.enqueue("jobs", enc("first"), { debounce });
    // A wake makes it pending (and claimable) before the window ends.
    expect(await queue.wakeScheduled("jobs", first.jobId)).toBe(true);
    const job = await queue.claim("jobs");
    expect(job?.id).toBe(first.jobId);
    const second = await queue.enqueue("jobs", enc("second"), { debounce });
    expect(second.superseded).toBeUndefined();
    await queue.ack(job!);
    clock.advance(PERIOD);
    await queue.runMaintenance();
    expect(await claimAll(queue)).toEqual(["second"]);
    await queue.close();
  });

  it("removes a superseded job's mark after its retention", async () => {
    const clock = new MockClock(1_000_000);
    const queue = await open(new MemoryStore(), clock);
    const debounce = { key: "k", periodMs: PERIOD };
    const a = await queue.enqueue("jobs", enc("a"), { debounce });
    await queue.enqueue("jobs", enc("b"), { debounce });
    clock.advance(SUPERSEDED_RETENTION_MS - 1);
    await queue.runMaintenance();
    expect(await queue.waitForCompletion(a.jobId)).toEqual({ kind: "superseded", by: expect.any(String) });
    clock.advance(1);
    await queue.runMaintenance();
    await queue.flush();
    expect(await queue.waitForCompletion(a.jobId)).toEqual({ kind: "gone" });
    await queue.close();
  });

  it("drops a superseded job's mark when its caller id is used again, in the same process and after a restart", async () => {
    for (const restart of [false, true]) {
      const store = new MemoryStore();
      const clock = new MockClock(1_000_000);
      let queue = await open(store, clock);
      // A job of the queue before any mark exists: a caller id then needs no mark dropped.
      await queue.enqueue("other", enc("first"), { jobId: "early" });
      const debounce = { key: "k", periodMs: PERIOD };
      await queue.enqueue("jobs", enc("a"), { jobId: "reused", debounce });
      const b = await queue.enqueue("jobs", enc("b"), { debounce });
      expect(await queue.waitForCompletion("reused")).toEqual({ kind: "superseded", by: b.jobId });
      if (restart) {
        await queue.close();
        queue = await open(store, clock);
      }
      await queue.enqueue("other", enc("again"), { jobId: "reused" });
      for (let j = await queue.claim("other"); j !== null; j = await queue.claim("other")) await queue.ack(j);
      // Done and deleted (no done retention): no record, and no mark saying it was superseded.
      expect(await queue.waitForCompletion("reused")).toEqual({ kind: "gone" });
      await queue.close();
    }
  });

  it("refuses bad debounce options before writing anything", async () => {
    const clock = new MockClock(1_000_000);
    const queue = await open(new MemoryStore(), clock);
    for (const debounce of [{ key: "", periodMs: 10 }, { key: "k", periodMs: 0 }, { key: "k", periodMs: 1.5 }, { key: "k", periodMs: 86_400_001 }, null]) {
      await expect(queue.enqueue("jobs", enc("x"), { debounce: debounce as never }), JSON.stringify(debounce)).rejects.toBeInstanceOf(ValidationError);
    }
    await expect(queue.enqueue("jobs", enc("x"), { debounce: { key: "k", periodMs: 10 }, runAt: 2_000_000 })).rejects.toThrow(/runAt/);
    expect(await queue.view().stats("jobs")).toEqual({ pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 0 });
    await queue.close();
    for (const debounce of [{ periodMs: 0 }, { periodMs: 10, key: "{x" }, { periodMs: Number.NaN }]) {
      await expect(open(new MemoryStore(), clock, { debounce }), JSON.stringify(debounce)).rejects.toBeInstanceOf(ValidationError);
    }
  });

  it("runs exactly the last enqueue of every window, under random enqueues, clock moves and crashes", async () => {
    type Op = { kind: "enqueue"; key: string } | { kind: "advance"; ms: number } | { kind: "crash" };
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      { weight: 5, arbitrary: fc.record({ kind: fc.constant("enqueue" as const), key: fc.constantFrom("x", "y") }) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.constantFrom(1, 250, 999, 1000) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant("crash" as const) }) },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 40 }), async (ops) => {
        const store = new MemoryStore();
        const clock = new MockClock(1_000_000);
        let queue = await open(store, clock);
        // The model: per key, the open window's end and the value waiting in it.
        const windows = new Map<string, { until: number; value: string }>();
        const expected: string[] = [];
        let n = 0;
        for (const op of ops) {
          if (op.kind === "crash") queue = await open(store, clock);
          else if (op.kind === "advance") clock.advance(op.ms);
          else {
            const value = `${op.key}${n++}`;
            const w = windows.get(op.key);
            if (w !== undefined && clock.now() < w.until) w.value = value;
            else {
              if (w !== undefined) expected.push(w.value);
              windows.set(op.key, { until: clock.now() + PERIOD, value });
            }
            await queue.enqueue("jobs", enc(value), { debounce: { key: op.key, periodMs: PERIOD } });
          }
        }
        for (const w of windows.values()) expected.push(w.value);
        clock.advance(PERIOD);
        await queue.runMaintenance();
        expect((await claimAll(queue)).sort()).toEqual(expected.sort());
        await queue.close();
      }),
      { numRuns: 60 },
    );
  });
});
