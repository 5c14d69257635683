/**
 * @module A job record damaged while this process holds the job claimed,
 * met by the settlement: every settlement (ack, nack, dead-letter, the
 * chained ack) sets the job aside as dead with the reason
 * `record_corrupted` in one durable commit, applies nothing of its own nor
 * its effects, and rejects with a `JobRecordDamagedError` once the job is
 * dead; the stats equal a recount of the store.
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import {
  ClaimLostError,
  type ClaimedJob,
  type DeadLetteredEvent,
  JobRecordDamagedError,
  MemoryStore,
  MockClock,
  Queue,
  type QueueStats,
  SettlementEffects,
  WriteBatch,
} from "taquba";
import { settledInTurn } from "../../runtime/queue/claim-settle.js";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import { jobKey } from "../../runtime/queue/keys.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { counted, recount } from "./stats-recount.js";
import { until } from "../support/until.js";

const general = new Packr({ useRecords: false, mapsAsObjects: true, skipValues: [undefined] } as ConstructorParameters<typeof Packr>[0]);
const T0 = 1_764_000_000_000;
const enc = (s: string) => new TextEncoder().encode(s);

interface Damage {
  what: string;
  /** The damaged bytes, from the job's own and those of job `g` (a good job of the same queue). */
  bytes(own: Uint8Array, good: Uint8Array): Uint8Array;
  detail: RegExp;
}

const DAMAGES: Damage[] = [
  { what: "bytes cut short", bytes: (own) => own.subarray(0, 2), detail: /.+/ },
  {
    what: "a queue naming another queue",
    bytes: (own) => {
      const r = general.unpack(own) as Record<string, unknown>;
      r.queue = "other";
      return new Uint8Array(general.pack(r));
    },
    detail: /a job record of queue "other", found among the jobs of queue "w"/,
  },
  { what: "another job's record copied over it", bytes: (_own, good) => good.slice(), detail: /naming job "g", not job victim/ },
];

type Settle = (q: Queue, job: ClaimedJob) => Promise<unknown>;

const next = (index = 0) => ({ index, reserve: () => true });
const effects = () => new SettlementEffects().kvPut("k", enc("v")).enqueue("w", enc("follow"), { jobId: "follow" });

const SETTLEMENTS: { name: string; settle: Settle; retained?: boolean }[] = [
  { name: "ack", settle: (q, j) => q.ack(j) },
  { name: "ack with done retention", settle: (q, j) => q.ack(j), retained: true },
  { name: "ack with effects", settle: (q, j) => q.ack(j, effects()) },
  { name: "nack", settle: (q, j) => q.nack(j, "boom") },
  { name: "nack giving the attempt back", settle: (q, j) => q.nack(j, "boom", undefined, { countAttempt: false }) },
  { name: "nack with effects at the last attempt", settle: (q, j) => q.nack(j, "boom", effects()) },
  { name: "deadLetter", settle: (q, j) => q.deadLetter(j, "boom", effects()) },
  { name: "ackClaimingNext", settle: (q, j) => q.ackClaimingNext(j, effects(), next()) },
  {
    name: "ackClaimingNextInTurn",
    settle: async (q, j) => {
      const s = q.ackClaimingNextInTurn(j, effects(), next());
      return s instanceof Promise ? s : settledInTurn(s);
    },
  },
];

const stats = (s: Partial<QueueStats>): QueueStats => ({ pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 0, ...s });

async function live(retained: boolean) {
  const warnings: string[] = [];
  const dead: DeadLetteredEvent[] = [];
  const logger = { debug: () => undefined, info: () => undefined, error: () => undefined, warn: (_o: unknown, msg?: string) => void warnings.push(msg ?? "") };
  const queue = await Queue.open(new MemoryStore(), "q", {
    clock: new MockClock(T0),
    flushIntervalMs: 0,
    logger,
    onDeadLettered: (e) => void dead.push(e),
    queueConfigs: { w: { maxAttempts: 1, ...(retained ? { doneRetentionMs: 60_000 } : {}) }, other: {} },
  });
  await queue.enqueue("other", enc("o1"), { jobId: "o1" });
  await queue.enqueue("w", enc("victim"), { jobId: "victim", headers: { h: "1" } });
  await queue.enqueue("w", enc("g"), { jobId: "g" });
  const victim = (await queue.claim("w"))!;
  const core = ticketOf(victim)!.owner as QueueCore;
  const damage = async (how: Damage) => {
    const own = core.engine.get(jobKey("victim"))!;
    const good = core.engine.get(jobKey("g"))!;
    await core.engine.commit(new WriteBatch().put(jobKey("victim"), how.bytes(own, good)));
  };
  return { queue, core, victim, dead, warnings, damage };
}

