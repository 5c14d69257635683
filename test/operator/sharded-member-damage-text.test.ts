/**
 * @module The operator's text for a damaged group member record on a
 * sharded store names the member's run as it was submitted: a group a
 * shard's runtime created keeps its members on that shard, each id routed
 * there with the suffix `-rN`, which the record's key alone does not hold.
 * A record that no longer names its run (bytes that are no map) is named
 * by the id the shard's group host derives, and `taquba runs repair` of
 * that id reaches the member and mends it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { GroupMemberDamagedError, LocalStore, StoreCorruptedError } from "../../runtime/index.js";
import { EXIT } from "../../operator/cli/main.js";
import { memberRunId } from "../../runtime/workflow/groups/group-keys.js";
import { openShardedApp } from "./fixtures/sharded-app.js";
import { damageRoutedMember, operatorCli } from "./fixtures/sharded-damaged-member.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { scaledForLoad } from "../support/load.js";

const tempDir = useTempDirs("taquba-sharded-member-text-");
const SHARDS = 3;
const SCENARIO_MS = scaledForLoad(120_000);
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
}, SCENARIO_MS);

describe("a damaged member record's text on a sharded store", () => {
  it(
    "names the member's run with its route suffix, and the repair of that id mends it",
    async () => {
      const dir = await tempDir();
      const store = new LocalStore(dir);
      const { owners } = await openShardedApp(store, SHARDS, cleanups);

      // A group of shard 1's runtime: its members live on shard 1, their ids routed there.
      const { group, keys, tag, key, runId } = await damageRoutedMember(owners, SHARDS, SCENARIO_MS / 3);

      const thrown = await group.status().catch((e: unknown) => e);
      expect(thrown).toBeInstanceOf(GroupMemberDamagedError);
      expect(thrown).toMatchObject({ memberRunId: runId, code: "GROUP_MEMBER_DAMAGED" });
      expect(thrown, "caught where a damaged store object is").toBeInstanceOf(StoreCorruptedError);

      const cli = operatorCli(dir);
      // The operator's view of the group reads the record on shard 1: its text names the routed id.
      const shown = await cli("groups", "show", "local");
      expect(shown.code).toBe(EXIT.failed);
      expect(shown.err).toContain(`taquba runs repair ${JSON.stringify(runId)}`);
      expect(shown.err).not.toContain(`taquba runs repair ${JSON.stringify(memberRunId(tag, key))} `);

      const repaired = await cli("runs", "repair", runId, "--json");
      expect(repaired.code, repaired.err).toBe(EXIT.ok);
      expect(JSON.parse(repaired.out)).toMatchObject({ runId, action: "records_rewritten", damaged: [{ record: "group_member" }] });
      expect(await group.status()).toMatchObject({ total: keys.length, succeeded: keys.length });
    },
    SCENARIO_MS,
  );
});
