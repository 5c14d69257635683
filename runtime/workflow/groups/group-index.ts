/**
 * @module The group index and `listGroups`: one KV entry per run group,
 * `workflow/group-index/{q}/{t}{tag}` (`{t}` the inverted creation time, so
 * byte order is newest first) holding the group's id, written before its
 * members are submitted and removed when the group is forgotten. A listing
 * reads a page of entries and counts each group's member records.
 */
import { StoreCorruptedError, ValidationError } from "../../errors.js";
import type { KvPage, KvScanOptions } from "../../queue/view.js";
import { decodeValue, encodeValue } from "../records/codec.js";
import { decodeGroupMember, decodeMap } from "../records/records.js";
import { RESERVED_KV_PREFIX } from "../records/reserved.js";
import { groupMembersPrefix } from "../records/kv-keys.js";
import { indexSuffix, INVERTED_TIME_MAX } from "../runs/run-index.js";
import type { GroupDamage, GroupMemberCounts, GroupPage, GroupRow, ListGroupsOptions, UnreadableGroup } from "./group-listing.js";
import { memberRunId } from "./group-keys.js";
import { RunId } from "../runs/run-id.js";
import { describeValue, optionFields, refuseUnknownFields } from "../../option-values.js";

export const GROUP_INDEX_PREFIX = `${RESERVED_KV_PREFIX}group-index/`;
/** The default and the largest `limit` of a group listing page (each group's members are counted). */
export const DEFAULT_GROUP_LIMIT = 20;
export const MAX_GROUP_LIMIT = 100;

export const groupIndexPrefix = (q: string): string => `${GROUP_INDEX_PREFIX}${q}/`;
/** The tag takes the run id's place in the shared suffix layout (20 hex digits). */
export const groupIndexKey = (q: string, createdAtMs: number, tag: string): string => `${groupIndexPrefix(q)}${indexSuffix(createdAtMs, tag)}`;

export function encodeGroupIndexEntry(groupId: string): Uint8Array {
  return encodeValue({ groupId });
}

function decodeGroupIndexEntry(bytes: Uint8Array, key: string): string {
  const v = decodeMap(bytes, key, "group index entry");
  if (typeof v.groupId !== "string") throw new StoreCorruptedError(key, "group index entry lacks its group id");
  return v.groupId;
}

/** The reads a group listing makes. */
export interface GroupReads {
  readonly queueName: string;
  kvScan(prefix: string, opts?: KvScanOptions): Promise<KvPage>;
}

const SUFFIX_RE = /^(\d{16})([0-9a-f]{20})$/;

const GROUP_LIST_FIELDS = optionFields<ListGroupsOptions>({ cursor: true, limit: true });

const CURSOR_RE = /^g1\.(\d{16}[0-9a-f]{20})$/;

/** One page of groups, newest first, with their member counts. */
export async function listGroups(reads: GroupReads, opts: unknown): Promise<GroupPage> {
  if (opts !== undefined && (opts === null || typeof opts !== "object" || Array.isArray(opts))) throw new ValidationError("listGroups takes an options object");
  if (opts !== undefined) refuseUnknownFields(opts, GROUP_LIST_FIELDS, "listGroups.", "listGroups' options");
  const o = (opts ?? {}) as ListGroupsOptions;
  const limit = o.limit ?? DEFAULT_GROUP_LIMIT;
  if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > MAX_GROUP_LIMIT) {
    throw new ValidationError(`listGroups: limit must be an integer from 1 to ${MAX_GROUP_LIMIT}, got ${describeValue(limit)}`);
  }
  let after: string | undefined;
  if (o.cursor !== undefined) {
    const m = typeof o.cursor === "string" ? CURSOR_RE.exec(o.cursor) : null;
    if (m === null)
      throw new ValidationError(
        `listGroups: cursor ${JSON.stringify(String(o.cursor).slice(0, 80))} is not a group listing cursor; pass the nextCursor of the previous page`,
      );
    after = m[1];
  }
  const q = reads.queueName;
  const prefix = groupIndexPrefix(q);
  const page = await reads.kvScan(prefix, { limit: limit + 1, ...(after === undefined ? {} : { after: prefix + after }) });
  const groups: GroupRow[] = [];
  const unreadable: UnreadableGroup[] = [];
  let last: string | undefined;
  for (const e of page.entries.slice(0, limit)) {
    const suffix = e.key.slice(prefix.length);
    last = suffix;
    const m = SUFFIX_RE.exec(suffix);
    if (m === null) continue;
    const tag = m[2]!;
    // One damaged record leaves its own group out, named with the reason and the damage's fields, and the others listed.
    let groupId: string;
    try {
      groupId = decodeGroupIndexEntry(e.value, e.key);
    } catch (err) {
      if (!(err instanceof StoreCorruptedError)) throw err;
      unreadable.push({
        groupId: tag,
        reason: `group ${JSON.stringify(tag)} could not be counted: ${err.message}`,
        damage: { record: "index_entry", detail: err.detail },
      });
      continue;
    }
    const members = await countMembers(reads, q, tag);
    if ("record" in members) {
      unreadable.push({ groupId, reason: `group ${JSON.stringify(groupId)} could not be counted: ${members.message}`, damage: members.damage });
      continue;
    }
    groups.push({ groupId, createdAtMs: INVERTED_TIME_MAX - Number(m[1]), members });
  }
  const more = page.entries.length > limit;
  return {
    groups,
    ...(more && last !== undefined ? { nextCursor: `g1.${last}` } : {}),
    ...(unreadable.length === 0 ? {} : { unreadable }),
  };
}

/** A member record that does not read: its damage as fields, and the error's message. */
interface DamagedMember {
  readonly record: "member";
  readonly damage: GroupDamage;
  readonly message: string;
}

/** The damage of member record `key` (`bytes`) that failed its check with `err`: its key, and its run as the record still names it. */
function memberDamage(err: StoreCorruptedError, key: string, prefix: string, tag: string, bytes: Uint8Array): DamagedMember {
  const memberKey = key.slice(prefix.length);
  let runId: string | undefined;
  try {
    const raw = decodeValue(bytes) as Record<string, unknown> | null;
    if (raw !== null && typeof raw === "object" && typeof raw["runId"] === "string" && RunId.isValid(raw["runId"])) runId = raw["runId"];
  } catch {
    // Not even a map: the run is the one the group and key derive.
  }
  if (runId === undefined) {
    try {
      runId = memberRunId(tag, memberKey);
    } catch {
      // A key no member run id is made of.
    }
  }
  return { record: "member", message: err.message, damage: { record: "member", detail: err.detail, memberKey, ...(runId === undefined ? {} : { runId }) } };
}

async function countMembers(reads: GroupReads, q: string, tag: string): Promise<GroupMemberCounts | DamagedMember> {
  const c = { total: 0, active: 0, succeeded: 0, failed: 0, cancelled: 0 };
  const prefix = groupMembersPrefix(q, tag);
  let after: string | undefined;
  for (;;) {
    const page = await reads.kvScan(prefix, { limit: 1000, ...(after === undefined ? {} : { after }) });
    for (const e of page.entries) {
      c.total++;
      try {
        c[decodeGroupMember(e.value, e.key).state]++;
      } catch (err) {
        if (!(err instanceof StoreCorruptedError)) throw err;
        return memberDamage(err, e.key, prefix, tag, e.value);
      }
    }
    if (page.nextCursor === undefined) return c;
    after = page.nextCursor;
  }
}
