/**
 * @module The runtime's key layout in the queue's caller KV namespace and in
 * the memo object store. Pure functions; every reader and writer goes
 * through them so the layout is defined once.
 *
 * A run belongs to its step queue: the queue its steps are jobs of (the
 * builder's `queueName`), whose workers process it and whose dedup keys
 * guard it. Every KV key therefore carries the step queue's name, so
 * runtimes over one `Queue` with different step queues keep separate run-id
 * (and signal-key and group) namespaces: run `order-1` of queue `emails`
 * and run `order-1` of queue `billing` are two runs. Runtimes over the same
 * step queue share everything, which is what makes status, cancel and
 * signals work from any of them and after a restart. Queue names contain no
 * `/`, so a key's queue segment is unambiguous.
 *
 * KV (all under {@link RESERVED_KV_PREFIX}; `{q}` is the step queue name):
 * - `workflow/runs/{q}/{runId}`: the run record, from submission to termination;
 * - `workflow/steps/{q}/{runId}`: the current-step pointer, rewritten per step;
 * - `workflow/outcomes/{q}/{runId}`: the terminal record, from termination to sweep
 *   (with the run's outcome when it is small: see `runs/inline-outcome`);
 * - `workflow/terminals/{q}/...`: retention markers (an expiry index);
 * - `workflow/groups/{q}/{groupTag}/{key}`: run-group member records;
 * - `workflow/children/{q}/{parentRunId}/{childRunId}`: a running child run
 *   of a parent (see `children/child-runs`), from its start to its end;
 * - `workflow/memo-owed/{q}/{runId}`: the memo set a removed run's removal
 *   has still to clear (see `memo/memo-owed`);
 * - `workflow/signal-wait/{q}/{key}`, `workflow/signal-buf/{q}/{key}`,
 *   `workflow/signal-delivered/{q}/{runId}/{step}`,
 *   `workflow/signal-timed-out/{q}/{runId}/{step}`: durable signals.
 *
 * Objects (under the memo prefix of the runtime that submitted the run, which
 * the run record names, so every runtime of the step queue finds them; it
 * defaults to `{q}-memo`, and runtimes of different step queues must not
 * share one):
 * - `{prefix}/memos/{runId}/@{set}/{step}/{sha256(key)}` and `{prefix}/memos/{runId}/@{set}/run/{sha256(key)}`,
 *   with `set` a hash of the run record's `memoSet`: each submission of the
 *   run id has its own, so a run submitted again after its end never reads
 *   the memos of the run before it. Runs submitted by earlier versions have
 *   no memo set and keep theirs one level up (`{prefix}/memos/{runId}/{step}/...`);
 * - `{prefix}/step-outputs/{runId}/@{set}/{step}/{sha256(payload)}`: replay
 *   records (without `@{set}/` for runs submitted by earlier versions);
 * - `{prefix}/run-results/{h[0..2]}/{h}.{sha256(token)}` with `h = sha256(runId)`:
 *   run result records, one per terminating settlement whose outcome is too
 *   large for its terminal record. They share 256
 *   folders instead of living in the run's memo folder, so writing one at
 *   the end of a run creates no folder (on a local directory each new
 *   folder costs a synced entry in its parent); the run's records are still
 *   one listing away. Stores written before kept them in the run memo, at
 *   `{prefix}/memos/{runId}/run/{sha256("workflow.outcome:" + token)}`,
 *   where readers look when the new key holds nothing.
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
export const SIGNAL_TIMED_OUT_PREFIX = `${RESERVED_KV_PREFIX}signal-timed-out/`;
export const GROUPS_PREFIX = `${RESERVED_KV_PREFIX}groups/`;
export const CHILDREN_PREFIX = `${RESERVED_KV_PREFIX}children/`;
/** Memo clears a removal still owes (`memo/memo-owed`: `workflow/memo-owed/{q}/{runId}`). */
export const MEMO_OWED_PREFIX = `${RESERVED_KV_PREFIX}memo-owed/`;
/** Step histories (`runs/history-records`: `workflow/history/{q}/{runId}/{step}`). */
export const HISTORY_PREFIX = `${RESERVED_KV_PREFIX}history/`;

/**
 * The families every step reads or writes, which the runtime declares to its
 * queue when it is built (`Queue.declareKeyHeads`), so the engine's memtable
 * searches each family's keys alone (bench/RESULTS.md, wave 43).
 */
export const BUSIEST_KEY_PREFIXES: readonly string[] = Object.freeze([RUNS_PREFIX, STEPS_PREFIX, HISTORY_PREFIX]);

