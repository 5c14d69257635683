/**
 * @module A queue's stats record whose counts are damaged (text, null, a
 * boolean, a fraction, past exact integers): a move of a job added to them
 * as they were, so one enqueue stored "x1" (or 2 for `true`) and every
 * later read answered it. Now the move, the stats read and the queue's
 * views refuse the record with `StoreCorruptedError` naming its key, and
 * commit nothing; a negative count, which counting from a removed record
 * leaves, is still a count; a record written whole again serves at once.
 * The damage is written under the open queue: an open counts a damaged
 * record again before it moves anything (stats-mend-at-open.test.ts).
 */
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, Queue, StoreCorruptedError, WriteBatch } from "taquba";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import { statsKey } from "../../runtime/queue/keys.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { encodeStats } from "../../runtime/queue/record.js";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import { ENGINE_PREFIX } from "../../runtime/queue/queue.js";

const quiet = { error: () => undefined, warn: () => undefined };
const packr = new Packr({ useRecords: false });

const DAMAGED: ReadonlyArray<readonly [string, readonly unknown[]]> = [
  ["a count in text", ["x", 1, 2, 3, 4]],
  ["a null count", [1, null, 2, 3, 4]],
  ["a boolean count", [1, 1, true, 3, 4]],
  ["a fractional count", [1, 1, 2, 2.5, 4]],
  ["a count past exact integers", [1, 1, 2, 3, 2 ** 60]],
];

/** Writes `value` as the stats record of queue "mail" in store "app", as a damaged store would hold it. */
async function putStats(store: MemoryStore, value: Uint8Array): Promise<void> {
  const engine = await Engine.open(new PrefixedStore(new PrefixedStore(store, "app/"), ENGINE_PREFIX));
  await engine.commit(new WriteBatch().put(statsKey("mail"), value));
  await engine.close();
}

/** Queue "mail" of store "app" with one job pending, its stats record then damaged under the open queue (an open counts a damaged record again: stats-mend-at-open.test.ts). */
async function queueWithStats(value: Uint8Array): Promise<{ queue: Queue; store: MemoryStore }> {
  const store = new MemoryStore();
  const queue = await Queue.open(store, "app", { logger: quiet });
  await queue.enqueue("mail", new Uint8Array([1]));
  // The open queue's engine, reached through a claim's owner on another queue.
  await queue.enqueue("handle", new Uint8Array([0]));
  const handle = (await queue.claim("handle"))!;
  const core = ticketOf(handle)!.owner as QueueCore;
  await queue.ack(handle);
  await core.engine.commit(new WriteBatch().put(statsKey("mail"), value));
  return { queue, store };
}

describe("a stats record whose counts are damaged", () => {
  for (const [what, counts] of DAMAGED) {
    it(`with ${what}: a move and a read of the stats refuse it, naming the record, and commit nothing`, async () => {
      const { queue, store } = await queueWithStats(packr.pack(counts));
      try {
        const refused = await queue.enqueue("mail", new Uint8Array([2])).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(refused).toBeInstanceOf(StoreCorruptedError);
        expect((refused as Error).message).toContain(statsKey("mail"));
        expect((refused as Error).message).toMatch(/whole numbers/);
        await expect(queue.view().stats("mail")).rejects.toBeInstanceOf(StoreCorruptedError);
        // The job enqueued before is the only one: the refused enqueue wrote nothing. A claim moves a count too.
        expect((await queue.view().listJobs("mail", "pending")).items).toHaveLength(1);
        await expect(queue.claim("mail")).rejects.toBeInstanceOf(StoreCorruptedError);
        expect((await queue.view().listJobs("mail", "pending")).items).toHaveLength(1);
      } finally {
        await queue.close().catch(() => undefined);
      }
      // Written whole again (as a repair would), the queue counts from it.
      await putStats(store, encodeStats({ pending: 1, scheduled: 0, claimed: 0, done: 0, dead: 0 }));
      const again = await Queue.open(store, "app", { logger: quiet });
      try {
        await again.enqueue("mail", new Uint8Array([3]));
        expect(await again.view().stats("mail")).toMatchObject({ pending: 2 });
        expect((await again.claim("mail"))?.payload).toEqual(new Uint8Array([1]));
      } finally {
        await again.close();
      }
    });
  }

  it("with a negative count: still a count, moved from as it is", async () => {
    const { queue } = await queueWithStats(packr.pack([-3, 0, 0, 0, 0]));
    try {
      await queue.enqueue("mail", new Uint8Array([2]));
      expect(await queue.view().stats("mail")).toMatchObject({ pending: -2 });
    } finally {
      await queue.close();
    }
  });
});
