/**
 * @module Attack on the durable rate windows: an owner restarted within a
 * period never lets a key exceed its rate limit, also when the window held
 * more claims than its record keeps times for, and when restarts come at
 * random points between claims.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue } from "taquba";
import { testRandom } from "../support/seed.js";

const enc = (s: string) => new TextEncoder().encode(s);

describe("attack: rate windows across a restart", () => {
  it("a window with more claims than its record keeps times for: the restarted owner still counts all of them", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_000_000);
    const opts = { clock, flushIntervalMs: 0, queueConfigs: { own: { rateLimit: { limit: 100, periodMs: 60_000 } } } };
    let queue = await Queue.open(store, "q", opts);
    for (let i = 0; i < 200; i++) await queue.enqueue("own", enc(`j${i}`));
    let claimed = 0;
    for (let i = 0; i < 60; i++) {
      for (const j of await queue.claimBatch("own", 1)) {
        claimed++;
        await queue.ack(j);
      }
      clock.advance(10);
    }
    expect(claimed).toBe(60);
    await queue.close();
    clock.advance(1000);
    queue = await Queue.open(store, "q", opts);
    // Still within the period of every claim above: 40 more at most.
    let after = 0;
    for (let round = 0; round < 5; round++) {
      for (const j of await queue.claimBatch("own", 50)) {
        after++;
        await queue.ack(j);
      }
      clock.advance(100);
    }
    expect(claimed + after, "claims within one period of limit 100").toBeLessThanOrEqual(100);
    expect(after, "the restarted owner uses what is left of the window").toBe(40);
    await queue.close();
  });
});

describe("attack: a rate limit changed across a restart", () => {
  it("lowered: the claims of the previous owner's period still count under the new limit", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_000_000);
    const withLimit = (limit: number) => ({ clock, flushIntervalMs: 0, queueConfigs: { own: { rateLimit: { limit, periodMs: 60_000 } } } });
    let queue = await Queue.open(store, "q", withLimit(10));
    for (let i = 0; i < 30; i++) await queue.enqueue("own", enc(`j${i}`));
    for (const j of await queue.claimBatch("own", 50)) await queue.ack(j);
    await queue.close();
    clock.advance(1000);
    // Lowered to 5 a minute: 10 claims in the last second already exceed it.
    queue = await Queue.open(store, "q", withLimit(5));
    expect(await queue.claimBatch("own", 50), "claims under the lowered limit within the period").toEqual([]);
    clock.advance(59_000);
    expect((await queue.claimBatch("own", 50)).length, "once the previous claims left the period").toBe(5);
    await queue.close();
  });

  it("raised: the restarted owner allows what the new limit leaves", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_000_000);
    const withLimit = (limit: number) => ({ clock, flushIntervalMs: 0, queueConfigs: { own: { rateLimit: { limit, periodMs: 60_000 } } } });
    let queue = await Queue.open(store, "q", withLimit(3));
    for (let i = 0; i < 30; i++) await queue.enqueue("own", enc(`j${i}`));
    for (const j of await queue.claimBatch("own", 50)) await queue.ack(j);
    await queue.close();
    clock.advance(1000);
    queue = await Queue.open(store, "q", withLimit(8));
    expect((await queue.claimBatch("own", 50)).length).toBe(5);
    await queue.close();
  });
});
