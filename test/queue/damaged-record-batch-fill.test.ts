/**
 * @module A batch claim (`claimBatch` with a size) among damaged records
 * and pending entries whose record is gone: it sets the damaged jobs aside
 * and drops the dangling entries as a single claim does, and goes on
 * scanning until it holds as many good jobs as its size or none is left,
 * in claim order; with a concurrency limit too. The stats equal a recount
 * of the store after each claim.
 */
import { describe, expect, it } from "vitest";
import { type DeadLetteredEvent, MemoryStore, MockClock, Queue, type QueueStats, WriteBatch } from "taquba";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import { jobKey } from "../../runtime/queue/keys.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { until } from "../support/until.js";
import { counted, recount } from "./stats-recount.js";

const T0 = 1_764_000_000_000;
const enc = (s: string) => new TextEncoder().encode(s);
const stats = (s: Partial<QueueStats>): QueueStats => ({ pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 0, ...s });

/** A queue holding `layout` in claim order: `d` a damaged record, `m` a missing one, `g` a good job. */
async function queueOf(layout: string, limited: boolean) {
  const dead: DeadLetteredEvent[] = [];
  const queue = await Queue.open(new MemoryStore(), "q", {
    clock: new MockClock(T0),
    flushIntervalMs: 0,
    logger: { debug: () => undefined, info: () => undefined, error: () => undefined, warn: () => undefined },
    onDeadLettered: (e) => void dead.push(e),
    queueConfigs: { w: limited ? { concurrency: { limit: 100 } } : {} },
  });
  await queue.enqueue("h", enc("h"));
  const handle = (await queue.claim("h"))!;
  const core = ticketOf(handle)!.owner as QueueCore;
  await queue.ack(handle);
  const good: string[] = [];
  const batch = new WriteBatch();
  let i = 0;
  for (const kind of layout) {
    const id = `${kind}${String(i++).padStart(3, "0")}`;
    await queue.enqueue("w", enc(id), { jobId: id });
    if (kind === "g") good.push(id);
    if (kind === "d") batch.put(jobKey(id), new Uint8Array([0xc1]));
    if (kind === "m") batch.delete(jobKey(id));
  }
  await core.engine.commit(batch);
  return { queue, core, dead, good };
}

describe.each([
  ["without limits", false],
  ["with a concurrency limit", true],
])("a batch claim among damaged and missing records, %s", (_name, limited) => {
  it.each([
    ["damaged at the head", "ddgggggggg", 5],
    ["missing at the head", "mmmggggggg", 5],
    ["mixed through the batch", "gdgmgdgmgggg", 5],
    ["more damaged than the size", "ddddddddgggg", 3],
    ["fewer good jobs than the size", "dgmdg", 5],
    ["only damaged", "dmdm", 4],
  ])("%s fills the batch with the good jobs in order", async (_what, layout, size) => {
    const q = await queueOf(layout, limited);
    try {
      const damaged = [...layout].filter((k) => k === "d").length;
      const missing = [...layout].filter((k) => k === "m").length;
      const first = await q.queue.claimBatch("w", size);
      expect(first.map((j) => j.id)).toEqual(q.good.slice(0, size));
      const rest = await q.queue.claimBatch("w", layout.length);
      expect(rest.map((j) => j.id)).toEqual(q.good.slice(size));
      await until("the set-asides announced", async () => q.dead.length === damaged);
      expect(await q.queue.view().stats("w")).toEqual(stats({ claimed: q.good.length, dead: damaged }));
      expect(counted(await q.queue.view().stats("w"))).toEqual(recount(q.core.engine, "w"));
      for (const j of [...first, ...rest]) await q.queue.ack(j);
      expect(await q.queue.view().stats("w")).toEqual(stats({ done: q.good.length, dead: damaged }));
      expect(counted(await q.queue.view().stats("w"))).toEqual(recount(q.core.engine, "w"));
      expect(missing + damaged + q.good.length).toBe(layout.length);
    } finally {
      await q.queue.close();
    }
  });
});
