/**
 * @module The group listing's damage on a sharded store: a group a shard's
 * runtime created keeps its members on that shard, each id routed there
 * with the suffix `-rN`. A member record that no longer names its run
 * (bytes that are no map) is listed with `damage.runId` derived from the
 * group and key and routed to the shard it was read on, by the shard's
 * runtime, by a client over all shards and in `taquba groups list`; and
 * the repair of that id reaches the member and mends it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { LocalStore, ValidationError, type GroupPage } from "../../runtime/index.js";
import { EXIT } from "../../operator/cli/main.js";
import { openShardedApp } from "./fixtures/sharded-app.js";
import { damageRoutedMember, operatorCli } from "./fixtures/sharded-damaged-member.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { until } from "../support/until.js";
import { scaledForLoad } from "../support/load.js";

const tempDir = useTempDirs("taquba-sharded-group-listing-");
const SHARDS = 3;
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

      const { runId, key } = await damageRoutedMember(owners, SHARDS, SCENARIO_MS / 3);

      const expected = { record: "member", memberKey: key, runId };
      expect(damageOf(await owners[1]!.runtime.listGroups(), "local")).toMatchObject(expected);
      await until("the client reads the damage", async () => damageOf(await client.listGroups(), "local") !== undefined, SCENARIO_MS / 3);
      expect(damageOf(await client.listGroups(), "local")).toMatchObject(expected);
      // A placement that is none is refused before anything is read.
      await expect(owners[1]!.runtime.view().listGroups({}, { shard: 3, shards: 3 })).rejects.toBeInstanceOf(ValidationError);

      const cli = operatorCli(dir);
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
