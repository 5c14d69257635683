/**
 * @module A store whose queue stats record is damaged still opens: the
 * opening owner counts the record again from the queue's jobs before
 * recovery moves the claims a stopped process held (which rewrites that
 * record), and says so at warn level. Before, every open of such a store
 * failed, and the recount the error advised goes through an owner that
 * could not open. Records that read are left alone.
 */
import { describe, expect, it } from "vitest";
import { Packr } from "msgpackr";
import { LocalStore, Queue } from "taquba";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import { statsKey } from "../../runtime/queue/keys.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { WriteBatch } from "../../runtime/engine/write-batch.js";
import { useTempDirs } from "../support/temp-dirs.js";

const enc = (s: string) => new TextEncoder().encode(s);
const packr = new Packr({ useRecords: false });

interface Logged {
  readonly level: string;
  readonly msg: string;
}
function recordingLogger(into: Logged[]) {
  const at = (level: string) => (_fields: object, msg?: string) => void into.push({ level, msg: msg ?? "" });
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

const tempDir = useTempDirs("stats-mend-");

/** A store of queue "mail" with 5 pending jobs, `held` claims its writer never settled, and done 2. */
async function storeWithHeldClaims(dir: string, held: number): Promise<{ core: QueueCore; queue: Queue }> {
  const queue = await Queue.open(new LocalStore(dir), "q", { flushIntervalMs: 0, logger: recordingLogger([]) });
  for (let i = 0; i < 5 + held + 2; i++) await queue.enqueue("mail", enc(`j${i}`));
  // The engine, reached through a claim's owner: damage is written as a damaged store would hold it.
  const first = (await queue.claim("mail"))!;
  const core = ticketOf(first)!.owner as QueueCore;
  await queue.ack(first);
  await queue.ack((await queue.claim("mail"))!);
  for (let i = 0; i < held; i++) expect(await queue.claim("mail")).not.toBeNull();
  return { core, queue };
}

describe("a damaged stats record at open", () => {
  it.each([
    ["a pending count in text", ["x5", 0, 3, 2, 0]],
    ["a null claimed count", [5, 0, null, 2, 0]],
    ["not five counts", [5, 0, 3]],
  ])("with claims held: %s is counted again, the store opens and the claims are recovered", async (_what, counts) => {
    const dir = await tempDir();
    const { core, queue } = await storeWithHeldClaims(dir, 3);
    await core.engine.commit(new WriteBatch().put(statsKey("mail"), packr.pack(counts)));
    await queue.close();

    const logged: Logged[] = [];
    const reopened = await Queue.open(new LocalStore(dir), "q", { flushIntervalMs: 0, logger: recordingLogger(logged) });
    try {
      // The 3 held claims went back to pending: 5 + 3 pending, nothing claimed, the 2 acks' done count kept where it read.
      const done = typeof counts[3] === "number" ? counts[3] : 0;
      expect(await reopened.view().stats("mail")).toEqual({ pending: 8, scheduled: 0, claimed: 0, done, dead: 0 });
      const warned = logged.filter((l) => l.level === "warn" && l.msg.includes('stats record of queue "mail" was damaged'));
      expect(warned).toHaveLength(1);
      expect(warned[0]!.msg).toContain("counted again from its jobs at open: pending 5, scheduled 0, claimed 3");
      // The queue moves again: every job is claimed and acked, and the counts follow.
      for (let i = 0; i < 8; i++) await reopened.ack((await reopened.claim("mail"))!);
      expect(await reopened.view().stats("mail")).toEqual({ pending: 0, scheduled: 0, claimed: 0, done: done + 8, dead: 0 });
    } finally {
      await reopened.close();
    }
  });

  it("without claims: the record is counted again at open, and a later open finds nothing to mend", async () => {
    const dir = await tempDir();
    const { core, queue } = await storeWithHeldClaims(dir, 0);
    await core.engine.commit(new WriteBatch().put(statsKey("mail"), packr.pack([true, 0, 0, 2, 0])));
    await queue.close();

    const first: Logged[] = [];
    const reopened = await Queue.open(new LocalStore(dir), "q", { flushIntervalMs: 0, logger: recordingLogger(first) });
    expect(await reopened.view().stats("mail")).toEqual({ pending: 5, scheduled: 0, claimed: 0, done: 2, dead: 0 });
    expect(first.filter((l) => l.level === "warn").map((l) => l.msg)).toEqual([expect.stringContaining('the stats record of queue "mail" was damaged')]);
    await reopened.close();

    const second: Logged[] = [];
    const again = await Queue.open(new LocalStore(dir), "q", { flushIntervalMs: 0, logger: recordingLogger(second) });
    expect(second.filter((l) => l.level === "warn")).toEqual([]);
    expect(await again.view().stats("mail")).toEqual({ pending: 5, scheduled: 0, claimed: 0, done: 2, dead: 0 });
    await again.close();
  });

  it("a record that reads, even one that drifted, is left as it is at open", async () => {
    const dir = await tempDir();
    const { core, queue } = await storeWithHeldClaims(dir, 0);
    // Counts that do not match the jobs but read: the open is no recount (an operator's recount is).
    await core.engine.commit(new WriteBatch().put(statsKey("mail"), packr.pack([60, 0, 0, 2, 0])));
    await queue.close();
    const logged: Logged[] = [];
    const reopened = await Queue.open(new LocalStore(dir), "q", { flushIntervalMs: 0, logger: recordingLogger(logged) });
    expect(await reopened.view().stats("mail")).toEqual({ pending: 60, scheduled: 0, claimed: 0, done: 2, dead: 0 });
    expect(logged.filter((l) => l.level === "warn")).toEqual([]);
    await reopened.close();
  });
});
