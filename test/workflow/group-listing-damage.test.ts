/**
 * @module A group listing reports a group it could not count with the
 * damaged record as fields (`damage`: the record, its detail, and for a
 * member record its key and its run), from the layer that reads it: a
 * member record with a field out of its range (its run as the record
 * still names it), one that is no record at all (its run as the group and
 * key derive it), a listing entry without its group id. The other groups
 * are listed as before.
 */
import { pack, unpack } from "msgpackr";
import { describe, expect, it } from "vitest";
import { StepOutcome } from "taquba";
import { groupMemberKey } from "../../runtime/workflow/records/kv-keys.js";
import { groupTag } from "../../runtime/workflow/groups/group-keys.js";
import { groupIndexPrefix } from "../../runtime/workflow/groups/group-index.js";
import { enc, openEnv, runnerOf } from "./helpers.js";

const Q = "workflow-steps";

describe("a group listing's damaged groups", () => {
  it("are named with the damaged record as fields, and the healthy groups are counted", async () => {
    const env = await openEnv(
      runnerOf(async (s) => StepOutcome.succeed(s.payload)),
      { start: false },
    );
    try {
      for (const g of ["field", "garbage", "entry", "healthy"])
        await env.runtime.group(g).submit([
          { key: "a", input: enc("x") },
          { key: "b", input: enc("x") },
        ]);
      const runOf = async (g: string, key: string) =>
        (await env.runtime.listRuns({ limit: 100 })).runs.find((r) => r.group?.id === g && r.group.key === key)!.runId;
      const fieldKey = groupMemberKey(Q, groupTag("field"), "a");
      const rec = unpack((await env.queue.kvGet(fieldKey))!) as Record<string, unknown>;
      await env.queue.kvPut(fieldKey, new Uint8Array(pack({ ...rec, terminatedAtMs: -1 })));
      await env.queue.kvPut(groupMemberKey(Q, groupTag("garbage"), "b"), new Uint8Array([0xc1, 0x00]));
      const entry = (await env.queue.kvScan(groupIndexPrefix(Q), { limit: 10 })).entries.find((e) => e.key.endsWith(groupTag("entry")))!;
      await env.queue.kvPut(entry.key, new Uint8Array(pack({ groupId: 7 })));

      const page = await env.runtime.listGroups();
      expect(page.groups.map((g) => g.groupId)).toEqual(["healthy"]);
      const byId = new Map((page.unreadable ?? []).map((u) => [u.groupId, u]));
      expect([...byId.keys()].sort()).toEqual(["field", "garbage", groupTag("entry")].sort());
      expect(byId.get("field")!.damage).toEqual({
        record: "member",
        memberKey: "a",
        runId: await runOf("field", "a"),
        detail: expect.stringMatching(/end time of -1/),
      });
      expect(byId.get("garbage")!.damage).toEqual({ record: "member", memberKey: "b", runId: await runOf("garbage", "b"), detail: expect.any(String) });
      expect(byId.get(groupTag("entry"))!.damage).toEqual({ record: "index_entry", detail: "group index entry lacks its group id" });
      // The reason is the one the listing always gave: the error's message, for callers that read it.
      expect(byId.get("field")!.reason).toMatch(/^group "field" could not be counted: .*end time of -1/);
    } finally {
      await env.stop();
    }
  });
});
