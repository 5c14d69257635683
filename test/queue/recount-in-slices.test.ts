/**
 * @module `Queue.recountStats` counts from a snapshot in slices, every move
 * going on between them, and adds the moves since in the turn that
 * commits (stats-recount-turns.ts). Moves of every kind are made between
 * the slices (seeded: enqueues, scheduled enqueues, claims, acks, acks
 * claiming their follow-ups, nacks, dead letters, cancels, requeues of
 * dead jobs), with workers running besides, on a record that drifted: the
 * record written is the count of the indexes at its commit. A close during
 * a recount ends it with `ClosedError`, nothing written; two recounts at
 * once each answer the count at their own commit; a record damaged in the
 * middle is counted whole at the commit.
 */
import { describe, expect, it } from "vitest";
import { Packr } from "msgpackr";
import { ClosedError, type ClaimedJob, MemoryStore, MockClock, Queue, SettlementEffects, StoreCorruptedError } from "taquba";
import { WriteBatch } from "../../runtime/engine/write-batch.js";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import { statsKey } from "../../runtime/queue/keys.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { decodeStats, encodeStats } from "../../runtime/queue/record.js";
import { recountFrom } from "../../runtime/queue/stats-recount.js";
import { type TestRandom, testRandom } from "../support/seed.js";
import { counted, recount } from "./stats-recount.js";

const T0 = 1_764_000_000_000;
const HOUR = 3_600_000;
const enc = (s: string) => new TextEncoder().encode(s);
const packr = new Packr({ useRecords: false });
const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
const turn = () => new Promise<void>((r) => setImmediate(r));

async function open(store = new MemoryStore()) {
  const clock = new MockClock(T0);
  const queue = await Queue.open(store, "q", { clock, flushIntervalMs: 0, logger: quiet, queueConfigs: { mail: { doneRetentionMs: HOUR } } });
  // The engine, reached through a claim's owner: a drifted record is written as a store would hold it.
  await queue.enqueue("handle", enc("h"));
  const handle = (await queue.claim("handle"))!;
  const core = ticketOf(handle)!.owner as QueueCore;
  await queue.ack(handle);
  const put = (value: Uint8Array) => core.engine.commit(new WriteBatch().put(statsKey("mail"), value));
  const record = () => decodeStats(statsKey("mail"), core.engine.get(statsKey("mail")));
  return { queue, clock, core, put, record, store };
}

/** The jobs a test moves, and the done jobs it made (done is cumulative: no index counts it). */
class Moves {
  readonly held: ClaimedJob[] = [];
  readonly waiting: string[] = [];
  readonly dead: string[] = [];
  done = 0;
  refused = 0;
  #n = 0;

  constructor(
    readonly queue: Queue,
    readonly rnd: TestRandom,
  ) {}

  /** Fills "mail" with pending, scheduled, claimed, dead and retained done jobs, and "other" with scheduled ones. */
  async fill(): Promise<void> {
    for (let i = 0; i < 120; i++) this.waiting.push((await this.queue.enqueue("mail", enc(`p${i}`))).jobId);
    for (let i = 0; i < 30; i++) this.waiting.push((await this.queue.enqueue("mail", enc(`s${i}`), { runAt: T0 + (i + 1) * HOUR })).jobId);
    for (let i = 0; i < 30; i++) await this.queue.enqueue("other", enc(`o${i}`), { runAt: T0 + (i + 1) * HOUR });
    for (let i = 0; i < 12; i++) await this.claim();
    for (let i = 0; i < 6; i++) await this.move(4);
    for (let i = 0; i < 4; i++) await this.move(6);
  }

  async claim(): Promise<void> {
    const job = await this.queue.claim("mail");
    if (job !== null) this.held.push(job);
  }

