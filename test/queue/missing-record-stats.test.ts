/**
 * @module An index entry whose job record is gone, met by background work:
 * the reaper (a claimed job's lease expired), the promotion of scheduled
 * jobs (it came due) and recovery at open (a claim the previous process
 * held). Each drops the entry, moves its queue's stats with it (a done
 * count the entry carries kept), warns once naming the job, and goes on:
 * the stats equal a recount of the store's indexes after each.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, Queue, type QueueStats, SettlementEffects, WriteBatch } from "taquba";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import { claimedKey, jobKey, scheduledKey } from "../../runtime/queue/keys.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { settle } from "./helpers.js";
import { counted, recount } from "./stats-recount.js";

const T0 = 1_764_000_000_000;
const enc = (s: string) => new TextEncoder().encode(s);
const stats = (s: Partial<QueueStats>): QueueStats => ({ pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 0, ...s });

async function live(store = new MemoryStore()) {
  const clock = new MockClock(T0);
  const warnings: string[] = [];
  const failures: string[] = [];
  const logger = {
    debug: () => undefined,
    info: () => undefined,
    error: () => undefined,
    warn: (_o: unknown, msg?: string) => void (/background work failed/.test(msg ?? "") ? failures : warnings).push(msg ?? ""),
  };
  const queue = await Queue.open(store, "q", { clock, flushIntervalMs: 0, logger, queueConfigs: { w: {}, other: {} } });
  await queue.enqueue("handle", enc("h"));
  const handle = (await queue.claim("handle"))!;
  const core = ticketOf(handle)!.owner as QueueCore;
  await queue.ack(handle);
  if ((await queue.view().job("o1")) === null) await queue.enqueue("other", enc("o1"), { jobId: "o1" });
  const removeRecord = async (id: string) => {
    await core.engine.commit(new WriteBatch().delete(jobKey(id)));
  };
  const pass = async (ms: number) => {
    for (let left = ms; left > 0; left -= 1000) {
      clock.advance(Math.min(1000, left));
      await settle();
    }
  };
  const modelled = async () => {
    for (const name of ["w", "other"]) expect(counted(await queue.view().stats(name))).toEqual(recount(core.engine, name));
  };
  return { queue, core, clock, warnings, failures, removeRecord, pass, modelled };
}

describe("an index entry whose job record is gone", () => {
  it("claimed, whose lease expires, is dropped by the reaper with its claimed count", async () => {
    const q = await live();
    try {
      for (const id of ["victim", "g1"]) await q.queue.enqueue("w", enc(id), { jobId: id });
      const victim = (await q.queue.claim("w", 1000))!;
      expect(victim.id).toBe("victim");
      await q.removeRecord("victim");
      await q.pass(1000);
      await q.pass(5000);
      expect(q.failures).toEqual([]);
      expect(q.warnings.filter((w) => w.includes("job victim"))).toEqual([
        'queue "q": job victim of queue "w" was listed claimed without a stored record; its entry was dropped when its lease expired',
      ]);
      expect(await q.queue.view().stats("w")).toEqual(stats({ pending: 1 }));
      await q.modelled();
      await expect(q.queue.ack(victim)).rejects.toThrow();
      const g1 = (await q.queue.claim("w"))!;
      expect(g1.id).toBe("g1");
      await q.queue.ack(g1);
      expect(await q.queue.view().stats("w")).toEqual(stats({ done: 1 }));
      await q.modelled();
    } finally {
      await q.queue.close();
    }
  });

  it("claimed by a chained ack, carrying the done count, keeps that count when the reaper drops it", async () => {
    const q = await live();
    try {
      await q.queue.enqueue("w", enc("first"), { jobId: "first" });
      const first = (await q.queue.claim("w"))!;
      const res = await q.queue.ackClaimingNext(first, new SettlementEffects().enqueue("w", enc("next"), { jobId: "victim" }), {
        index: 0,
        leaseMs: 1000,
        reserve: () => true,
      });
      expect(res.next?.id).toBe("victim");
      expect(await q.queue.view().stats("w")).toEqual(stats({ claimed: 1, done: 1 }));
      await q.removeRecord("victim");
      await q.pass(2000);
      expect(q.failures).toEqual([]);
      expect(await q.queue.view().stats("w")).toEqual(stats({ done: 1 }));
      await q.modelled();
    } finally {
      await q.queue.close();
    }
  });

  it("scheduled, coming due, is dropped by the promotion with its scheduled count", async () => {
    const q = await live();
    try {
      await q.queue.enqueue("w", enc("s1"), { jobId: "s1", runAt: T0 + 2000 });
      await q.queue.enqueue("w", enc("victim"), { jobId: "victim", runAt: T0 + 2000 });
      await q.queue.enqueue("w", enc("s2"), { jobId: "s2", runAt: T0 + 9000 });
      await q.removeRecord("victim");
      await q.pass(3000);
      expect(q.failures).toEqual([]);
      expect(q.warnings.filter((w) => w.includes("job victim"))).toEqual([
        'queue "q": job victim of queue "w" was listed scheduled without a stored record; its entry was dropped when it came due',
      ]);
      expect(await q.queue.view().stats("w")).toEqual(stats({ pending: 1, scheduled: 1 }));
      await q.modelled();
      await q.pass(7000);
      expect(await q.queue.view().stats("w")).toEqual(stats({ pending: 2 }));
      await q.modelled();
    } finally {
      await q.queue.close();
    }
  });

  it("put without its count (scheduled, claimed) is dropped leaving the counts at zero, never below", async () => {
    const q = await live();
    try {
      const e = await q.queue.enqueue("w", enc("x"), { jobId: "x" });
      expect(e.newlyEnqueued).toBe(true);
      await q.core.engine.commit(
        new WriteBatch().put(scheduledKey(T0 + 1000, "w", "ghost"), new Uint8Array(0)).put(claimedKey("w", "ghost2"), new Uint8Array(0)),
      );
      q.core.leases.add("ghost2", "w", T0 + 1000, false);
      q.core.loop.rearm(T0 + 1000);
      await q.pass(2000);
      expect(q.failures).toEqual([]);
      expect(await q.queue.view().stats("w")).toEqual(stats({ pending: 1 }));
      await q.modelled();
    } finally {
      await q.queue.close();
    }
  });

  it("claimed by a previous process is dropped by recovery at open with its claimed count", async () => {
    const store = new MemoryStore();
    const q = await live(store);
    for (const id of ["victim", "g1", "g2"]) await q.queue.enqueue("w", enc(id), { jobId: id });
    expect((await q.queue.claim("w"))?.id).toBe("victim");
    expect((await q.queue.claim("w"))?.id).toBe("g1");
    await q.removeRecord("victim");
    await q.queue.close();
    const again = await live(store);
    try {
      expect(again.queue.recovery).toEqual({ requeued: ["g1"], deadLettered: [] });
      expect(again.warnings.filter((w) => w.includes("job victim"))).toEqual([
        'queue "q": job victim of queue "w" was listed claimed without a stored record; its entry was dropped at open',
      ]);
      expect(await again.queue.view().stats("w")).toEqual(stats({ pending: 2 }));
      await again.modelled();
    } finally {
      await again.queue.close();
    }
  });
});
