/**
 * @module The group listing's damage on a sharded store: a group a shard's
 * runtime created keeps its members on that shard, each id routed there
 * with the suffix `-rN`. A member record that no longer names its run
 * (bytes that are no map) is listed with `damage.runId` derived from the
 * group and key and routed to the shard it was read on, by the shard's
 * runtime, by a client over all shards and in `taquba groups list`; and
 * the repair of that id reaches the member and mends it.
 */
import { pack } from "msgpackr";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { LocalStore, ValidationError, type GroupPage } from "../../runtime/index.js";
import { EXIT, main } from "../../operator/cli/main.js";
import { groupMemberKey } from "../../runtime/workflow/records/kv-keys.js";
import { groupTag, memberRunId } from "../../runtime/workflow/groups/group-keys.js";
import { routedOn } from "../../runtime/workflow/runs/shard-placement.js";
import { STEP_QUEUE } from "../client/fixtures/app.js";
import { openShardedApp } from "./fixtures/sharded-app.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";
import { scaledForLoad } from "../support/load.js";

const tempDir = useTempDirs("taquba-sharded-group-listing-");
const SHARDS = 3;
const enc = new TextEncoder();
const SCENARIO_MS = scaledForLoad(120_000);
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
}, SCENARIO_MS);

const damageOf = (page: GroupPage, groupId: string) => page.unreadable?.find((u) => u.groupId === groupId)?.damage;

describe("the group listing's damaged member on a sharded store", () => {
  it(
    "names the member's run routed to its shard, and the repair of that id mends it",
    async () => {
      const dir = await tempDir();
      const store = new LocalStore(dir);
      const { owners, client } = await openShardedApp(store, SHARDS, cleanups);

      const keys = Array.from({ length: 8 }, (_, k) => `k${k}`);
      const group = owners[1]!.runtime.group("local");
      await group.submit(keys.map((key) => ({ key, input: enc.encode(JSON.stringify({ key })) })));
      await until("the members ended", async () => (await group.status())?.succeeded === keys.length, SCENARIO_MS / 3);
      const tag = groupTag("local");
      const key = keys.find((k) => routedOn(memberRunId(tag, k), { shard: 1, shards: SHARDS }) !== memberRunId(tag, k))!;
      expect(key, "a member whose id needs a route suffix").toBeDefined();
      const runId = routedOn(memberRunId(tag, key), { shard: 1, shards: SHARDS });
      expect(runId).toMatch(/-r\d+$/);
      await owners[1]!.queue.kvPut(groupMemberKey(STEP_QUEUE, tag, key), new Uint8Array(pack("no record")));

      const expected = { record: "member", memberKey: key, runId };
      expect(damageOf(await owners[1]!.runtime.listGroups(), "local")).toMatchObject(expected);
      await until("the client reads the damage", async () => damageOf(await client.listGroups(), "local") !== undefined, SCENARIO_MS / 3);
      expect(damageOf(await client.listGroups(), "local")).toMatchObject(expected);
      // A placement that is none is refused before anything is read.
      await expect(owners[1]!.runtime.view().listGroups({}, { shard: 3, shards: 3 })).rejects.toBeInstanceOf(ValidationError);

      const url = pathToFileURL(dir).href;
      const cli = async (...words: string[]) => {
        const out: string[] = [];
        const err: string[] = [];
        const code = await main([words[0]!, words[1]!, url, ...words.slice(2), "--name", "app", "--step-queue", STEP_QUEUE, "--timeout", "60000"], {
          out: (t) => out.push(t),
          err: (t) => err.push(t),
          color: false,
        });
        return { code, out: out.join("\n"), err: err.join("\n") };
      };
      const listed = await cli("groups", "list", "--json");
      const page = JSON.parse(listed.out) as GroupPage;
      expect(damageOf(page, "local")).toMatchObject(expected);
      expect(page.unreadable!.find((u) => u.groupId === "local")!.reason).toContain(`taquba runs repair ${JSON.stringify(runId)}`);

      const repaired = await cli("runs", "repair", runId, "--json");
      expect(repaired.code, repaired.err).toBe(EXIT.ok);
      expect(JSON.parse(repaired.out)).toMatchObject({ runId, action: "records_rewritten", damaged: [{ record: "group_member" }] });
      expect((await client.listGroups()).unreadable).toBeUndefined();
    },
    SCENARIO_MS,
  );
});