  #take(): ClaimedJob | undefined {
    return this.held.length === 0 ? undefined : this.held.splice(this.rnd.int(this.held.length), 1)[0];
  }

  /** One move of "mail", of kind `kind` (0-9) or drawn; a move the damaged record refuses is counted and left. */
  async move(kind = this.rnd.int(10)): Promise<void> {
    try {
      await this.#move(kind);
    } catch (e) {
      if (!(e instanceof StoreCorruptedError)) throw e;
      this.refused++;
    }
  }

  async #move(kind: number): Promise<void> {
    const q = this.queue;
    const n = this.#n++;
    switch (kind) {
      case 0:
        this.waiting.push((await q.enqueue("mail", enc(`m${n}`))).jobId);
        return;
      case 1:
        this.waiting.push((await q.enqueue("mail", enc(`m${n}`), { runAt: T0 + HOUR + this.rnd.int(9 * HOUR) })).jobId);
        return;
      case 2:
        return this.claim();
      case 3: {
        const job = this.#take();
        if (job === undefined) return this.claim();
        await q.ack(job);
        this.done++;
        return;
      }
      case 4: {
        // An ack claiming its follow-up: the done job rides in the follow-up's claimed entry.
        const job = this.#take();
        if (job === undefined) return this.claim();
        const next = (await q.ackClaimingNext(job, new SettlementEffects().enqueue("mail", enc(`c${n}`)), { index: 0, reserve: () => true })).next;
        this.done++;
        if (next !== undefined && next !== null) this.held.push(next);
        return;
      }
      case 5: {
        // A nack with attempts left: scheduled again after its backoff.
        const job = this.#take();
        if (job === undefined) return this.claim();
        await q.nack(job, "try later");
        return;
      }
      case 6: {
        const job = this.#take();
        if (job === undefined) return this.claim();
        await q.deadLetter(job, "bad input");
        this.dead.push(job.id);
        return;
      }
      case 7: {
        // A cancel of a pending or scheduled job (or of one claimed or done since: refused, nothing moves).
        if (this.waiting.length === 0) return;
        const id = this.waiting.splice(this.rnd.int(this.waiting.length), 1)[0]!;
        await q.cancel(id);
        return;
      }
      case 8: {
        if (this.dead.length === 0) return;
        await q.requeueDead(this.dead.splice(this.rnd.int(this.dead.length), 1)[0]!);
        return;
      }
      default:
        return this.claim();
    }
  }
}

