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
import { MAX_INSTANT_MS } from "../../time-bounds.js";
import type { GroupDamage, GroupMemberCounts, GroupPage, GroupRow, ListGroupsOptions, UnreadableGroup } from "./group-listing.js";
import { groupTag, memberRunId } from "./group-keys.js";
import { RunId } from "../runs/run-id.js";
import { routedOn, type ShardPlacement } from "../runs/shard-placement.js";
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
  /**
   * The shard the reads reach, on a sharded store: a group's members live
   * on the shard of the runtime that made it, their run ids routed there
   * (`-rN`), so a damaged member record that names no run is named by the
   * id derived and routed so. Absent on a store of one shard.
   */
  readonly placement?: ShardPlacement | undefined;
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
    const createdAtMs = INVERTED_TIME_MAX - Number(m[1]);
    // One damaged record leaves its own group out, named with the reason and the damage's fields, and the others listed.
    let groupId: string;
    try {
      groupId = decodeGroupIndexEntry(e.value, e.key);
    } catch (err) {
      if (!(err instanceof StoreCorruptedError)) throw err;
      unreadable.push({ ...damagedEntry(e.value, tag, createdAtMs, err.detail), damage: { record: "index_entry", detail: err.detail } });
      continue;
    }
    const members = await countMembers(reads, q, tag, reads.placement);
    if ("record" in members) {
      unreadable.push({ groupId, reason: `group ${JSON.stringify(groupId)} could not be counted: ${members.message}`, damage: members.damage });
      continue;
    }
    groups.push({ groupId, createdAtMs, members });
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

/**
 * The damage of member record `key` (`bytes`) that failed its check with
 * `err`: its key, and its run as the record still names it, else as the
 * group and key derive it, routed to `placement`'s shard.
 */
function memberDamage(
  err: StoreCorruptedError,
  key: string,
  prefix: string,
  tag: string,
  bytes: Uint8Array,
  placement: ShardPlacement | undefined,
): DamagedMember {
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
      runId = routedOn(memberRunId(tag, memberKey), placement);
    } catch {
      // A key no member run id is made of.
    }
  }
  return { record: "member", message: err.message, damage: { record: "member", detail: err.detail, memberKey, ...(runId === undefined ? {} : { runId }) } };
}

/** What a group's members are still read with, and how the entry is mended. */
const DAMAGED_ENTRY_ADVICE = "restore the store from a backup to mend the entry; the group's runs and members are not affected";

/**
 * A group whose index entry is damaged, named by its id where the entry's
 * bytes still hold one whose tag is the entry's (the tag is the id's hash,
 * so a salvaged id is the group's), else by its creation time.
 */
function damagedEntry(bytes: Uint8Array, tag: string, createdAtMs: number, detail: string): UnreadableGroup {
  const groupId = salvagedGroupId(bytes, tag);
  if (groupId !== undefined) {
    const id = JSON.stringify(groupId);
    return {
      groupId,
      reason: `group ${id}: its listing entry is damaged (${detail}), so its members are not counted here; taquba groups show ${id} and runtime.group(${id}).status() still read them; ${DAMAGED_ENTRY_ADVICE}`,
    };
  }
  const created = createdAtMs >= 0 && createdAtMs <= MAX_INSTANT_MS ? `created at ${new Date(createdAtMs).toISOString()}` : "of unknown creation time";
  return {
    groupId: tag,
    reason: `a group ${created}: its listing entry is damaged (${detail}) and its group id cannot be read from it; if you know the group's id, taquba groups show <id> and runtime.group(id).status() still read its members; ${DAMAGED_ENTRY_ADVICE}`,
  };
}

/** The msgpack key a group index entry stores its id under. */
const GROUP_ID_FIELD = new Uint8Array([0xa7, ...new TextEncoder().encode("groupId")]);
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** The group id a damaged entry's bytes still hold after its field name, if its tag is `tag`. */
function salvagedGroupId(bytes: Uint8Array, tag: string): string | undefined {
  for (let i = 0; i + GROUP_ID_FIELD.length < bytes.length; i++) {
    let j = 0;
    while (j < GROUP_ID_FIELD.length && bytes[i + j] === GROUP_ID_FIELD[j]) j++;
    if (j < GROUP_ID_FIELD.length) continue;
    const at = i + j;
    const head = bytes[at]!;
    let start: number;
    let length: number;
    if (head >= 0xa0 && head <= 0xbf) [start, length] = [at + 1, head & 0x1f];
    else if (head === 0xd9 && at + 1 < bytes.length) [start, length] = [at + 2, bytes[at + 1]!];
    else if (head === 0xda && at + 2 < bytes.length) [start, length] = [at + 3, (bytes[at + 1]! << 8) | bytes[at + 2]!];
    else continue;
    if (start + length > bytes.length) continue;
    let candidate: string;
    try {
      candidate = strictUtf8.decode(bytes.subarray(start, start + length));
    } catch {
      continue;
    }
    if (groupTag(candidate) === tag) return candidate;
  }
  return undefined;
}

async function countMembers(reads: GroupReads, q: string, tag: string, placement: ShardPlacement | undefined): Promise<GroupMemberCounts | DamagedMember> {
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
        return memberDamage(err, e.key, prefix, tag, e.value, placement);
      }
    }
    if (page.nextCursor === undefined) return c;
    after = page.nextCursor;
  }
}
