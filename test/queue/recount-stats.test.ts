/**
 * @module `Queue.recountStats`: a queue's stats record counted again from
 * its state indexes. After a real workload (enqueue, scheduled jobs,
 * claims, acks, acks claiming their follow-ups, whose done counts the
 * claimed entries carry, a nack, dead letters, done retention) and damage
 * of each kind to the record, every move is refused with an error naming
 * the command to run; the dry run says what is wrong and what would be
 * written, writing nothing; the recount confirmed with its plan writes the
 * counts the workload left, and the queue moves again. A plan the queue no
 * longer gives is refused, nothing written; a record that holds the recount
 * is left alone; without done retention a damaged done count restarts from
 * what the indexes hold; recounts while workers run lose no move.
 */
import { describe, expect, it } from "vitest";
import { Packr } from "msgpackr";
import { MemoryStore, MockClock, Queue, type QueueStats, SettlementEffects, StatsPlanChangedError, StoreCorruptedError, ValidationError } from "taquba";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import { statsKey } from "../../runtime/queue/keys.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { carriedDone } from "../../runtime/queue/queue-stats.js";
import { encodeStats } from "../../runtime/queue/record.js";
import { WriteBatch } from "../../runtime/engine/write-batch.js";
import { counted, recount } from "./stats-recount.js";

const T0 = 1_764_000_000_000;
const HOUR = 3_600_000;
const enc = (s: string) => new TextEncoder().encode(s);
const packr = new Packr({ useRecords: false });
const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

async function open(doneRetentionMs: number | undefined, store = new MemoryStore()) {
  const clock = new MockClock(T0);
  const queue = await Queue.open(store, "q", {
    clock,
    flushIntervalMs: 0,
    logger: quiet,
    queueConfigs: { mail: doneRetentionMs === undefined ? {} : { doneRetentionMs } },
  });
  // The engine, reached through a claim's owner: damage is written as a damaged store would hold it.
  await queue.enqueue("handle", enc("h"));
  const handle = (await queue.claim("handle"))!;
  const core = ticketOf(handle)!.owner as QueueCore;
  await queue.ack(handle);
  const put = (value: Uint8Array) => core.engine.commit(new WriteBatch().put(statsKey("mail"), value));
  const recordBytes = () => core.engine.get(statsKey("mail"));
  return { queue, clock, core, put, recordBytes, store };
}

/** Enqueues, schedules, claims, acks (some claiming their follow-ups), nacks and dead-letters jobs of "mail"; some claims are left held. */
async function workload(queue: Queue): Promise<void> {
  // A job on its only attempt, nacked: dead.
  await queue.enqueue("mail", enc("once"), { maxAttempts: 1 });
  await queue.nack((await queue.claim("mail"))!, "failed for good");
  for (let i = 0; i < 12; i++) await queue.enqueue("mail", enc(`p${i}`));
  for (let i = 0; i < 3; i++) await queue.enqueue("mail", enc(`s${i}`), { runAt: T0 + (i + 1) * HOUR });
  // Two plain acks, then a chain of three acks each claiming its follow-up (their done counts ride in the claimed entry).
  for (let i = 0; i < 2; i++) await queue.ack((await queue.claim("mail"))!);
  let job = (await queue.claim("mail"))!;
  for (let i = 0; i < 3; i++)
    job = (await queue.ackClaimingNext(job, new SettlementEffects().enqueue("mail", enc(`c${i}`)), { index: 0, reserve: () => true })).next!;
  // A nack with attempts left (scheduled again) and a dead letter.
  await queue.nack((await queue.claim("mail"))!, "try later");
  await queue.deadLetter((await queue.claim("mail"))!, "bad input");
  // Two more claims held (with the chain's last follow-up, three).
  for (let i = 0; i < 2; i++) expect(await queue.claim("mail")).not.toBeNull();
}

const stats = (s: Partial<QueueStats>): QueueStats => ({ pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 0, ...s });

/** Each kind of damage, made from the record's five counts. */
const DAMAGE: ReadonlyArray<readonly [string, (c: number[]) => unknown[]]> = [
  ["a pending count in text", ([p, ...rest]) => [`x${p}`, ...rest]],
  ["a null scheduled count", ([p, , ...rest]) => [p, null, ...rest]],
  ["a boolean claimed count", ([p, s, , ...rest]) => [p, s, true, ...rest]],
  ["a fractional done count", ([p, s, c, d, x]) => [p, s, c, d! + 0.5, x]],
  ["a dead count past exact integers", ([p, s, c, d]) => [p, s, c, d, 2 ** 60]],
  ["not five counts", (c) => c.slice(0, 4)],
];