/** A worker of "mail" until `stop()`: enqueues, claims, acks and dead-letters; moves the damaged record refuses are tried again. */
function worker(moves: Moves): { stop(): Promise<void> } {
  let stopped = false;
  const loop = (async () => {
    for (let i = 0; !stopped; i++) {
      await moves.move(i % 3 === 0 ? 0 : i % 3 === 1 ? 2 : i % 11 === 5 ? 6 : 3);
      await turn();
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

/** The record reads as the indexes count now, and its done count as the jobs made done. */
function expectExact(core: QueueCore, record: ReturnType<typeof decodeStats>, done: number): void {
  expect(counted(record)).toEqual(recount(core.engine, "mail"));
  expect(record.done + recountFrom(core.engine, "mail").recount.carriedDone).toBe(done);
}

describe("Queue.recountStats in slices", () => {
  it("moves of every kind between the slices and workers besides: the record written is the count of the indexes at its commit", async () => {
    const rnd = testRandom("recount in slices, moves between");
    const { queue, core, put, record } = await open();
    try {
      const moves = new Moves(queue, rnd);
      await moves.fill();
      for (let round = 0; round < 4; round++) {
        // Drifted: counts that read, each off by a little (done left alone: no index holds the done jobs not retained).
        const r = record();
        await put(encodeStats({ pending: r.pending + 17, scheduled: r.scheduled + 3, claimed: r.claimed + 2, done: r.done, dead: r.dead + 5 }));
        queue.recounts.slice = 3 + rnd.int(6);
        let pauses = 0;
        queue.recounts.pause = async () => {
          pauses++;
          for (let k = rnd.int(3); k > 0; k--) await moves.move();
          await turn();
        };
        const answer = await queue.recountStats("mail");
        // Nothing moved since its commit: what it answered is the count of the indexes now, and the record holds it.
        expect(answer.changed).toBe(true);
        expect(counted(answer.recounted)).toEqual(recount(core.engine, "mail"));
        expect(answer.recounted).toEqual(record());
        expectExact(core, record(), moves.done);
        expect(pauses).toBeGreaterThan(20);
      }
      // With workers moving between the slices and during the commit's await.
      const r = record();
      await put(encodeStats({ ...r, pending: r.pending + 9, dead: r.dead + 1 }));
      queue.recounts.slice = 4;
      queue.recounts.pause = turn;
      const workers = [0, 1, 2].map(() => worker(moves));
      const before = moves.done;
      await queue.recountStats("mail");
      for (let i = 0; i < 10; i++) await turn();
      for (const w of workers) await w.stop();
      expect(moves.done).toBeGreaterThan(before);
      expectExact(core, record(), moves.done);
      // Every move since counts from the recount: a dry run now finds nothing to change.
      expect((await queue.recountStats("mail", { dryRun: true })).changed).toBe(false);
    } finally {
      await queue.close();
    }
  });

  it("a record damaged between the slices is counted whole at the commit, the moves refused meanwhile", async () => {
    const rnd = testRandom("recount in slices, damaged between");
    const { queue, core, put, record } = await open();
    try {
      const moves = new Moves(queue, rnd);
      await moves.fill();
      const done = record().done;
      queue.recounts.slice = 5;
      let pauses = 0;
      queue.recounts.pause = async () => {
        if (++pauses === 4) await put(packr.pack(["x", 0, 0, done, 0]));
        await moves.move();
        await turn();
      };
      const answer = await queue.recountStats("mail");
      expect(answer.damage).toBeDefined();
      expect(moves.refused).toBeGreaterThan(0);
      expect(counted(answer.recounted)).toEqual(recount(core.engine, "mail"));
      expectExact(core, record(), moves.done);
    } finally {
      await queue.close();
    }
  });

  it("a close during a recount ends it with ClosedError and writes nothing", async () => {
    const store = new MemoryStore();
    const { queue, put, record } = await open(store);
    // No claim held: the next open recovers none, so it leaves the record as the close left it.
    for (let i = 0; i < 40; i++) await queue.enqueue("mail", enc(`p${i}`), i % 4 === 0 ? { runAt: T0 + HOUR } : {});
    const r = record();
    const drifted = encodeStats({ ...r, pending: r.pending + 4 });
    await put(drifted);
    queue.recounts.slice = 5;
    let pauses = 0;
    let closing: Promise<void> | undefined;
    queue.recounts.pause = async () => {
      if (++pauses === 3) closing = queue.close();
      await turn();
    };
    const err = await queue.recountStats("mail").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ClosedError);
    expect((err as Error).message).toMatch(/closed while it recounted the stats of queue "mail": nothing was written/);
    await closing;
    // Nothing written: the store opens with the drifted record as it was.
    const again = await open(store);
    try {
      expect(again.core.engine.get(statsKey("mail"))).toEqual(drifted);
    } finally {
      await again.queue.close();
    }
  });

  it("two recounts at once: the second counts after the first committed, and each answers the count at its commit", async () => {
    const rnd = testRandom("recount in slices, two at once");
    const { queue, core, put, record } = await open();
    try {
      const moves = new Moves(queue, rnd);
      await moves.fill();
      const r = record();
      await put(encodeStats({ ...r, pending: r.pending + 11, claimed: r.claimed + 1 }));
      queue.recounts.slice = 4;
      // The count of the indexes at each commit: taken in the pause before the commit's turn would be too early, so
      // each answer is checked against the record as it reads right after its own commit.
      const seen: string[] = [];
      queue.recounts.pause = async () => {
        await moves.move();
        await turn();
      };
      const first = queue.recountStats("mail").then((a) => {
        seen.push("first");
        return a;
      });
      const second = queue.recountStats("mail", { dryRun: true }).then((a) => {
        seen.push("second");
        return a;
      });
      const third = queue.recountStats("mail");
      const [a1, a2, a3] = await Promise.all([first, second, third]);
      expect(seen).toEqual(["first", "second"]);
      expect(a1.changed).toBe(true);
      // The second and third started from the first's record: their moves since count from it, so it needs no change.
      expect(a2.changed).toBe(false);
      expect(a3.changed).toBe(false);
      expect(counted(a3.recounted)).toEqual(recount(core.engine, "mail"));
      expectExact(core, record(), moves.done);
    } finally {
      await queue.close();
    }
  });
});
