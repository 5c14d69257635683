/**
 * @module The stats recount on a sharded store (a real directory, every
 * shard's owner in this process): `TaqubaClient.recountStats` with a shard
 * goes through that shard's owner and recounts only its record (each shard
 * keeps its own stats); a shard that holds no job and no record of the
 * queue is refused with `ValidationError`, nothing written, as is a
 * recount that names no shard or one past the last. `taquba queue recount
 * <queue> --shard N` does the same from the CLI: the dry run's plan names
 * the shard, the confirmed plan writes, and a shard without the queue or
 * a missing `--shard` exits with a usage error.
 */
import { pathToFileURL } from "node:url";
import { Packr } from "msgpackr";
import { afterEach, describe, expect, it } from "vitest";
import { LocalStore, type Queue, StatsPlanChangedError, ValidationError } from "../../runtime/index.js";
import { EXIT, main } from "../../operator/cli/main.js";
import { WriteBatch } from "../../runtime/engine/write-batch.js";
import { ticketOf } from "../../runtime/queue/claimed-job.js";
import { statsKey } from "../../runtime/queue/keys.js";
import type { QueueCore } from "../../runtime/queue/queue-core.js";
import { encodeStats } from "../../runtime/queue/record.js";
import { STEP_QUEUE } from "../client/fixtures/app.js";
import { openShardedApp } from "../operator/fixtures/sharded-app.js";
import { scaledForLoad } from "../support/load.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-sharded-recount-");
const SHARDS = 3;
const enc = new TextEncoder();
const packr = new Packr({ useRecords: false });
const TIMEOUT_MS = scaledForLoad(120_000);

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
}, TIMEOUT_MS);

/**
 * Three shards; queue "mail" on shard 0 (two pending, one claimed, its record damaged) and on shard 2 (one
 * pending, one dead, its record drifted); none on shard 1.
 */
async function shardedMail() {
  const dir = await tempDir();
  const store = new LocalStore(dir);
  const { owners, client } = await openShardedApp(store, SHARDS, cleanups);
  const write = async (queue: Queue, bytes: Uint8Array) => {
    await queue.enqueue("handle", enc.encode("h"));
    const handle = (await queue.claim("handle"))!;
    const core = ticketOf(handle)!.owner as QueueCore;
    await queue.ack(handle);
    await core.engine.commit(new WriteBatch().put(statsKey("mail"), bytes));
    await queue.flush();
  };
  const q0 = owners[0]!.queue;
  for (const p of ["a", "b", "c"]) await q0.enqueue("mail", enc.encode(p));
  expect(await q0.claim("mail")).not.toBeNull();
  await write(q0, packr.pack(["x2", 0, 1, 0, 0]));
  const q2 = owners[2]!.queue;
  await q2.enqueue("mail", enc.encode("once"), { maxAttempts: 1 });
  await q2.nack((await q2.claim("mail"))!, "failed for good");
  await q2.enqueue("mail", enc.encode("p"));
  await write(q2, encodeStats({ pending: 7, scheduled: 0, claimed: 0, done: 0, dead: 0 }));
  return { dir, owners, client, q0, q2 };
}

