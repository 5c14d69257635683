/**
 * @module A job record damaged while its queue is open, found by background
 * work: the reaper (the job's lease expired), the promotion of scheduled
 * jobs (it came due) and the retention sweep (its retention ended). Each
 * sets the job aside as dead with the reason `record_corrupted` (or, at the
 * end of its retention, removes it) once, warns naming the job, and goes on:
 * every good job is done, the stats equal a model, and no pass fails and
 * retries once a second.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { type DeadLetteredEvent, MemoryStore, MockClock, Queue, type QueueStats, WriteBatch } from "taquba";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import { jobKey } from "../../runtime/queue/keys.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { settle } from "./helpers.js";
import { until } from "../support/until.js";

const general = new Packr({ useRecords: false, mapsAsObjects: true, skipValues: [undefined] } as ConstructorParameters<typeof Packr>[0]);
const T0 = 1_764_000_000_000;
const enc = (s: string) => new TextEncoder().encode(s);

interface Damage {
  what: string;
  bytes(own: Uint8Array): Uint8Array;
}

const DAMAGES: Damage[] = [
  { what: "bytes cut short", bytes: (own) => own.subarray(0, 2) },
  {
    what: "a queue naming another queue",
    bytes: (own) => {
      const r = general.unpack(own) as Record<string, unknown>;
      r.queue = "other";
      return new Uint8Array(general.pack(r));
    },
  },
];

const stats = (s: Partial<QueueStats>): QueueStats => ({ pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 0, ...s });

/** A live queue with its warnings, background failures and dead letters recorded, and its engine at hand. */
async function live() {
  const clock = new MockClock(T0);
  const warnings: string[] = [];
  const failures: string[] = [];
  const dead: DeadLetteredEvent[] = [];
  const logger = {
    debug: () => undefined,
    info: () => undefined,
    error: () => undefined,
    warn: (_o: unknown, msg?: string) => void (/background work failed/.test(msg ?? "") ? failures : warnings).push(msg ?? ""),
  };
  const queue = await Queue.open(new MemoryStore(), "q", {
    clock,
    flushIntervalMs: 0,
    logger,
    onDeadLettered: (e) => void dead.push(e),
    queueConfigs: { w: { doneRetentionMs: 60_000 }, other: {} },
  });
  // The queue's engine, through a claim's owner: a record damaged under the running queue.
  await queue.enqueue("handle", enc("h"));
  const handle = (await queue.claim("handle"))!;
  const core = ticketOf(handle)!.owner as QueueCore;
  await queue.ack(handle);
  await queue.enqueue("other", enc("o1"), { jobId: "o1" });
  const damage = async (id: string, how: Damage) => {
    await core.engine.commit(new WriteBatch().put(jobKey(id), how.bytes(core.engine.get(jobKey(id))!)));
  };
  /** Moves the clock a second at a time for `ms`, letting background work run after each. */
  const pass = async (ms: number) => {
    for (let left = ms; left > 0; left -= 1000) {
      clock.advance(Math.min(1000, left));
      await settle();
    }
  };
  const drain = async (): Promise<string[]> => {
    const done: string[] = [];
    for (let job = await queue.claim("w"); job !== null; job = await queue.claim("w")) {
      await queue.ack(job);
      done.push(job.id);
    }
    return done;
  };
  return { queue, clock, warnings, failures, dead, damage, pass, drain };
}

