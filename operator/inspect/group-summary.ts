/**
 * @module A run group as an operator sees it: its members counted by state
 * and a bounded page of them with their runs. Read from the group's
 * manifest (memo store) and member records (queue KV) through the
 * read-only view; shared by `taquba groups show` and the dashboard.
 */
import type { QueueReader } from "../../runtime/queue/reader.js";
import { decodeManifest } from "../../runtime/workflow/groups/group-records.js";
import { groupMembersPrefix, groupTag, manifestKey, memberRunId } from "../../runtime/workflow/groups/group-keys.js";
import type { MemoStore } from "../../runtime/workflow/memo/memo.js";
import type { GroupMemberRecord } from "../../runtime/workflow/records/records.js";
import { decodeMemberNaming } from "../../runtime/workflow/groups/run-group.js";
import { routedOn } from "../../runtime/workflow/runs/shard-placement.js";
import type { RunErrorKind } from "../../runtime/workflow/runs/run-types.js";
import type { WorkflowView } from "../../runtime/workflow/runs/workflow-view.js";

/** Most members listed one by one (the counts cover them all). */
export const GROUP_MEMBERS_SHOWN = 200;

export type MemberState = "unsubmitted" | "pending" | "running" | "succeeded" | "failed" | "cancelled";

export interface GroupMemberRow {
  readonly key: string;
  readonly runId: string;
  readonly state: MemberState;
  readonly error?: string;
  readonly errorKind?: RunErrorKind;
  readonly terminatedAt?: number;
}

export interface GroupSummary {
  readonly groupId: string;
  readonly createdAt: number;
  readonly counts: Readonly<Record<MemberState, number>> & { readonly total: number };
  /** The first `GROUP_MEMBERS_SHOWN` members in submission order. */
  readonly members: readonly GroupMemberRow[];
  readonly membersTruncated: boolean;
}

/** The member records of the group tagged `tag` on shard `shard` of `shards` (the shard's runtime routes the runs of its groups there). */
async function memberRecords(reader: QueueReader, queueName: string, tag: string, shard: number, shards: number): Promise<Map<string, GroupMemberRecord>> {
  const out = new Map<string, GroupMemberRecord>();
  const prefix = groupMembersPrefix(queueName, tag);
  let after: string | undefined;
  for (;;) {
    const page = await reader.kvScan(prefix, { limit: 1000, ...(after === undefined ? {} : { after }) });
    for (const e of page.entries) {
      const r = decodeMemberNaming(e.value, e.key, () => routedOn(memberRunId(tag, e.key.slice(prefix.length)), { shard, shards }));
      out.set(r.key, r);
    }
    if (page.nextCursor === undefined) return out;
    after = page.nextCursor;
  }
}

/** The group `groupId`, or null when it has no manifest (never submitted, or forgotten). */
export function readGroupSummary(view: WorkflowView, reader: QueueReader, memos: MemoStore, groupId: string): Promise<GroupSummary | null> {
  return readGroupSummaryOver([{ view, reader }], () => 0, memos, groupId);
}

/** One shard's reads (undefined for a shard no owner ever opened). */
export type GroupSummaryPart = { readonly view: WorkflowView; readonly reader: QueueReader } | undefined;

/**
 * The group `groupId` of a sharded store: its manifest (one for the whole
 * group), and its member records and runs from every shard; `shardOf`
 * names a member run's shard.
 */
export async function readGroupSummaryOver(
  parts: readonly GroupSummaryPart[],
  shardOf: (runId: string) => number,
  memos: MemoStore,
  groupId: string,
): Promise<GroupSummary | null> {
  const tag = groupTag(groupId);
  const key = manifestKey(memos.prefix, tag);
  const found = await memos.store.get(key);
  if (found === null) return null;
  const manifest = decodeManifest(found.body, key);
  const records = new Map<string, GroupMemberRecord>();
  for (const [i, p] of parts.entries())
    if (p !== undefined) for (const [k, r] of await memberRecords(p.reader, p.view.queueName, tag, i, parts.length)) records.set(k, r);
  const counts: Record<MemberState, number> = { unsubmitted: 0, pending: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 };
  const members: GroupMemberRow[] = [];
  for (const [i, m] of manifest.members.entries()) {
    const r = records.get(m.key);
    // A member's record names its run (a runtime's group on a shard suffixes it to route there).
    const runId = r?.runId ?? memberRunId(tag, m.key);
    let state: MemberState;
    if (r === undefined) state = "unsubmitted";
    else if (r.state !== "active") state = r.state;
    else {
      // The reader holds the state in memory: a status per active member costs no request.
      const s = await parts[shardOf(runId)]?.view.status(runId);
      state = s?.state === "pending" ? "pending" : "running";
    }
    counts[state]++;
    if (i < GROUP_MEMBERS_SHOWN) {
      members.push({
        key: m.key,
        runId,
        state,
        ...(r?.error === undefined ? {} : { error: r.error }),
        ...(r?.errorKind === undefined ? {} : { errorKind: r.errorKind }),
        ...(r?.terminatedAtMs === undefined ? {} : { terminatedAt: r.terminatedAtMs }),
      });
    }
  }
  return {
    groupId: manifest.groupId,
    createdAt: manifest.createdAtMs,
    counts: { ...counts, total: manifest.members.length },
    members,
    membersTruncated: manifest.members.length > GROUP_MEMBERS_SHOWN,
  };
}