describe("Queue.recountStats", () => {
  for (const [kind, damaged] of DAMAGE) {
    it(`after a real workload and ${kind}: the dry run says what it would write, the confirmed recount writes the counts the workload left`, async () => {
      const { queue, clock, core, put, recordBytes, store } = await open(HOUR);
      let reopened: Queue | undefined;
      try {
        await workload(queue);
        const before = await queue.view().stats("mail");
        // The workload as the indexes hold it, counted apart from the queue; the chain's done jobs ride in claimed entries.
        expect(counted(before)).toEqual(recount(core.engine, "mail"));
        expect(before).toMatchObject({ scheduled: 4, claimed: 3, done: 5, dead: 2 });
        expect(before.pending).toBeGreaterThan(0);
        const carried = carriedDone(core.engine, "mail");
        expect(carried).toBeGreaterThan(0);
        const record = { ...before, done: before.done - carried };
        const real = recordBytes()!;
        await put(packr.pack(damaged([record.pending, record.scheduled, record.claimed, record.done, record.dead])));

        const refused = await queue.enqueue("mail", enc("later")).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(refused).toBeInstanceOf(StoreCorruptedError);
        expect((refused as Error).message).toContain("taquba queue recount mail");
        await expect(queue.claim("mail")).rejects.toThrow(/taquba queue recount mail/);

        const dry = await queue.recountStats("mail", { dryRun: true });
        expect(dry).toMatchObject({ queueName: "mail", recounted: record, carriedDone: carried, changed: true, dryRun: true });
        expect(dry.damage).toMatch(/not a stats record|not all whole numbers/);
        expect(dry.stored).toBeUndefined();
        expect(dry.plan).toMatch(/^[0-9a-f]{64}$/);
        await expect(queue.view().stats("mail")).rejects.toBeInstanceOf(StoreCorruptedError);

        const done = await queue.recountStats("mail", { plan: dry.plan });
        expect(done).toMatchObject({ recounted: record, changed: true, dryRun: false, plan: dry.plan });
        expect(recordBytes()).toEqual(real);
        expect(await queue.view().stats("mail")).toEqual(before);
        // The queue moves again, and counts from the recount.
        await queue.enqueue("mail", enc("later"));
        await queue.ack((await queue.claim("mail"))!);
        expect(await queue.view().stats("mail")).toEqual({ ...before, done: before.done + 1 });
        const settled = await queue.view().stats("mail");
        expect(counted(settled)).toEqual(recount(core.engine, "mail"));
        // The recount was durable: a reopen counts from it (its recovery requeues the claims it finds).
        await queue.close();
        reopened = await Queue.open(store, "q", { clock, flushIntervalMs: 0, logger: quiet, queueConfigs: { mail: { doneRetentionMs: HOUR } } });
        expect(await reopened.view().stats("mail")).toEqual({ ...settled, pending: settled.pending + settled.claimed, claimed: 0 });
      } finally {
        await queue.close();
        await reopened?.close();
      }
    });
  }

  it("refuses a plan the queue no longer gives, writing nothing; leaves alone a record that holds the recount", async () => {
    const { queue, core, put, recordBytes } = await open(HOUR);
    try {
      await workload(queue);
      const before = await queue.view().stats("mail");
      // A record that drifted (reads, but counts three pending jobs too many).
      const record = (await queue.recountStats("mail", { dryRun: true })).recounted;
      await put(encodeStats({ ...record, pending: record.pending + 3 }));
      const dry = await queue.recountStats("mail", { dryRun: true });
      expect(dry).toMatchObject({ changed: true, stored: { pending: before.pending + 3 } });
      expect(dry.damage).toBeUndefined();
      // A job moves between the dry run and the confirmation: the plan is refused, nothing written.
      await queue.enqueue("mail", enc("between"));
      const drifted = recordBytes();
      const refused = await queue.recountStats("mail", { plan: dry.plan }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(StatsPlanChangedError);
      expect((refused as Error).message).toMatch(/taquba queue recount mail --dry-run/);
      expect(recordBytes()).toEqual(drifted);
      // The record written again (another damage) between the dry run and the confirmation: refused too.
      const second = await queue.recountStats("mail", { dryRun: true });
      await put(packr.pack(["x", 0, 0, 0, 0]));
      await expect(queue.recountStats("mail", { plan: second.plan })).rejects.toBeInstanceOf(StatsPlanChangedError);
      // Without a plan it recounts what is there now; a second recount finds nothing to change and writes nothing.
      await queue.recountStats("mail");
      expect(await queue.view().stats("mail")).toEqual({ ...before, pending: before.pending + 1 });
      const engineCommits = core.engine.commits;
      expect(await queue.recountStats("mail")).toMatchObject({ changed: false, dryRun: false });
      expect(core.engine.commits).toBe(engineCommits);
    } finally {
      await queue.close();
    }
  });

  it("without done retention: a damaged done count restarts from what the claimed entries carry; one that reads is kept", async () => {
    const { queue, put } = await open(undefined);
    try {
      await workload(queue);
      const before = await queue.view().stats("mail");
      const carried = before.done - (await queue.recountStats("mail", { dryRun: true })).recounted.done;
      expect(carried).toBeGreaterThan(0);
      // Pending damaged, done readable: done is kept as it was.
      await put(packr.pack(["x", 0, 0, before.done - carried, 0]));
      await queue.recountStats("mail");
      expect(await queue.view().stats("mail")).toEqual(before);
      // Done damaged, and no done job retained: the record's done restarts at zero, reads add what the claimed entries carry.
      await put(packr.pack([0, 0, 0, "5", 0]));
      const dry = await queue.recountStats("mail", { dryRun: true });
      expect(dry.recounted.done).toBe(0);
      await queue.recountStats("mail", { plan: dry.plan });
      expect(await queue.view().stats("mail")).toEqual({ ...before, done: carried });
    } finally {
      await queue.close();
    }
  });

  it("recounts while workers enqueue, claim, ack and dead-letter lose no move, the record damaged in between", async () => {
    const { queue, core, put } = await open(HOUR);
    try {
      let acked = 0;
      let dead = 0;
      let refusedMoves = 0;
      let stop = false;
      const retrying = async <T>(move: () => Promise<T>): Promise<T> => {
        for (;;) {
          try {
            return await move();
          } catch (e) {
            if (!(e instanceof StoreCorruptedError)) throw e;
            refusedMoves++;
            await new Promise((r) => setImmediate(r));
          }
        }
      };
      const worker = async (w: number) => {
        for (let i = 0; !stop; i++) {
          await retrying(() => queue.enqueue("mail", enc(`${w}-${i}`)));
          const job = await retrying(() => queue.claim("mail"));
          if (job === null) continue;
          if (i % 7 === 3) {
            await retrying(() => queue.deadLetter(job, "bad"));
            dead++;
          } else {
            await retrying(() => queue.ack(job));
            acked++;
          }
        }
      };
      const workers = [0, 1, 2, 3].map(worker);
      for (let round = 0; round < 20; round++) {
        await new Promise((r) => setImmediate(r));
        if (round % 4 === 1) await put(packr.pack(["x", 0, 0, 0, 0]));
        else await queue.recountStats("mail");
        // Between rounds every move either landed whole or was refused whole: the record, once recounted, matches the indexes.
        await new Promise((r) => setImmediate(r));
      }
      // The last round recounted a healthy record: the workers' moves since (and during it) count from it.
      for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
      stop = true;
      await Promise.all(workers);
      const final = await queue.view().stats("mail");
      expect(counted(final)).toEqual(recount(core.engine, "mail"));
      expect(final).toMatchObject({ done: acked, dead });
      expect(acked).toBeGreaterThan(20);
      expect(refusedMoves).toBeGreaterThan(0);
    } finally {
      await queue.close();
    }
  });

  it("moves called in the recount's turn, right after it, land on the recounted record: none is lost or refused", async () => {
    const { queue, core, put } = await open(HOUR);
    try {
      await workload(queue);
      const before = await queue.view().stats("mail");
      const record = (await queue.recountStats("mail", { dryRun: true })).recounted;
      await put(packr.pack(["x", 0, 0, record.done, 0]));
      // Called together: these commit while the recount counts its snapshot in slices, and it adds them at its commit.
      const [recounted] = await Promise.all([
        queue.recountStats("mail"),
        queue.enqueue("mail", enc("same turn")),
        queue.enqueue("mail", enc("same turn, later"), { runAt: T0 + 9 * HOUR }),
        queue.claim("mail"),
      ]);
      expect(recounted.changed).toBe(true);
      const after = await queue.view().stats("mail");
      expect(counted(after)).toEqual(recount(core.engine, "mail"));
      // One pending job enqueued and one claimed: pending level, one more scheduled, one more claimed.
      expect(after).toEqual({ ...before, scheduled: before.scheduled + 1, claimed: before.claimed + 1 });
    } finally {
      await queue.close();
    }
  });

  it("refuses options it does not take, and a queue name that is none, before reading", async () => {
    const { queue } = await open(HOUR);
    try {
      await expect(queue.recountStats("mail", { dryrun: true } as never)).rejects.toBeInstanceOf(ValidationError);
      await expect(queue.recountStats("mail", { dryRun: "yes" } as never)).rejects.toBeInstanceOf(ValidationError);
      await expect(queue.recountStats("mail", { plan: "abc" })).rejects.toBeInstanceOf(ValidationError);
      await expect(queue.recountStats("a/b")).rejects.toBeInstanceOf(ValidationError);
      // A queue with no record and no jobs: nothing to write (no record made for it).
      expect(await queue.recountStats("empty")).toMatchObject({ recounted: stats({}), changed: false });
      expect(await queue.view().listQueues()).not.toContain("empty");
    } finally {
      await queue.close();
    }
  });
});
