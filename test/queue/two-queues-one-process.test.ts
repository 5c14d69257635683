/**
 * @module Two queues open in one process keep their own state: the id
 * generators, lease orders and counts are each queue's, though every queue
 * runs the same shared code over them (ids from a class per queue, not a
 * closure each; one lease predicate for every registry). A queue whose
 * clock is days ahead does not push the other's ids to its time, a lease
 * expiring in one leaves the other's claims held, and each queue's counts
 * are its own settlements'.
 */
import { decodeTime } from "ulid";
import { describe, expect, it } from "vitest";
import { MockClock, SettlementEffects } from "taquba";
import { enc, openQueue, quiesce } from "./helpers.js";

const DAY = 86_400_000;

describe("two queues in one process", () => {
  it("draw ids of their own clocks, expire only their own leases, and count their own settlements", async () => {
    const ahead = await openQueue({ clock: new MockClock(1_700_000_000_000 + 10 * DAY) });
    const behind = await openQueue({ clock: new MockClock(1_700_000_000_000) });
    const ids: Record<"ahead" | "behind", string[]> = { ahead: [], behind: [] };
    // Interleaved, the queue ahead first each time: a generator shared between them would carry its time into the other's ids.
    for (let i = 0; i < 20; i++) {
      for (const [name, q] of [
        ["ahead", ahead],
        ["behind", behind],
      ] as const) {
        const o = await q.queue.enqueue("work", enc(`${name} ${i}`), { maxAttempts: 5 });
        ids[name].push(o.jobId);
        expect(decodeTime(o.jobId), name).toBe(q.clock.now());
        q.clock.advance(1);
      }
    }
    for (const list of Object.values(ids)) for (let i = 1; i < list.length; i++) expect(list[i]! > list[i - 1]!).toBe(true);

    // Each claims one job for a second; only the queue whose clock passes the lease takes it back.
    const heldAhead = (await ahead.queue.claim("work", 1000))!;
    const heldBehind = (await behind.queue.claim("work", 1000))!;
    ahead.clock.advance(5000);
    await ahead.queue.runMaintenance();
    await behind.queue.runMaintenance();
    await quiesce(ahead.queue);
    await quiesce(behind.queue);
    expect((await ahead.queue.view().stats("work")).claimed).toBe(0);
    expect((await behind.queue.view().stats("work")).claimed).toBe(1);
    await expect(ahead.queue.ack(heldAhead)).rejects.toThrow();
    await behind.queue.ack(heldBehind, new SettlementEffects().enqueue("next", enc("from behind")));

    // The rest settled in each, with effects in one only.
    for (let j = await ahead.queue.claim("work"); j; j = await ahead.queue.claim("work")) await ahead.queue.ack(j);
    for (let j = await behind.queue.claim("work"); j; j = await behind.queue.claim("work")) {
      await behind.queue.ack(j, new SettlementEffects().enqueue("next", enc(j.id)));
    }
    expect(await ahead.queue.view().stats("work")).toMatchObject({ pending: 0, claimed: 0, done: 20 });
    expect(await ahead.queue.view().stats("next")).toMatchObject({ pending: 0, done: 0 });
    expect(await behind.queue.view().stats("work")).toMatchObject({ pending: 0, claimed: 0, done: 20 });
    expect(await behind.queue.view().stats("next")).toMatchObject({ pending: 20, done: 0 });
    await ahead.queue.close();
    await behind.queue.close();
  });
});