/** The run record of `runId` in step queue `q`. */
export const runKey = (q: string, runId: string): string => `${RUNS_PREFIX}${q}/${runId}`;
/** The current-step pointer of `runId` in step queue `q`. */
export const stepPointerKey = (q: string, runId: string): string => `${STEPS_PREFIX}${q}/${runId}`;
/** The terminal record of `runId` in step queue `q`. */
export const terminalRecordKey = (q: string, runId: string): string => `${OUTCOMES_PREFIX}${q}/${runId}`;
/** The wait index entry of a correlation key in step queue `q`. */
export const signalWaitKey = (q: string, correlationKey: string): string => `${SIGNAL_WAIT_PREFIX}${q}/${correlationKey}`;
/** The buffered signal of a correlation key in step queue `q`. */
export const signalBufferKey = (q: string, correlationKey: string): string => `${SIGNAL_BUF_PREFIX}${q}/${correlationKey}`;
/** Prefix of the member records of one run group of step queue `q`, ending in `/`. */
export const groupMembersPrefix = (q: string, groupTag: string): string => `${GROUPS_PREFIX}${q}/${groupTag}/`;
/** Member record of one key of a run group of step queue `q`. */
export const groupMemberKey = (q: string, groupTag: string, key: string): string => `${groupMembersPrefix(q, groupTag)}${key}`;
/** Prefix of the running-child entries of parent run `parentRunId` of step queue `q`, ending in `/`. */
export const childrenPrefix = (q: string, parentRunId: string): string => `${CHILDREN_PREFIX}${q}/${parentRunId}/`;
/** The running-child entry of child run `childRunId` of parent `parentRunId` in step queue `q`. */
export const childEntryKey = (q: string, parentRunId: string, childRunId: string): string => `${childrenPrefix(q, parentRunId)}${childRunId}`;
/** Prefix of the correlation keys under which the children of `parentRunId` report their ends. */
export const childCompletionPrefix = (parentRunId: string): string => `workflow.child/${parentRunId}/`;
/**
 * The correlation key under which child run `childRunId` reports its end to
 * its parent `parentRunId`: the parent continues on it to wait for the child.
 */
export const childCompletionKey = (parentRunId: string, childRunId: string): string => `${childCompletionPrefix(parentRunId)}${childRunId}`;
/** The signal consumed on behalf of `(runId, step)` in step queue `q`. */
export const signalDeliveredKey = (q: string, runId: string, step: number): string => `${SIGNAL_DELIVERED_PREFIX}${q}/${runId}/${step}`;
/** Marks that `(runId, step)` in step queue `q` resolved its wait as timed out, so every redelivery sees the timeout. */
export const signalTimedOutKey = (q: string, runId: string, step: number): string => `${SIGNAL_TIMED_OUT_PREFIX}${q}/${runId}/${step}`;
/** Prefix of the retention markers of step queue `q`, ending in `/`. */
export const terminalMarkersPrefix = (q: string): string => `${TERMINALS_PREFIX}${q}/`;

/** Dedup key of a step job: no two pending or scheduled jobs exist for one step. */
export const stepDedupKey = (runId: string, step: number): string => `run:${runId}:${step}`;
/** Dedup key of a run's notification job for one termination, named by `endDedupName`. */
export const terminalDedupKey = (runId: string, end: string): string => `run:${runId}:terminal:${end}`;

/** Object prefix of every memo entry of a run (both namespaces), ending in `/`. */
export const runMemoRoot = (memoPrefix: string, runId: string): string => `${memoPrefix}/memos/${runId}/`;
/**
 * The folder of one submission's memos under a run's memo or replay root:
 * `@` and a hash of the run record's `memoSet`, never a step number or
 * `run`, which is where runs submitted before memo sets existed keep theirs.
 */
export const memoSetSegment = (memoSet: string): string => `@${sha256Hex(memoSet).slice(0, 32)}`;
/** Where the namespaces of one submission's memos start under `root` (a run's memo or replay root): `root` itself for a run without a memo set. */
const memoSetRoot = (root: string, memoSet: string | undefined): string => (memoSet === undefined ? root : `${root}${memoSetSegment(memoSet)}/`);
/** Object prefix of a memo namespace: a step number, or `"run"` for the run-scoped one, of the submission whose memo set is `memoSet`. */
export const memoNamespacePrefix = (memoPrefix: string, runId: string, scope: number | "run", memoSet?: string): string =>
  `${memoSetRoot(runMemoRoot(memoPrefix, runId), memoSet)}${scope}/`;
/** Object key of one memo entry; user keys are hashed so any string is a valid key. */
export const memoEntryKey = (memoPrefix: string, runId: string, scope: number | "run", userKey: string, memoSet?: string): string =>
  `${memoNamespacePrefix(memoPrefix, runId, scope, memoSet)}${sha256Hex(userKey)}`;
/** Object key prefix of every run result record of `runId` (not a folder: the records of many runs share one). */
export const runResultPrefix = (memoPrefix: string, runId: string): string => {
  const h = sha256Hex(runId);
  return `${memoPrefix}/run-results/${h.slice(0, 2)}/${h}.`;
};
/** Object key of the run result record of `runId` written by the terminating settlement `token`. */
export const runResultKey = (memoPrefix: string, runId: string, token: string): string => `${runResultPrefix(memoPrefix, runId)}${sha256Hex(token)}`;
/** Object prefix of every replay record of a run, ending in `/`. */
export const runReplayRoot = (memoPrefix: string, runId: string): string => `${memoPrefix}/step-outputs/${runId}/`;
/** Object key of the replay record of one delivery of a step with `payload`. */
export const replayRecordKey = (memoPrefix: string, runId: string, step: number, payload: Uint8Array, memoSet?: string): string =>
  `${memoSetRoot(runReplayRoot(memoPrefix, runId), memoSet)}${step}/${sha256Hex(payload)}`;