describe.each(DAMAGES)("a job record damaged with $what under a live queue", (how) => {
  it("whose lease expires is set aside by the reaper once, and the good claimed job beside it requeued", async () => {
    const q = await live();
    try {
      for (const id of ["victim", "g1", "g2", "g3"]) await q.queue.enqueue("w", enc(id), { jobId: id });
      const victim = (await q.queue.claim("w", 1000))!;
      const g1 = (await q.queue.claim("w", 1000))!;
      expect([victim.id, g1.id]).toEqual(["victim", "g1"]);
      await q.damage("victim", how);
      await q.pass(1000);
      await until("the set-aside announced", async () => q.dead.length === 1);
      expect(q.dead[0]).toMatchObject({ jobId: "victim", queueName: "w", reason: "record_corrupted" });
      // Ten more seconds: nothing fails and retries.
      await q.pass(10_000);
      expect(q.failures).toEqual([]);
      expect(q.warnings.filter((w) => w.includes("job victim"))).toHaveLength(1);
      expect(q.warnings.find((w) => w.includes("job victim"))).toMatch(/set aside as dead \(record_corrupted\) when its lease expired/);
      expect(await q.drain()).toEqual(["g1", "g2", "g3"]);
      expect(await q.queue.view().stats("w")).toEqual(stats({ done: 3, dead: 1 }));
      expect(await q.queue.view().stats("other")).toEqual(stats({ pending: 1 }));
      expect((await q.queue.view().job("victim"))?.state).toBe("dead");
      // The holder's late ack finds its claim gone.
      await expect(q.queue.ack(victim)).rejects.toThrow();
      expect(await q.queue.view().stats("w")).toEqual(stats({ done: 3, dead: 1 }));
    } finally {
      await q.queue.close();
    }
  });

  it("that comes due is set aside by the promotion once, and the scheduled jobs beside it promoted", async () => {
    const q = await live();
    try {
      await q.queue.enqueue("w", enc("s1"), { jobId: "s1", runAt: T0 + 2000 });
      await q.queue.enqueue("w", enc("victim"), { jobId: "victim", runAt: T0 + 2000 });
      await q.queue.enqueue("w", enc("s2"), { jobId: "s2", runAt: T0 + 5000 });
      await q.queue.enqueue("w", enc("p1"), { jobId: "p1" });
      await q.damage("victim", how);
      await q.pass(2000);
      await until("the set-aside announced", async () => q.dead.length === 1);
      expect(q.dead[0]).toMatchObject({ jobId: "victim", queueName: "w", reason: "record_corrupted" });
      expect(await q.queue.view().stats("w")).toEqual(stats({ pending: 2, scheduled: 1, dead: 1 }));
      await q.pass(10_000);
      expect(q.failures).toEqual([]);
      expect(q.warnings.filter((w) => w.includes("job victim"))).toHaveLength(1);
      expect((await q.drain()).sort()).toEqual(["p1", "s1", "s2"]);
      expect(await q.queue.view().stats("w")).toEqual(stats({ done: 3, dead: 1 }));
      expect(await q.queue.view().stats("other")).toEqual(stats({ pending: 1 }));
      expect((await q.queue.view().job("victim"))?.state).toBe("dead");
    } finally {
      await q.queue.close();
    }
  });

  it("whose retention ends is removed by the sweep once, with the done jobs beside it", async () => {
    const q = await live();
    try {
      for (const id of ["d1", "victim", "d2"]) await q.queue.enqueue("w", enc(id), { jobId: id });
      expect(await q.drain()).toEqual(["d1", "victim", "d2"]);
      await q.queue.enqueue("w", enc("p1"), { jobId: "p1" });
      await q.damage("victim", how);
      await q.pass(60_000);
      await until("the sweep ran", async () => (await q.queue.view().job("d2")) === null);
      await q.pass(10_000);
      expect(q.failures).toEqual([]);
      expect(q.warnings.filter((w) => w.includes("job victim"))).toHaveLength(1);
      expect(q.warnings.find((w) => w.includes("job victim"))).toMatch(/removed job victim at the end of its retention/);
      // The done count only grows: the sweep leaves it.
      expect(await q.queue.view().stats("w")).toEqual(stats({ pending: 1, done: 3 }));
      expect(await q.queue.view().stats("other")).toEqual(stats({ pending: 1 }));
      for (const id of ["d1", "victim", "d2"]) expect(await q.queue.view().job(id)).toBeNull();
      expect(await q.drain()).toEqual(["p1"]);
      expect(await q.queue.view().stats("w")).toEqual(stats({ done: 4 }));
    } finally {
      await q.queue.close();
    }
  });
});
