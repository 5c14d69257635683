/**
 * @module The runtime's key layout in the queue's caller KV namespace and in
 * the memo object store. Pure functions; every reader and writer goes
 * through them so the layout is defined once.
 *
 * KV (all under {@link RESERVED_KV_PREFIX}):
 * - `workflow/runs/{runId}`: the run record, from submission to termination;
 * - `workflow/steps/{runId}`: the current-step pointer, rewritten per step;
 * - `workflow/outcomes/{runId}`: the terminal record, from termination to sweep;
 * - `workflow/terminals/...`: retention markers (an expiry index);
 * - `workflow/groups/{groupId}/{key}`: run-group member records;
 * - `workflow/signal-wait/{key}`, `workflow/signal-buf/{key}`,
 *   `workflow/signal-delivered/{runId}/{step}`: durable signals.
 *
 * Objects (under the memo prefix):
 * - `{prefix}/memos/{runId}/{step}/{sha256(key)}` and `{prefix}/memos/{runId}/run/{sha256(key)}`;
 * - `{prefix}/step-outputs/{runId}/{step}/{sha256(payload)}`: replay records.
 */
import { sha256Hex } from "./codec.js";
import { RESERVED_KV_PREFIX } from "./reserved.js";

export const RUNS_PREFIX = `${RESERVED_KV_PREFIX}runs/`;
export const STEPS_PREFIX = `${RESERVED_KV_PREFIX}steps/`;
export const OUTCOMES_PREFIX = `${RESERVED_KV_PREFIX}outcomes/`;
export const TERMINALS_PREFIX = `${RESERVED_KV_PREFIX}terminals/`;
export const SIGNAL_WAIT_PREFIX = `${RESERVED_KV_PREFIX}signal-wait/`;
export const SIGNAL_BUF_PREFIX = `${RESERVED_KV_PREFIX}signal-buf/`;
export const SIGNAL_DELIVERED_PREFIX = `${RESERVED_KV_PREFIX}signal-delivered/`;
export const GROUPS_PREFIX = `${RESERVED_KV_PREFIX}groups/`;

export const runKey = (runId: string): string => `${RUNS_PREFIX}${runId}`;
export const stepPointerKey = (runId: string): string => `${STEPS_PREFIX}${runId}`;
export const terminalRecordKey = (runId: string): string => `${OUTCOMES_PREFIX}${runId}`;
export const signalWaitKey = (correlationKey: string): string => `${SIGNAL_WAIT_PREFIX}${correlationKey}`;
export const signalBufferKey = (correlationKey: string): string => `${SIGNAL_BUF_PREFIX}${correlationKey}`;
/** Prefix of the member records of one run group, ending in `/`. */
export const groupMembersPrefix = (groupId: string): string => `${GROUPS_PREFIX}${groupId}/`;
/** Member record of one key of a run group. */
export const groupMemberKey = (groupId: string, key: string): string => `${groupMembersPrefix(groupId)}${key}`;
export const signalDeliveredKey = (runId: string, step: number): string => `${SIGNAL_DELIVERED_PREFIX}${runId}/${step}`;

/** Dedup key of a step job: no two pending or scheduled jobs exist for one step. */
export const stepDedupKey = (runId: string, step: number): string => `run:${runId}:${step}`;
/** Dedup key of a run's notification job for one termination. */
export const terminalDedupKey = (runId: string, token: string): string => `run:${runId}:terminal:${token}`;

/** Object prefix of every memo entry of a run (both namespaces), ending in `/`. */
export const runMemoRoot = (memoPrefix: string, runId: string): string => `${memoPrefix}/memos/${runId}/`;
/** Object prefix of a memo namespace: a step number, or `"run"` for the run-scoped one. */
export const memoNamespacePrefix = (memoPrefix: string, runId: string, scope: number | "run"): string =>
  `${runMemoRoot(memoPrefix, runId)}${scope}/`;
/** Object key of one memo entry; user keys are hashed so any string is a valid key. */
export const memoEntryKey = (memoPrefix: string, runId: string, scope: number | "run", userKey: string): string =>
  `${memoNamespacePrefix(memoPrefix, runId, scope)}${sha256Hex(userKey)}`;
/** Object prefix of every replay record of a run, ending in `/`. */
export const runReplayRoot = (memoPrefix: string, runId: string): string => `${memoPrefix}/step-outputs/${runId}/`;
/** Object key of the replay record of one delivery of a step with `payload`. */
export const replayRecordKey = (memoPrefix: string, runId: string, step: number, payload: Uint8Array): string =>
  `${runReplayRoot(memoPrefix, runId)}${step}/${sha256Hex(payload)}`;
