/**
 * @module Opens racing over a store whose stats record is damaged and whose
 * writer stopped holding two claims (a crash): each open mends the record
 * before it recovers the claims, and a newer open fences an older one in
 * the middle of that. Whichever opens win, the store then counts and moves
 * its jobs exactly: the mend of a fenced open never lands beside the
 * winner's recovery twice.
 */
import { describe, expect, it } from "vitest";
import { Packr } from "msgpackr";
import { MemoryStore, Queue } from "taquba";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import { statsKey } from "../../runtime/queue/keys.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { WriteBatch } from "../../runtime/engine/write-batch.js";
import { turns } from "../support/turns.js";

const enc = (s: string) => new TextEncoder().encode(s);
const packr = new Packr({ useRecords: false });
const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
const OPTIONS = { flushIntervalMs: 0, logger: silent };

describe("opens racing over a damaged stats record and held claims", () => {
  it.each([0, 1, 2, 4])("three opens, each %i turns after the one before: the counts and the jobs end exact", async (gap) => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "q", OPTIONS);
    for (let i = 0; i < 6; i++) await queue.enqueue("mail", enc(`j${i}`));
    const first = (await queue.claim("mail"))!;
    const core = ticketOf(first)!.owner as QueueCore;
    await queue.ack(first);
    expect(await queue.claim("mail")).not.toBeNull();
    expect(await queue.claim("mail")).not.toBeNull();
    await core.engine.commit(new WriteBatch().put(statsKey("mail"), packr.pack(["x", 0, 0, 1, 0])));
    // No close: the writer stopped.
    const opens = await Promise.allSettled(
      [0, 1, 2].map(async (k) => {
        await turns(gap * k);
        return Queue.open(store, "q", OPTIONS);
      }),
    );
    for (const o of opens) if (o.status === "fulfilled") await o.value.close().catch(() => undefined);
    const last = await Queue.open(store, "q", OPTIONS);
    try {
      expect(await last.view().stats("mail")).toEqual({ pending: 5, scheduled: 0, claimed: 0, done: 1, dead: 0 });
      const got = new Set<string>();
      for (let j = await last.claim("mail"); j !== null; j = await last.claim("mail")) {
        got.add(new TextDecoder().decode(j.payload));
        await last.ack(j);
      }
      expect(got.size).toBe(5);
      expect(await last.view().stats("mail")).toEqual({ pending: 0, scheduled: 0, claimed: 0, done: 6, dead: 0 });
    } finally {
      await last.close();
    }
  });
});
