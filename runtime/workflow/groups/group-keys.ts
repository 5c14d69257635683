/**
 * @module Where a run group lives, and how a member's run id is derived.
 *
 * A group is addressed by its tag, the first 20 hex digits (80 bits) of the
 * SHA-256 of its id, so any group id (any string) maps to fixed-size keys.
 *
 * A member's run id is `g_{tag}_k{key}` when the member key is 1 to 64
 * characters of `[A-Za-z0-9_-]`, else `g_{tag}_h{sha256hex(key)}`: at most
 * 88 characters, within `MAX_RUN_ID_LEN`, and distinct for distinct
 * (group, key) pairs (the `k`/`h` marker keeps raw and hashed keys apart),
 * so groups never share run state.
 *
 * KV (the runtime's reserved namespace):
 * - `workflow/groups/{queue}/{tag}/{key}`: one member record per key, written with
 *   the member's submission and rewritten by its terminating settlement
 *   (the run record carries the group reference to every terminal path);
 * - `workflow/group-terminals/{queue}/{expiry}{tag}`: retention markers (an expiry index).
 *
 * `{queue}` is the runtime's step queue: groups of runtimes over different
 * step queues are separate (see `kv-keys`).
 *
 * Objects (under the memo prefix): `{memoPrefix}/groups/{tag}/manifest`.
 */
import { ExpiryIndex } from "../../queue/expiry-index.js";
import { sha256Hex } from "../records/codec.js";
import { RESERVED_KV_PREFIX } from "../records/reserved.js";
export { groupMemberKey, groupMembersPrefix } from "../records/kv-keys.js";
import { RunId } from "../runs/run-id.js";

export const GROUP_TERMINALS_PREFIX = `${RESERVED_KV_PREFIX}group-terminals/`;

/** Retention markers of the groups of step queue `queueName` whose results a consumer read to the end; suffix: the group tag. */
export const groupTerminalMarkers = (queueName: string): ExpiryIndex => new ExpiryIndex(`${GROUP_TERMINALS_PREFIX}${queueName}/`);

const TAG_LEN = 20;
const RAW_KEY = /^[A-Za-z0-9_-]{1,64}$/;

/** The fixed-size tag that addresses a group in keys. */
export function groupTag(groupId: string): string {
  return sha256Hex(groupId).slice(0, TAG_LEN);
}

/** The run id of the member `key` of the group tagged `tag`. */
export function memberRunId(tag: string, key: string): RunId {
  const part = RAW_KEY.test(key) ? `k${key}` : `h${sha256Hex(key)}`;
  return RunId.parse(`g_${tag}_${part}`);
}

/** Object key of a group's manifest. */
export const manifestKey = (memoPrefix: string, tag: string): string => `${memoPrefix}/groups/${tag}/manifest`;
