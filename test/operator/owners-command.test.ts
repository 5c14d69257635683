/**
 * @module `taquba owners` over a real directory store: a sharded store
 * whose shards a worker process owns (owner, lease expiry, backlog, inbox),
 * the same after the worker left (no owner), an unsharded store under an
 * owner election, and a name with nothing behind it.
 */
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { LocalStore, Queue, TaqubaClient, createShards, runOwnerElection, runShardWorkers, shardOfRun } from "../../runtime/index.js";
import { EXIT, main } from "../../operator/cli/main.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";

const tempDir = useTempDirs("taquba-owners-");
const quiet = { error: () => undefined };

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t), color: false }, out, err };
}

describe("taquba owners", () => {
  it("shows each shard's owner, lease expiry and backlog, and 'none' once the worker left", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    await createShards(store, "app", 2);
    const queues = new Map<number, Queue>();
    const workers = await runShardWorkers(store, "app", {
      processId: "worker-1",
      leaseDurationMs: 20_000,
      renewIntervalMs: 5_000,
      logger: quiet,
      start: async ({ shard, storeName, term }) => {
        const q = await Queue.open(term.guard(store), storeName, { flushIntervalMs: 0 });
        queues.set(shard, q);
        return { stop: () => q.close() };
      },
    });
    await until("both shards owned", () => workers.owned().length === 2 && queues.size === 2, 20_000);
    await queues.get(0)!.enqueue("workflow-steps", new Uint8Array([1]));
    await queues.get(0)!.enqueue("workflow-steps", new Uint8Array([2]), { runAt: Date.now() + 3_600_000 });
    // A client request nobody serves waits in shard 1's inbox (this test runs no inbox server).
    const client = await TaqubaClient.open(store, { name: "app", timeoutMs: 1 });
    let runOnShard1 = "";
    for (let i = 0; !runOnShard1; i++) if (shardOfRun(`r${i}`, 2) === 1) runOnShard1 = `r${i}`;
    await client.cancel(runOnShard1).catch(() => undefined);
    await client.close();

    const url = pathToFileURL(dir).href;
    const t = capture();
    expect(await main(["owners", url, "--name", "app"], t.io)).toBe(EXIT.ok);
    const lines = t.out.join("\n").split("\n");
    expect(lines[0]).toMatch(/^SHARD\s+OWNER\s+LEASE EXPIRES\s+BACKLOG\s+RUNNING\s+INBOX\s+OLDEST REQUEST$/);
    expect(lines[1]).toMatch(/^0\s+worker-1\s+in \d+s\s+2\s+0\s+0\s+-$/);
    expect(lines[2]).toMatch(/^1\s+worker-1\s+in \d+s\s+0\s+0\s+1\s+\d+(ms|s)$/);

    const j = capture();
    expect(await main(["owners", url, "--name", "app", "--json"], j.io)).toBe(EXIT.ok);
    const doc = JSON.parse(j.out.join("\n")) as {
      shards: { shard: number; owner: string; leaseExpiresAt: number; backlog: { pending: number; scheduled: number } }[];
    };
    expect(doc.shards.map((s) => [s.shard, s.owner])).toEqual([
      [0, "worker-1"],
      [1, "worker-1"],
    ]);
    expect(doc.shards[0]!.backlog).toMatchObject({ pending: 1, scheduled: 1 });
    expect(doc.shards[0]!.leaseExpiresAt).toBeGreaterThan(Date.now());

    await workers.stop();
    const after = capture();
    expect(await main(["owners", url, "--name", "app"], after.io)).toBe(EXIT.ok);
    expect(after.out.join("\n")).toMatch(/^0\s+none\s+-\s+2/m);
    expect(after.out.join("\n")).toContain("2 of 2 without an owner");
  }, 60_000);

  it("shows the one owner of an unsharded store under an owner election", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    let queue: Queue | undefined;
    const election = runOwnerElection(store, "solo", {
      processId: "solo-owner",
      logger: quiet,
      start: async (term) => {
        queue = await Queue.open(term.guard(store), "solo", { flushIntervalMs: 0 });
        return { stop: () => queue!.close() };
      },
    });
    await until("the election was won", () => queue !== undefined, 20_000);
    const t = capture();
    expect(await main(["owners", pathToFileURL(dir).href, "--name", "solo"], t.io)).toBe(EXIT.ok);
    expect(t.out.join("\n")).toMatch(/^-\s+solo-owner\s+in \d+s\s+0\s+0\s+0\s+-$/m);
    await election.stop();
  }, 60_000);

  it("answers exit 3 for a name with nothing behind it", async () => {
    const c = capture();
    expect(await main(["owners", pathToFileURL(await tempDir()).href, "--name", "nobody"], c.io)).toBe(EXIT.notFound);
    expect(c.err.join("\n")).toContain('no queue store or owner lease named "nobody"');
  });
});
