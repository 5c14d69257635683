/**
 * @module `taquba runs repair` on a sharded store (a real directory, every
 * shard's owner in this process): the repair is routed to the run's shard
 * as a retry is, so a damaged run record on each shard, an ended run's end
 * record and an ended group member's record on whichever shard holds them
 * are mended by the owner of that shard; the merged listings read whole
 * again, and the other runs are untouched.
 */
import { pack, unpack } from "msgpackr";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { LocalStore, shardOfRun } from "../../runtime/index.js";
import { EXIT, main } from "../../operator/cli/main.js";
import { groupMemberKey, runKey, terminalRecordKey } from "../../runtime/workflow/records/kv-keys.js";
import { groupTag } from "../../runtime/workflow/groups/group-keys.js";
import { STEP_QUEUE } from "../client/fixtures/app.js";
import { openShardedApp } from "./fixtures/sharded-app.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";
import { scaledForLoad } from "../support/load.js";

const tempDir = useTempDirs("taquba-run-repair-sharded-");
const SHARDS = 3;
const enc = new TextEncoder();
const json = (v: unknown): Uint8Array => enc.encode(JSON.stringify(v));
const SCENARIO_MS = scaledForLoad(120_000);
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
}, SCENARIO_MS);

describe("taquba runs repair on a sharded store", () => {
  it(
    "reaches the shard of the run and mends its records there",
    async () => {
      const dir = await tempDir();
      const store = new LocalStore(dir);
      const { owners, client } = await openShardedApp(store, SHARDS, cleanups);

      // One waiting run per shard, and an ended one on one shard.
      const waiting: string[] = [];
      for (let i = 0; waiting.length < SHARDS; i++) {
        const id = `wait-${i}`;
        if (waiting.some((w) => shardOfRun(w, SHARDS) === shardOfRun(id, SHARDS))) continue;
        waiting.push(id);
        await client.submit({ runId: id, input: json({ wait: `k-${id}` }) });
      }
      await client.submit({ runId: "ended", input: json({ id: 1 }) });
      await client.wait("ended");
      const group = client.group("batch");
      await group.submit(Array.from({ length: 6 }, (_, k) => ({ key: `k${k}`, input: json({ k }) })));
      await group.join();
      const shardQueue = (id: string) => owners[shardOfRun(id, SHARDS)]!.queue;
      for (const id of waiting) await until(`${id} waits`, async () => (await client.status(id))?.step === 1, SCENARIO_MS / 3);

      const damage = async (id: string, key: string, change: Record<string, unknown>) => {
        const q = shardQueue(id);
        const bytes = await q.kvGet(key);
        expect(bytes, key).not.toBeNull();
        await q.kvPut(key, new Uint8Array(pack({ ...(unpack(bytes!) as Record<string, unknown>), ...change })));
      };
      for (const id of waiting) await damage(id, runKey(STEP_QUEUE, id), { priority: -1 });
      await damage("ended", terminalRecordKey(STEP_QUEUE, "ended"), { finalStep: -1 });
      // A member on another shard than the first waiting run's.
      const member = (await client.listRuns({ limit: 100 })).runs.find(
        (r) => r.group?.id === "batch" && shardOfRun(r.runId, SHARDS) !== shardOfRun(waiting[0]!, SHARDS),
      )!;
      await damage(member.runId, groupMemberKey(STEP_QUEUE, groupTag("batch"), member.group!.key), { terminatedAtMs: -1 });

      const url = pathToFileURL(dir).href;
      const cli = async (...rest: string[]) => {
        const out: string[] = [];
        const err: string[] = [];
        const code = await main(["runs", "repair", url, ...rest, "--name", "app", "--step-queue", STEP_QUEUE, "--timeout", "60000"], {
          out: (t) => out.push(t),
          err: (t) => err.push(t),
          color: false,
        });
        return { code, out: out.join("\n"), err: err.join("\n") };
      };

      const dry = await cli(waiting[0]!, "--dry-run", "--json");
      expect(dry.code, dry.err).toBe(EXIT.ok);
      expect(JSON.parse(dry.out)).toMatchObject({ action: "ended_failed", dryRun: true, damaged: [{ record: "run_record" }] });
      for (const id of waiting) {
        const r = await cli(id, "--json");
        expect(r.code, r.err).toBe(EXIT.ok);
        expect((await client.wait(id)).termination).toMatchObject({
          status: "failed",
          error: expect.stringMatching(/^repaired by an operator: its run record/),
        });
      }
      const end = await cli("ended", "--json");
      expect(end.code, end.err).toBe(EXIT.ok);
      expect(JSON.parse(end.out)).toMatchObject({ action: "end_rewritten" });
      const m = await cli(member.runId, "--json");
      expect(m.code, m.err).toBe(EXIT.ok);
      expect(JSON.parse(m.out)).toMatchObject({ action: "records_rewritten", damaged: [{ record: "group_member" }] });

      // The merged listings read whole again; the group counts every member as it ended.
      const runs = await client.listRuns({ limit: 100 });
      expect(runs.unreadable ?? []).toEqual([]);
      const groups = await client.listGroups();
      expect(groups.unreadable ?? []).toEqual([]);
      expect(groups.groups).toMatchObject([{ groupId: "batch", members: { total: 6, succeeded: 6 } }]);
      // A run that is not there: not found on its shard; a second repair: not damaged.
      expect((await cli("no-such-run")).code).toBe(EXIT.notFound);
      expect((await cli(waiting[1]!)).code).toBe(EXIT.refused);
    },
    SCENARIO_MS,
  );
});
