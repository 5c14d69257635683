/**
 * @module The operator CLI on a sharded store (a real directory, every
 * shard's owner in this process): `runs list` merges the shards and pages
 * them with one cursor, `runs show` and `runs cancel` reach the run's
 * shard, `groups list` and `groups show` count a group's members on every
 * shard, a bad cursor is a usage error, and a per-queue command names the
 * shards to choose from.
 */
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { LocalStore, shardOfRun } from "../../runtime/index.js";
import { EXIT, main } from "../../operator/cli/main.js";
import { shardStoreName } from "../../runtime/client/shard-route.js";
import { STEP_QUEUE } from "../client/fixtures/app.js";
import { openShardedApp, openShardOwners } from "./fixtures/sharded-app.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-sharded-cli-");
const SHARDS = 3;
const enc = new TextEncoder();
const json = (v: unknown): Uint8Array => enc.encode(JSON.stringify(v));

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t), color: false }, out, err };
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("the operator CLI on a sharded store", () => {
  it("lists, shows and cancels runs and shows groups over every shard", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const { client } = await openShardedApp(store, SHARDS, cleanups);

    const ids = Array.from({ length: 9 }, (_, i) => `run-${i}`);
    expect(new Set(ids.map((id) => shardOfRun(id, SHARDS))).size).toBe(SHARDS);
    for (const id of ids) await client.submit({ runId: id, input: json(id === "run-4" ? { wait: `w:${id}` } : { id }) });
    for (const id of ids) if (id !== "run-4") await client.wait(id);
    const group = client.group("nightly");
    await group.submit(Array.from({ length: 8 }, (_, k) => ({ key: `k${k}`, input: json({ k }) })));
    await group.join();

    const url = pathToFileURL(dir).href;
    /** `taquba <group> <verb> <url> <rest...> --name app --step-queue ...` */
    const cli = async (group: string, verb: string, ...rest: string[]) => {
      const t = capture();
      const code = await main([group, verb, url, ...rest, "--name", "app", "--step-queue", STEP_QUEUE], t.io);
      return { code, out: t.out.join("\n"), err: t.err.join("\n") };
    };

    // Pages of 4 with the printed cursor: every run of every shard (and the group's members) once.
    const listed: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 20; pages++) {
      const r = await cli("runs", "list", "--json", "--limit", "4", ...(cursor === undefined ? [] : ["--cursor", cursor]));
      expect(r.code, r.err).toBe(EXIT.ok);
      const page = JSON.parse(r.out) as { runs: { runId: string }[]; nextCursor?: string };
      listed.push(...page.runs.map((x) => x.runId));
      cursor = page.nextCursor;
      if (cursor === undefined) break;
    }
    expect(cursor).toBeUndefined();
    expect(listed.filter((id) => id.startsWith("run-")).sort()).toEqual(ids);
    expect(listed).toHaveLength(ids.length + 8);
    expect(new Set(listed).size).toBe(listed.length);

    const waiting = await cli("runs", "list", "--state", "awaiting_signal");
    expect(waiting.code).toBe(EXIT.ok);
    expect(waiting.out).toMatch(/run-4\s+-\s+awaiting_signal/);

    const bad = await cli("runs", "list", "--cursor", "not-a-cursor");
    expect(bad.code).toBe(EXIT.usage);
    expect(bad.err).toContain("not a listing cursor");

    const show = await cli("runs", "show", "run-7", "--json");
    expect(show.code, show.err).toBe(EXIT.ok);
    expect(JSON.parse(show.out)).toMatchObject({ runId: "run-7", state: "succeeded" });

    const cancel = await cli("runs", "cancel", "run-4");
    expect(cancel.code, cancel.err).toBe(EXIT.ok);
    expect((await client.wait("run-4")).termination.status).toBe("cancelled");

    const groups = await cli("groups", "list", "--json");
    expect(groups.code, groups.err).toBe(EXIT.ok);
    expect(JSON.parse(groups.out)).toMatchObject({ groups: [{ groupId: "nightly", members: { total: 8, succeeded: 8 } }] });
    const groupTable = await cli("groups", "list");
    expect(groupTable.out).toMatch(/^nightly\s+\S.*\s8\s+0\s+8\s+0\s+0$/m);
    const g = await cli("groups", "show", "nightly", "--json");
    expect(g.code, g.err).toBe(EXIT.ok);
    const summary = JSON.parse(g.out) as { counts: { total: number; succeeded: number }; members: { key: string; state: string }[] };
    expect(summary.counts).toMatchObject({ total: 8, succeeded: 8, unsubmitted: 0 });
    expect(summary.members.map((m) => m.state)).toEqual(Array(8).fill("succeeded"));
    expect(new Set(summary.members.map((m) => group.shardOf(m.key))).size, "members on several shards").toBeGreaterThan(1);

    // A command over one queue store names the shards to pick from.
    const jobs = await cli("queue", "jobs", STEP_QUEUE);
    expect(jobs.code).not.toBe(EXIT.ok);
    expect(jobs.err).toContain("--name app/shards/<0..2>");
  }, 90_000);

  it("lists dead letters and queue stats of every shard with a shard column, and pages one shard's dead letters", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const owners = await openShardOwners(store, SHARDS, cleanups);
    // Dead letters of a plain queue on shards 0 (three) and 2 (one); none on shard 1.
    const dead = new Map([
      [0, ["bounce-a", "bounce-b", "bounce-c"]],
      [2, ["bounce-z"]],
    ]);
    for (const [shard, ids] of dead) {
      const q = owners[shard]!.queue;
      for (const id of ids) {
        await q.enqueue("mail", enc.encode(id), { jobId: id, maxAttempts: 1 });
        const job = await q.claim("mail");
        await q.nack(job!, `550 mailbox of ${id} unavailable`);
      }
      await q.enqueue("mail", enc.encode("later"), { jobId: `pending-${shard}` });
    }
    for (const o of owners) await o.queue.flush();

    const url = pathToFileURL(dir).href;
    const cli = async (group: string, verb: string, ...rest: string[]) => {
      const t = capture();
      const code = await main([group, verb, url, ...(rest.includes("--name") ? [] : ["--name", "app"]), ...rest], t.io);
      return { code, out: t.out.join("\n"), err: t.err.join("\n") };
    };

    const list = await cli("dead", "list");
    expect(list.code, list.err).toBe(EXIT.ok);
    expect(list.out).toMatch(/^SHARD\s+JOB\s+QUEUE/m);
    for (const id of dead.get(0)!) expect(list.out).toMatch(new RegExp(`^0\\s+${id}\\s+mail\\s.*550 mailbox of ${id}`, "m"));
    expect(list.out).toMatch(/^2\s+bounce-z\s+mail\s/m);
    const all = JSON.parse((await cli("dead", "list", "--json")).out) as { shards: { shard: number; items: { id: string }[]; next?: string }[] };
    expect(all.shards.map((s) => [s.shard, s.items.map((j) => j.id)])).toEqual([
      [0, dead.get(0)],
      [1, []],
      [2, dead.get(2)],
    ]);

    // A page of 2 per shard: shard 0 continues with --shard 0 --after, which only a shard's position allows.
    const paged = await cli("dead", "list", "--limit", "2");
    expect(paged.out).toMatch(/more on shard 0: --shard 0 --after (\S+)/);
    const after = /--after (\S+)/.exec(paged.out)![1]!;
    const rest = JSON.parse((await cli("dead", "list", "--json", "--shard", "0", "--after", after)).out) as {
      shards: { shard: number; items: { id: string }[] }[];
    };
    expect(rest.shards.map((s) => [s.shard, s.items.map((j) => j.id)])).toEqual([[0, ["bounce-c"]]]);
    const noShard = await cli("dead", "list", "--after", after);
    expect(noShard.code).toBe(EXIT.usage);
    expect(noShard.err).toContain("give --shard with --after");
    for (const bad of ["3", "-1", "x", "1e3"]) expect((await cli("dead", "list", "--shard", bad)).code, bad).toBe(EXIT.usage);
    expect((await cli("dead", "list", "--shard", "1")).out).toBe("no dead letters on shard 1");

    const stats = await cli("queue", "stats");
    expect(stats.code, stats.err).toBe(EXIT.ok);
    expect(stats.out).toMatch(/^SHARD\s+QUEUE\s+PENDING/m);
    expect(stats.out).toMatch(/^0\s+mail\s+1\s+0\s+0\s+0\s+3\s/m);
    expect(stats.out).toMatch(/^2\s+mail\s+1\s+0\s+0\s+0\s+1\s/m);
    expect(stats.out).toMatch(/^SHARD\s+DEAD LETTERS\s+WAL OBJECTS\s+LAST CHECKPOINT/m);
    expect(stats.out).toMatch(/^0\s+3\s+\d+\s/m);
    expect(stats.out).toMatch(/^1\s+0\s+\d+\s/m);
    const statsJson = JSON.parse((await cli("queue", "stats", "--json")).out) as { shards: { shard: number; health: { deadLetters: number } | null }[] };
    expect(statsJson.shards.map((s) => [s.shard, s.health?.deadLetters])).toEqual([
      [0, 3],
      [1, 0],
      [2, 1],
    ]);
    // One shard by its own name still reads as one store, without the shard column.
    const one = await cli("queue", "stats", "--name", shardStoreName("app", 2));
    expect(one.code, one.err).toBe(EXIT.ok);
    expect(one.out).toMatch(/^QUEUE\s+PENDING/m);
  }, 90_000);
});
