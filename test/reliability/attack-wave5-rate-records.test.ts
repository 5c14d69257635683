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

describe("attack: rate windows across random crashes", () => {
  it("owners replaced at random points between claims never let more acknowledged claims through in any period than the limit", {
    timeout: 120_000,
  }, async () => {
    const { seed, random } = testRandom("rate windows across crashes");
    console.log(`rate windows across crashes: seed ${seed} (TAQUBA_TEST_SEED replays it)`);
    const LIMIT = 40;
    const PERIOD = 2_000;
    const store = new MemoryStore();
    const clock = new MockClock(1_000_000);
    const quiet = { error: () => undefined, warn: () => undefined };
    const opts = { clock, flushIntervalMs: 0, logger: quiet, queueConfigs: { own: { rateLimit: { limit: LIMIT, periodMs: PERIOD, key: "{tenant}" } } } };
    let queue = await Queue.open(store, "q", opts);
    await queue.enqueueBatch(Array.from({ length: 1200 }, (_, i) => ({ queueName: "own", payload: enc(`j${i}`), opts: { headers: { tenant: `t${i % 2}` } } })));
    const acked: Array<{ tenant: string; at: number }> = [];
    let crashes = 0;
    for (let step = 0; step < 300; step++) {
      if (random() < 0.05) {
        // A crash: the next owner opens without closing this one (which is fenced and abandoned).
        crashes++;
        const dead = queue;
        queue = await Queue.open(store, "q", opts);
        await dead.close().catch(() => undefined);
      }
      const at = clock.now();
      for (const j of await queue.claimBatch("own", 1 + Math.floor(random() * 8))) {
        // Some claims are never acknowledged before the next crash: they are lost with it, and run again.
        if (random() < 0.1) continue;
        await queue.ack(j);
        acked.push({ tenant: j.headers["tenant"] ?? "", at });
      }
      if (random() < 0.3) await queue.flush();
      clock.advance(Math.floor(random() * 120));
    }
    await queue.close();
    expect(crashes, "owners replaced").toBeGreaterThan(5);
    for (const tenant of ["t0", "t1"]) {
      const times = acked.filter((a) => a.tenant === tenant).map((a) => a.at);
      let most = 0;
      for (let i = 0, lo = 0; i < times.length; i++) {
        while (times[lo]! <= times[i]! - PERIOD) lo++;
        most = Math.max(most, i - lo + 1);
      }
      expect(most, `acknowledged claims of ${tenant} in one period`).toBeLessThanOrEqual(LIMIT);
    }
  });
});
