/**
 * @module Rate limits per key: no more than `limit` claims of a key in any
 * sliding window of `periodMs` under random claims and clock moves; a job
 * held back is claimed by a waiting worker when the window frees, on the
 * clock, without polling.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue, ValidationError, runWorker } from "taquba";
import { until } from "../workflow/helpers.js";

const LIMIT = 3;
const PERIOD = 1000;

const open = (clock: MockClock, extra: object = {}) =>
  Queue.open(new MemoryStore(), "q", {
    clock,
    flushIntervalMs: 0,
    queueConfigs: { jobs: { rateLimit: { limit: LIMIT, periodMs: PERIOD, key: "{tenant}" }, ...extra } },
  });

describe("rate limits", () => {
  it("holds over every sliding window, per key", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({ kind: fc.constant("enqueue" as const), tenant: fc.constantFrom("a", "b"), n: fc.integer({ min: 1, max: 4 }) }),
            fc.record({ kind: fc.constant("claim" as const), max: fc.integer({ min: 1, max: 6 }) }),
            fc.record({ kind: fc.constant("advance" as const), ms: fc.constantFrom(1, 100, 333, 999, 1000, 2500) }),
          ),
          { minLength: 5, maxLength: 50 },
        ),
        async (ops) => {
          const clock = new MockClock(5_000_000);
          const queue = await open(clock, { leaseMs: 60_000 });
          const times: Record<string, number[]> = { a: [], b: [] };
          for (const op of ops) {
            if (op.kind === "enqueue") for (let i = 0; i < op.n; i++) await queue.enqueue("jobs", new Uint8Array([1]), { headers: { tenant: op.tenant } });
            else if (op.kind === "advance") clock.advance(op.ms);
            else {
              const jobs = await queue.claimBatch("jobs", op.max);
              for (const j of jobs) {
                times[j.headers["tenant"]!]!.push(clock.now());
                await queue.ack(j);
              }
            }
          }
          for (const ts of Object.values(times)) {
            for (let i = 0; i + LIMIT < ts.length; i++) expect(ts[i + LIMIT]! - ts[i]!).toBeGreaterThanOrEqual(PERIOD);
          }
          await queue.close();
        },
      ),
      { numRuns: 80 },
    );
  });

  it("a worker held back by the limit claims when the window frees, on the clock", async () => {
    const clock = new MockClock(5_000_000);
    const queue = await open(clock);
    for (let i = 0; i < 5; i++) await queue.enqueue("jobs", new Uint8Array([i]), { headers: { tenant: "a" } });
    await queue.enqueue("jobs", new Uint8Array([9]), { headers: { tenant: "b" } });
    const done: string[] = [];
    const stop = new AbortController();
    const worker = runWorker(queue, "jobs", { process: async (j) => void done.push(j.headers["tenant"]!) }, { concurrency: 4, signal: stop.signal });
    await until(() => done.length === 4, "the first window");
    expect(done.filter((t) => t === "a")).toHaveLength(LIMIT);
    expect(clock.nextDeadline).toBe(5_000_000 + PERIOD);
    clock.advance(PERIOD);
    await until(() => done.length === 6, "the next window");
    stop.abort();
    await worker;
    await queue.close();
  });

  it("refuses absurd periods and limits at open", async () => {
    for (const rateLimit of [
      { limit: 1, periodMs: 0 },
      { limit: 1, periodMs: Number.POSITIVE_INFINITY },
      { limit: 0, periodMs: 10 },
      { limit: 1e30, periodMs: 10 },
      { limit: 1, periodMs: 10, key: "{x" },
    ]) {
      await expect(Queue.open(new MemoryStore(), "q", { queueConfigs: { jobs: { rateLimit } } }), JSON.stringify(rateLimit)).rejects.toBeInstanceOf(
        ValidationError,
      );
    }
  });
});
