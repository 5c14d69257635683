/**
 * @module Clocks that read in fractions of a millisecond, or no time at all:
 * times are stored as whole milliseconds (job ids, records, rate windows),
 * so the SDK reads an application's clock in whole milliseconds, and
 * refuses a clock or a mock time that is no time, before anything durable.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue, QueueReader, ValidationError, type Clock } from "taquba";

const enc = (s: string) => new TextEncoder().encode(s);

/** A clock like one built on `performance.now()`: fractional milliseconds, moved by hand. */
class FractionalClock implements Clock {
  t = 1_700_000_000_000.375;
  now(): number {
    return this.t;
  }
}

async function objectCount(store: MemoryStore): Promise<number> {
  let n = 0;
  for await (const _ of store.list("")) n++;
  return n;
}

describe("an application clock reading fractions of a millisecond", () => {
  it("enqueues, claims and keeps rate windows across a restart as with whole milliseconds", async () => {
    const store = new MemoryStore();
    const clock = new FractionalClock();
    const opts = { clock, flushIntervalMs: 0, queueConfigs: { own: { rateLimit: { limit: 2, periodMs: 1000 } } } };
    let queue = await Queue.open(store, "q", opts);
    for (let i = 0; i < 6; i++) await queue.enqueue("own", enc(`j${i}`), { runAt: clock.now() + 0.5 });
    clock.t += 1.25;
    const claimed = await queue.claimBatch("own", 5);
    expect(claimed).toHaveLength(2);
    for (const j of claimed) await queue.ack(j);
    await queue.flush();
    // A reader in another process reads the durable window: the rate limit holds the rest back.
    const reader = await QueueReader.open(store, "q", { clock });
    const pending = (await reader.listJobs("own", "pending")).items;
    expect(pending).toHaveLength(4);
    expect((await reader.job(pending[0]!.id))?.waiting).toMatchObject({ reason: "rate_limit", limit: 2 });
    await reader.close();
    await queue.close();
    // A restarted owner within the period still counts both claims, and claims again once it passed.
    clock.t += 500.5;
    queue = await Queue.open(store, "q", opts);
    expect(await queue.claimBatch("own", 5)).toEqual([]);
    clock.t += 500;
    expect(await queue.claimBatch("own", 5)).toHaveLength(2);
    await queue.close();
  });

  it("a clock reading NaN, Infinity or a negative time is refused at open with ValidationError, before anything is written", async () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, -1, 1e30]) {
      const store = new MemoryStore();
      const clock: Clock = { now: () => bad };
      const err = await Queue.open(store, "q", { clock, flushIntervalMs: 0 }).catch((e: unknown) => e);
      expect(err, String(bad)).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toContain("now()");
      expect(await objectCount(store)).toBe(0);
    }
  });
});

describe("MockClock", () => {
  it("takes whole milliseconds only: fractions, NaN and Infinity are refused and leave the time as it was", () => {
    for (const bad of [0.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1e30]) {
      expect(() => new MockClock(bad), String(bad)).toThrow(ValidationError);
      const clock = new MockClock(1000);
      expect(() => clock.set(bad), String(bad)).toThrow(ValidationError);
      expect(() => clock.advance(bad), String(bad)).toThrow(ValidationError);
      expect(clock.now()).toBe(1000);
    }
    const clock = new MockClock(8.64e15 - 1);
    expect(() => clock.advance(2)).toThrow(ValidationError);
    expect(clock.now()).toBe(8.64e15 - 1);
  });
});
