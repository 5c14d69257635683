/**
 * @module Where a run group lives, and how a member's run id is derived.
 *
 * A group is addressed by its tag, the first 20 hex digits (80 bits) of the
 * SHA-256 of its id, so any group id (any string) maps to fixed-size keys.
 *
 * A member's run id is `g_{tag}_k{key}` when the member key is 1 to 64
 * characters of `[A-Za-z0-9_-]`, else `g_{tag}_h{sha256hex(key)}`; at most
 * 88 characters, within `MAX_RUN_ID_LEN`. The tag has a fixed length, so the
 * group of a member is read back from its run id alone: that is what lets
 * the terminating settlement, a pure function of the run id, rewrite the
 * member record. Run ids of this shape are reserved for group members.
 *
 * KV (the runtime's reserved namespace):
 * - `workflow/groups/{tag}/m/{memberRunId}`: one member record per key;
 * - `workflow/group-terminals/{expiry}{tag}`: retention markers (an expiry index).
 *
 * Objects (under the memo prefix): `{memoPrefix}/groups/{tag}/manifest`.
 */
import { ExpiryIndex } from "../queue/expiry-index.js";
import { sha256Hex } from "./codec.js";
import { RESERVED_KV_PREFIX } from "./reserved.js";
import { RunId } from "./run-id.js";

export const GROUPS_PREFIX = `${RESERVED_KV_PREFIX}groups/`;
export const GROUP_TERMINALS_PREFIX = `${RESERVED_KV_PREFIX}group-terminals/`;

/** Retention markers of groups whose results a consumer read to the end; suffix: the group tag. */
export const GROUP_TERMINAL_MARKERS = new ExpiryIndex(GROUP_TERMINALS_PREFIX);

const TAG_LEN = 20;
const RAW_KEY = /^[A-Za-z0-9_-]{1,64}$/;
const MEMBER_RUN_ID = /^g_([0-9a-f]{20})_[kh]/;

/** The fixed-size tag that addresses a group in keys. */
export function groupTag(groupId: string): string {
  return sha256Hex(groupId).slice(0, TAG_LEN);
}

/** The run id of the member `key` of the group tagged `tag`. */
export function memberRunId(tag: string, key: string): RunId {
  const part = RAW_KEY.test(key) ? `k${key}` : `h${sha256Hex(key)}`;
  return RunId.parse(`g_${tag}_${part}`);
}

/** The group tag a member run id belongs to, or undefined when the run is no group member. */
export function groupTagOfRun(runId: string): string | undefined {
  return MEMBER_RUN_ID.exec(runId)?.[1];
}

/** Prefix of every member record of a group, ending in `/`. */
export const memberRecordsPrefix = (tag: string): string => `${GROUPS_PREFIX}${tag}/m/`;
/** Key of the member record of `runId`. */
export const memberRecordKey = (tag: string, runId: string): string => `${memberRecordsPrefix(tag)}${runId}`;
/** Object key of a group's manifest. */
export const manifestKey = (memoPrefix: string, tag: string): string => `${memoPrefix}/groups/${tag}/manifest`;
