/**
 * @module The chained ack (`ackClaimingNext`, a workflow's continue) whose
 * settler reserves room only when no job waits, with pending entries ahead
 * of the new job whose record is gone or damaged: it drops the first and
 * sets the second aside as dead (`record_corrupted`), as a claim does, in
 * the ack's own commit, and takes the new job claimed. Before, each such
 * entry refused one chain, for nothing. A good pending job ahead, past
 * such entries, still refuses the chain; the stats equal a recount of the
 * store after each.
 */
import { describe, expect, it } from "vitest";
import { type ClaimedJob, type DeadLetteredEvent, MemoryStore, MockClock, Queue, type QueueStats, SettlementEffects, WriteBatch } from "taquba";
import { settledInTurn } from "../../runtime/queue/claim-settle.js";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import { jobKey } from "../../runtime/queue/keys.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { counted, recount } from "./stats-recount.js";
import { enc } from "./helpers.js";
import { until } from "../support/until.js";

const T0 = 1_764_000_000_000;
const stats = (s: Partial<QueueStats>): QueueStats => ({ pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 0, ...s });

type Breakage = "gone" | "damaged";
type Ack = (q: Queue, job: ClaimedJob, effects: SettlementEffects) => Promise<{ next?: ClaimedJob | undefined }>;

/** Room for the next job only when no job waits: the settler's capacity is taken otherwise. */
const onlyWhenNoneWaits = { index: 0, reserve: (waiting: number) => waiting === 0 };

const ACKS: { name: string; ack: Ack }[] = [
  { name: "ackClaimingNext", ack: (q, j, e) => q.ackClaimingNext(j, e, onlyWhenNoneWaits) },
  {
    name: "ackClaimingNextInTurn",
    ack: async (q, j, e) => {
      const s = q.ackClaimingNextInTurn(j, e, onlyWhenNoneWaits);
      return s instanceof Promise ? s : settledInTurn(s);
    },
  },
];

async function live() {
  const warnings: string[] = [];
  const dead: DeadLetteredEvent[] = [];
  const logger = { debug: () => undefined, info: () => undefined, error: () => undefined, warn: (_o: unknown, msg?: string) => void warnings.push(msg ?? "") };
  const queue = await Queue.open(new MemoryStore(), "q", { clock: new MockClock(T0), flushIntervalMs: 0, logger, onDeadLettered: (e) => void dead.push(e) });
  await queue.enqueue("w", enc("current"), { jobId: "current" });
  const current = (await queue.claim("w"))!;
  const core = ticketOf(current)!.owner as QueueCore;
  /** Enqueues `id` pending on "w" and breaks its record as `how` says. */
  const broken = async (id: string, how: Breakage, priority?: number) => {
    await queue.enqueue("w", enc(id), { jobId: id, ...(priority === undefined ? {} : { priority }) });
    const own = core.engine.get(jobKey(id))!;
    await core.engine.commit(how === "gone" ? new WriteBatch().delete(jobKey(id)) : new WriteBatch().put(jobKey(id), own.subarray(0, 3)));
  };
  const modelled = async () => expect(counted(await queue.view().stats("w"))).toEqual(recount(core.engine, "w"));
  return { queue, core, current, warnings, dead, broken, modelled };
}