describe("the stats recount on a sharded store", () => {
  it(
    "the client recounts through the owner of the shard it names, and refuses a shard that holds no job of the queue",
    async () => {
      const { client, q0, q2 } = await shardedMail();
      const dry = await client.recountStats("mail", { dryRun: true }, 0);
      expect(dry).toMatchObject({ queueName: "mail", dryRun: true, changed: true, recounted: { pending: 2, scheduled: 0, claimed: 1, done: 0, dead: 0 } });
      expect(dry.damage).toMatch(/"x2"/);
      const done = await client.recountStats("mail", { plan: dry.plan }, 0);
      expect(done).toMatchObject({ dryRun: false, changed: true });
      expect(await q0.view().stats("mail")).toEqual({ pending: 2, scheduled: 0, claimed: 1, done: 0, dead: 0 });
      await q0.enqueue("mail", enc.encode("d"));
      // Shard 2's record is its own: still drifted until its recount.
      const s2 = await q2.view().stats("mail");
      expect(s2.pending).toBe(7);
      const two = await client.recountStats("mail", {}, 2);
      expect(two).toMatchObject({ changed: true, stored: { pending: 7 }, recounted: { pending: 1, claimed: 0, dead: 1 } });
      expect(await q2.view().stats("mail")).toMatchObject({ pending: 1, claimed: 0, dead: 1 });
      expect(await q0.view().stats("mail")).toMatchObject({ pending: 3, claimed: 1 });

      // Shard 1 has no job and no record of "mail": refused, naming the shard, nothing written.
      const none = await client.recountStats("mail", {}, 1).catch((e: unknown) => e);
      expect(none).toBeInstanceOf(ValidationError);
      expect((none as Error).message).toMatch(/shard 1 holds no queue "mail" .*nothing was written/);
      await expect(client.recountStats("mail", { dryRun: true }, 1)).rejects.toThrow(/shard 1 holds no queue "mail"/);
      // No shard, or one past the last: refused before anything is asked.
      await expect(client.recountStats("mail", { dryRun: true })).rejects.toThrow(/each of the 3 shards keeps its own stats .*from 0 to 2, got undefined/);
      await expect(client.recountStats("mail", { dryRun: true }, 3)).rejects.toBeInstanceOf(ValidationError);
      // A plan made on one shard does not confirm another's recount.
      const plan0 = (await client.recountStats("mail", { dryRun: true }, 0)).plan;
      await expect(client.recountStats("mail", { plan: plan0 }, 2)).rejects.toBeInstanceOf(StatsPlanChangedError);
    },
    TIMEOUT_MS,
  );

  it(
    "taquba queue recount --shard: the dry run's plan names the shard, the confirmed plan writes that shard's record only",
    async () => {
      const { dir, q0, q2 } = await shardedMail();
      const url = pathToFileURL(dir).href;
      const cli = async (...rest: string[]) => {
        const out: string[] = [];
        const err: string[] = [];
        const code = await main(["queue", "recount", url, ...rest, "--name", "app", "--step-queue", STEP_QUEUE, "--timeout", "60000"], {
          out: (t: string) => out.push(t),
          err: (t: string) => err.push(t),
          color: false,
        });
        return { code, out: out.join("\n"), err: err.join("\n") };
      };
      const dry = await cli("mail", "--shard", "0", "--dry-run");
      expect(dry.code, dry.err).toBe(EXIT.ok);
      expect(dry.out).toMatch(/^queue mail: its stats record is damaged/);
      expect(dry.out).toContain("dry run, nothing written: the recount would write pending 2, scheduled 0, claimed 1, done 0, dead 0");
      const token = /\nplan ([0-9a-f]{64}): confirm this plan with taquba queue recount mail --shard 0 --plan \1/.exec(dry.out)?.[1];
      expect(token, dry.out).toBeDefined();
      await expect(q0.view().stats("mail")).rejects.toThrow(/"x2"/);

      // Shard 2's plan is not shard 0's: refused there with exit 4, nothing written.
      const elsewhere = await cli("mail", "--shard", "2", "--plan", token!);
      expect(elsewhere.code).toBe(EXIT.refused);
      expect((await q2.view().stats("mail")).pending).toBe(7);

      const done = await cli("mail", "--shard", "0", "--plan", token!);
      expect(done.code, done.err).toBe(EXIT.ok);
      expect(done.out).toContain("recounted: the record now holds pending 2, scheduled 0, claimed 1, done 0, dead 0");
      expect(await q0.view().stats("mail")).toEqual({ pending: 2, scheduled: 0, claimed: 1, done: 0, dead: 0 });
      expect((await q2.view().stats("mail")).pending).toBe(7);
      const json = await cli("mail", "--shard", "2", "--json");
      expect(json.code, json.err).toBe(EXIT.ok);
      expect(JSON.parse(json.out)).toMatchObject({ queueName: "mail", changed: true, recounted: { pending: 1, dead: 1 } });
      expect(await q2.view().stats("mail")).toMatchObject({ pending: 1, dead: 1 });

      const none = await cli("mail", "--shard", "1", "--dry-run");
      expect(none.code).toBe(EXIT.usage);
      expect(none.err).toMatch(/shard 1 holds no queue "mail"/);
      const missing = await cli("mail", "--dry-run");
      expect(missing.code).toBe(EXIT.usage);
      expect(missing.err).toMatch(/name the shard to recount, a whole number from 0 to 2/);
      for (const bad of ["3", "-1", "x"]) expect((await cli("mail", "--shard", bad, "--dry-run")).code, bad).toBe(EXIT.usage);
    },
    TIMEOUT_MS,
  );
});