describe.each(DAMAGES)("a claimed job's record damaged with $what", (how) => {
  it.each(SETTLEMENTS)("is set aside as dead by its $name, which rejects with JobRecordDamagedError and applies nothing", async ({ settle, retained }) => {
    const q = await live(retained === true);
    try {
      await q.damage(how);
      const err = await settle(q.queue, q.victim).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(JobRecordDamagedError);
      const e = err as JobRecordDamagedError;
      expect({ jobId: e.jobId, setAside: e.setAside, code: e.code }).toEqual({ jobId: "victim", setAside: true, code: "JOB_RECORD_DAMAGED" });
      expect(e.detail).toMatch(how.detail);
      expect(e.message).toMatch(/job victim was damaged while it was claimed .*not applied.*set aside as dead \(record_corrupted\)/);
      expect(q.dead).toEqual([expect.objectContaining({ jobId: "victim", queueName: "w", reason: "record_corrupted" })]);
      expect(q.warnings.filter((w) => w.includes("job victim"))).toHaveLength(1);
      const info = await q.queue.view().job("victim");
      expect(info).toMatchObject({ state: "dead", queueName: "w" });
      expect(info?.lastError).toMatch(/^record_corrupted: the stored record of job victim could not be read/);
      // Nothing of the settlement's own: no follow-up job, no kv write.
      expect(await q.queue.view().job("follow")).toBeNull();
      expect(await q.queue.kvGet("k")).toBeNull();
      expect(await q.queue.view().stats("w")).toEqual(stats({ pending: 1, dead: 1 }));
      expect(await q.queue.view().stats("other")).toEqual(stats({ pending: 1 }));
      for (const name of ["w", "other"]) expect(counted(await q.queue.view().stats(name))).toEqual(recount(q.core.engine, name));
      // The claim is gone: a second settlement is refused and changes nothing.
      await expect(q.queue.ack(q.victim)).rejects.toBeInstanceOf(ClaimLostError);
      // The good job beside it goes on.
      const g = (await q.queue.claim("w"))!;
      expect(g.id).toBe("g");
      await q.queue.ack(g);
      expect(await q.queue.view().stats("w")).toEqual(stats({ done: 1, dead: 1 }));
      // A redrive runs it again with what was kept.
      expect(await q.queue.requeueDead("victim")).toBe(true);
      const again = (await q.queue.claim("w"))!;
      expect(again.id).toBe("victim");
      await q.queue.ack(again);
      expect(await q.queue.view().stats("w")).toEqual(stats({ done: 2 }));
    } finally {
      await q.queue.close();
    }
  });
});

describe("a damaged claimed record met by a settlement", () => {
  it.each(DAMAGES)("given back with releaseClaim ($what) is set aside, and a good claim given back with it returns to pending", async (how) => {
    const q = await live(false);
    try {
      const g = (await q.queue.claim("w"))!;
      await q.damage(how);
      q.queue.releaseClaim(q.victim);
      q.queue.releaseClaim(g);
      await until("the set-aside announced", async () => q.dead.length === 1);
      expect(q.dead[0]).toMatchObject({ jobId: "victim", queueName: "w", reason: "record_corrupted" });
      expect((await q.queue.view().job("victim"))?.state).toBe("dead");
      expect(await q.queue.view().stats("w")).toEqual(stats({ pending: 1, dead: 1 }));
      for (const name of ["w", "other"]) expect(counted(await q.queue.view().stats(name))).toEqual(recount(q.core.engine, name));
      const again = (await q.queue.claim("w"))!;
      expect({ id: again.id, attempt: again.attempt }).toEqual({ id: "g", attempt: 1 });
      await q.queue.ack(again);
    } finally {
      await q.queue.close();
    }
  });

  it("is set aside once after a reopen: recovery finds it dead, not claimed", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "q", { clock: new MockClock(T0), flushIntervalMs: 0, queueConfigs: { w: { maxAttempts: 3 } } });
    await queue.enqueue("w", enc("victim"), { jobId: "victim" });
    const victim = (await queue.claim("w"))!;
    const core = ticketOf(victim)!.owner as QueueCore;
    await core.engine.commit(new WriteBatch().put(jobKey("victim"), enc("\xc1")));
    await expect(queue.nack(victim, "boom")).rejects.toBeInstanceOf(JobRecordDamagedError);
    await queue.close();
    const reopened = await Queue.open(store, "q", { clock: new MockClock(T0), flushIntervalMs: 0 });
    try {
      expect(reopened.recovery).toMatchObject({ requeued: [], deadLettered: [] });
      expect((await reopened.view().job("victim"))?.state).toBe("dead");
      expect(await reopened.view().stats("w")).toEqual(stats({ dead: 1 }));
    } finally {
      await reopened.close();
    }
  });
});