describe.each(ACKS)("$name with pending entries ahead whose records are broken", ({ ack }) => {
  it.each<{ hows: Breakage[] }>([{ hows: ["gone"] }, { hows: ["damaged"] }, { hows: ["gone", "damaged", "gone"] }])(
    "takes the new job claimed, the entries ($hows) dropped or set aside",
    async ({ hows }) => {
      const q = await live();
      try {
        for (const [i, how] of hows.entries()) await q.broken(`broken-${i}`, how);
        const out = await ack(q.queue, q.current, new SettlementEffects().enqueue("w", enc("next"), { jobId: "next" }));
        expect(out.next?.id).toBe("next");
        const damaged = hows.flatMap((h, i) => (h === "damaged" ? [`broken-${i}`] : []));
        const gone = hows.flatMap((h, i) => (h === "gone" ? [`broken-${i}`] : []));
        await until("the set-aside jobs announced", async () => q.dead.length === damaged.length);
        expect(q.dead.map((e) => [e.jobId, e.reason])).toEqual(damaged.map((id) => [id, "record_corrupted"]));
        for (const id of damaged) expect((await q.queue.view().job(id))?.state).toBe("dead");
        for (const id of gone) expect(q.warnings.filter((w) => w.includes(`job ${id} `))).toHaveLength(1);
        expect(await q.queue.view().stats("w")).toEqual(stats({ claimed: 1, done: 1, dead: damaged.length }));
        await q.modelled();
        await q.queue.ack(out.next!);
        expect(await q.queue.claim("w")).toBeNull();
        await q.modelled();
      } finally {
        await q.queue.close();
      }
    },
  );

  it("leaves the new job pending behind a good job past the broken entries, which are still dropped and set aside", async () => {
    const q = await live();
    try {
      await q.broken("gone", "gone", 0);
      await q.broken("damaged", "damaged", 0);
      await q.queue.enqueue("w", enc("good"), { jobId: "good" });
      const out = await ack(q.queue, q.current, new SettlementEffects().enqueue("w", enc("next"), { jobId: "next" }));
      expect(out.next).toBeUndefined();
      await until("the set-aside job announced", async () => q.dead.length === 1);
      expect(await q.queue.view().stats("w")).toEqual(stats({ pending: 2, done: 1, dead: 1 }));
      await q.modelled();
      const order: string[] = [];
      for (let j = await q.queue.claim("w"); j !== null; j = await q.queue.claim("w")) {
        order.push(j.id);
        await q.queue.ack(j);
      }
      expect(order).toEqual(["good", "next"]);
    } finally {
      await q.queue.close();
    }
  });

  it("sets aside a job ahead that an earlier chain found good, once its record is damaged since", async () => {
    const q = await live();
    try {
      await q.queue.enqueue("w", enc("head"), { jobId: "head" });
      const first = await ack(q.queue, q.current, new SettlementEffects().enqueue("w", enc("n1"), { jobId: "n1" }));
      expect(first.next).toBeUndefined();
      const own = q.core.engine.get(jobKey("head"))!;
      await q.core.engine.commit(new WriteBatch().put(jobKey("head"), own.subarray(0, 3)));
      await q.queue.enqueue("w", enc("holder"), { jobId: "holder", priority: 0 });
      const holder = (await q.queue.claim("w"))!;
      expect(holder.id).toBe("holder");
      const out = await ack(q.queue, holder, new SettlementEffects().enqueue("w", enc("n2"), { jobId: "n2" }));
      // n1 is still pending ahead of n2: the chain is refused, and the damaged head set aside on the way.
      expect(out.next).toBeUndefined();
      await until("the set-aside job announced", async () => q.dead.length === 1);
      expect(q.dead[0]).toMatchObject({ jobId: "head", reason: "record_corrupted" });
      expect(await q.queue.view().stats("w")).toEqual(stats({ pending: 2, done: 2, dead: 1 }));
      await q.modelled();
    } finally {
      await q.queue.close();
    }
  });

  it("takes the new job past a broken entry of a worse priority without touching it", async () => {
    const q = await live();
    try {
      await q.broken("behind", "gone", 9);
      const out = await ack(q.queue, q.current, new SettlementEffects().enqueue("w", enc("next"), { jobId: "next", priority: 1 }));
      expect(out.next?.id).toBe("next");
      expect(q.warnings.filter((w) => w.includes("behind"))).toEqual([]);
      expect(await q.queue.view().stats("w")).toEqual(stats({ pending: 1, claimed: 1, done: 1 }));
      await q.queue.ack(out.next!);
    } finally {
      await q.queue.close();
    }
  });
});
