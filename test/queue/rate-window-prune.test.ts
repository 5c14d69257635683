/**
 * @module Rate windows of many keys: the owning process drops the windows of
 * keys seen once when it tracks 10000 keys, and must drop only windows
 * that ended under their own period. Keys of a limit with a long period
 * (one claim an hour) must not be forgotten because a limit with a short
 * period (another queue's, or a flow rule's) added a key.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue } from "taquba";
import { HEAVY_TEST_MS } from "../support/load.js";

const enc = (s: string) => new TextEncoder().encode(s);
const HOUR = 3_600_000;

describe("rate windows past 10000 keys", () => {
  it("keep a long window when a short limit's new key prunes", { timeout: HEAVY_TEST_MS }, async () => {
    const clock = new MockClock(5_000_000);
    const queue = await Queue.open(new MemoryStore(), "q", {
      clock,
      flushIntervalMs: 0,
      queueConfigs: {
        slow: { leaseMs: 10 * HOUR, rateLimit: { limit: 1, periodMs: HOUR, key: "{t}" } },
        fast: { leaseMs: 10 * HOUR, rateLimit: { limit: 1, periodMs: 1, key: "{t}" } },
      },
    });
    try {
      await queue.enqueue("slow", enc("first"), { headers: { t: "a" } });
      expect(await queue.claim("slow")).not.toBeNull();
      // 10000 keys of the fast limit, each claimed once.
      for (let b = 0; b < 20; b++) {
        await queue.enqueueBatch(Array.from({ length: 500 }, (_, i) => ({ queueName: "fast", payload: enc(""), opts: { headers: { t: `k${b * 500 + i}` } } })));
        expect(await queue.claimBatch("fast", 500)).toHaveLength(500);
      }
      clock.advance(10);
      // One more fast key: the windows are pruned.
      await queue.enqueue("fast", enc(""), { headers: { t: "last" } });
      expect(await queue.claim("fast")).not.toBeNull();
      // Ten ms into the slow key's hour: its limit still holds.
      await queue.enqueue("slow", enc("second"), { headers: { t: "a" } });
      expect(await queue.claim("slow"), "a second claim of the key within its hour").toBeNull();
      clock.advance(HOUR);
      expect(await queue.claim("slow")).not.toBeNull();
    } finally {
      await queue.close();
    }
  });
});
