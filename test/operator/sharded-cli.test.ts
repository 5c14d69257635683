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
import { LocalStore, TaqubaClient, createShards, shardOfRun } from "../../runtime/index.js";
import { EXIT, main } from "../../operator/cli/main.js";
import { shardStoreName } from "../../runtime/client/shard-route.js";
import { openOwner, STEP_QUEUE, type OwnerApp } from "../client/fixtures/app.js";
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
    await createShards(store, "app", SHARDS);
    const owners: OwnerApp[] = [];
    for (let i = 0; i < SHARDS; i++) owners.push(await openOwner(store, { name: shardStoreName("app", i), listIntervalMs: 50 }));
    cleanups.push(async () => void (await Promise.all(owners.map((o) => o.stop()))));
    const client = await TaqubaClient.open(store, { name: "app", queueName: STEP_QUEUE, pollIntervalMs: 200 });
    cleanups.push(() => client.close());

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
    const health = await cli("queue", "stats");
    expect(health.code).not.toBe(EXIT.ok);
    expect(health.err).toContain("--name app/shards/<0..2>");
  }, 90_000);
});
