/**
 * @module The mend of a damaged stats record (at open, and an operator's
 * recount) beside a claimed index entry that does not read. A claim taken
 * from pending carries no done count, so its entry is never read by the
 * claim's settlement nor by the recovery at open, which drop it as it is;
 * the recount read every claimed entry for the done counts they carry, so
 * one such entry failed the mend, and with it every open of the store,
 * with an error that told the operator to restore a backup. An entry that
 * does not read now counts as carrying none (the done count is never
 * lowered for it).
 */
import { describe, expect, it } from "vitest";
import { Packr } from "msgpackr";
import { LocalStore, Queue } from "taquba";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import { claimedKey, statsKey } from "../../runtime/queue/keys.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { WriteBatch } from "../../runtime/engine/write-batch.js";
import { useTempDirs } from "../support/temp-dirs.js";

const enc = (s: string) => new TextEncoder().encode(s);
const packr = new Packr({ useRecords: false });
const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
const tempDir = useTempDirs("stats-mend-entry-");

/** Queue "mail" with 6 jobs: one acked, two claims held, the first held claim's entry overwritten with bytes that are no entry. */
async function heldClaimWithDamagedEntry(dir: string) {
  const queue = await Queue.open(new LocalStore(dir), "q", { flushIntervalMs: 0, logger: silent });
  for (let i = 0; i < 6; i++) await queue.enqueue("mail", enc(`j${i}`));
  const first = (await queue.claim("mail"))!;
  const core = ticketOf(first)!.owner as QueueCore;
  await queue.ack(first);
  const held = [(await queue.claim("mail"))!, (await queue.claim("mail"))!];
  await core.engine.commit(new WriteBatch().put(claimedKey("mail", held[0]!.id), new Uint8Array([0x80, 0x80])));
  return { queue, core, held };
}

describe("a claimed entry that does not read, beside the mend of the stats", () => {
  it("a damaged stats record is mended at open and the store opens, the held claims recovered", async () => {
    const dir = await tempDir();
    const { queue, core } = await heldClaimWithDamagedEntry(dir);
    await core.engine.commit(new WriteBatch().put(statsKey("mail"), packr.pack(["x", 0, 0, 1, 0])));
    await queue.close();

    const reopened = await Queue.open(new LocalStore(dir), "q", { flushIntervalMs: 0, logger: silent });
    try {
      expect(await reopened.view().stats("mail")).toEqual({ pending: 5, scheduled: 0, claimed: 0, done: 1, dead: 0 });
      for (let i = 0; i < 5; i++) await reopened.ack((await reopened.claim("mail"))!);
      expect(await reopened.view().stats("mail")).toEqual({ pending: 0, scheduled: 0, claimed: 0, done: 6, dead: 0 });
    } finally {
      await reopened.close();
    }
  });

  it("an operator's recount of a damaged record while the claim is held writes the counts, and the claims settle after", async () => {
    const dir = await tempDir();
    const { queue, core, held } = await heldClaimWithDamagedEntry(dir);
    try {
      await core.engine.commit(new WriteBatch().put(statsKey("mail"), packr.pack([3, 0, null, 1, 0])));
      const dry = await queue.recountStats("mail", { dryRun: true });
      expect(dry).toMatchObject({ damage: expect.any(String), recounted: { pending: 3, scheduled: 0, claimed: 2, done: 1, dead: 0 }, carriedDone: 0 });
      await queue.recountStats("mail", { plan: dry.plan });
      for (const j of held) await queue.ack(j);
      expect(await queue.view().stats("mail")).toEqual({ pending: 3, scheduled: 0, claimed: 0, done: 3, dead: 0 });
    } finally {
      await queue.close();
    }
  });
});
