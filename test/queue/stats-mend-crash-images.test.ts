/**
 * @module A crash at every store write of an open that mends a damaged
 * stats record and then recovers the claims a stopped writer held: each
 * prefix of that open's writes, in the order they landed, over the store
 * it opened, is a state a crash could leave. A later open of each mends
 * what is left to mend and recovers what is left to recover, and the store
 * then counts and hands out every job exactly once.
 */
import { describe, expect, it } from "vitest";
import { Packr } from "msgpackr";
import { MemoryStore, Queue } from "taquba";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import { statsKey } from "../../runtime/queue/keys.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { WriteBatch } from "../../runtime/engine/write-batch.js";
import { LandedWritesStore, storeAfter } from "../support/landed-writes.js";

const enc = (s: string) => new TextEncoder().encode(s);
const packr = new Packr({ useRecords: false });
const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
const OPTIONS = { flushIntervalMs: 0, logger: silent };

describe("a crash at every write of an open that mends the stats and recovers claims", () => {
  it("leaves a store a later open brings to exact counts and jobs", async () => {
    const base = new MemoryStore();
    const queue = await Queue.open(base, "q", OPTIONS);
    for (let i = 0; i < 8; i++) await queue.enqueue("mail", enc(`j${i}`));
    const first = (await queue.claim("mail"))!;
    const core = ticketOf(first)!.owner as QueueCore;
    await queue.ack(first);
    for (let i = 0; i < 3; i++) expect(await queue.claim("mail")).not.toBeNull();
    await core.engine.commit(new WriteBatch().put(statsKey("mail"), packr.pack(["x", 0, 0, 1, 0])));
    // No close: the writer stopped holding 3 claims over a damaged record.

    const recording = new LandedWritesStore(await storeAfter([], base));
    const mending = await Queue.open(recording, "q", OPTIONS);
    await mending.flush();
    await mending.close();
    expect(recording.writes.some((w) => w.key.includes("wal/"))).toBe(true);

    for (let n = 0; n <= recording.writes.length; n++) {
      const image = await storeAfter(recording.writes.slice(0, n), base);
      const where = `crash after ${n} of ${recording.writes.length} writes`;
      const again = await Queue.open(image, "q", OPTIONS);
      try {
        expect(await again.view().stats("mail"), where).toEqual({ pending: 7, scheduled: 0, claimed: 0, done: 1, dead: 0 });
        const got = new Set<string>();
        for (let j = await again.claim("mail"); j !== null; j = await again.claim("mail")) {
          got.add(new TextDecoder().decode(j.payload));
          await again.ack(j);
        }
        expect(got.size, where).toBe(7);
        expect(await again.view().stats("mail"), where).toEqual({ pending: 0, scheduled: 0, claimed: 0, done: 8, dead: 0 });
      } finally {
        await again.close();
      }
    }
  });
});
