/**
 * @module What every terminating settlement writes, whichever path
 * terminates the run (a worker's ack or dead-letter, an exhausted nack, an
 * external cancel's removal, dead-step reconciliation).
 *
 * Pure: builds the effects; the caller commits them with its settlement.
 */
import { SettlementEffects } from "../../queue/effects.js";
import { ExpiryIndex } from "../../queue/expiry-index.js";
import {
  childCompletionKey,
  childEntryKey,
  groupMemberKey,
  signalBufferKey,
  runKey,
  signalDeliveredKey,
  signalTimedOutKey,
  signalWaitKey,
  stepPointerKey,
  terminalDedupKey,
  terminalRecordKey,
  terminalMarkersPrefix,
} from "../records/kv-keys.js";
import {
  encodeGroupMember,
  encodeRunOutcome,
  terminalRecordForCommit,
  type GroupRef,
  type InlineOutcome,
  type ParentRef,
  type RunRecord,
  type TerminalRecord,
} from "../records/records.js";
import {
  HEADER_CHILD_ENDED,
  HEADER_PARENT_ENDED,
  HEADER_PARENT_STATUS,
  HEADER_PARENT_SUBMISSION,
  HEADER_RUN_ID,
  HEADER_TERMINAL,
} from "../records/reserved.js";
import { encodeChildEnd } from "../children/child-end.js";
import type { RunId } from "./run-id.js";
import type { RunErrorKind, RunOutcome, TerminalStatus } from "./run-types.js";
import { hookObserves, type TerminalHook } from "../terminal-hook/terminal-hook.js";
import { decodeValue, encodeValue } from "../records/codec.js";
import { type CommitOnlyBytes, type CommitTarget, stageCommitOnly } from "../records/commit-bytes.js";
import { StoreCorruptedError } from "../../errors.js";
import { stageEnded } from "./index-effects.js";
import { boundText } from "../../logger.js";
import type { Building } from "../../queue/cancel-state.js";
import { ownFieldsIfPolluted } from "../../own-fields.js";
import { inlineHeadersOf } from "./inline-outcome.js";
import { endDedupName } from "./end-tokens.js";

/**
 * Most characters of a run's error text kept in its terminal and group
 * member records (KV values, at most 256 KiB): the run's result record
 * (`WorkflowRuntime.outcome`) keeps the whole text.
 */
export const MAX_RECORDED_ERROR_CHARS = 16 * 1024;

/** Settings the terminal effects depend on. */
export interface TerminalSettings {
  queueName: string;
  hook: TerminalHook;
  /** Memo retention window; a marker is written only when set. */
  memoRetentionMs: number | undefined;
  /** Where retention markers go (see `terminalMarkersFor`). */
  markers: ExpiryIndex;
  /** The queue the terminal effects commit to, which tells whether its commits copy what they take (see `CommitOnlyBytes`). */
  commits: CommitTarget;
}

/** One termination of a run. */
export interface TerminationInput {
  runId: RunId;
  incarnation: string;
  status: TerminalStatus;
  error?: string | undefined;
  errorKind?: RunErrorKind | undefined;
  /** See `RunOutcome.publicError`. */
  publicError?: string | undefined;
  /** See `RunOutcome.errorCode`. */
  errorCode?: string | undefined;
  result?: Uint8Array | undefined;
  finalStep: number;
  /**
   * `false` when the final step's job never waited on a signal (it carries no
   * signal-wait header), so it holds no delivered or timed-out key to delete:
   * each delete of an absent key still costs the commit a log entry and a
   * tombstone. Absent: deleted, for ends that do not know (a cancel, reconciliation).
   */
  finalStepWaited?: boolean | undefined;
  headers: Readonly<Record<string, string>>;
  /** Identifies the terminating settlement (see `TerminalRecord.token`). */
  token: string;
  /** Where the run's memo entries live (the run record's `memoPrefix`). */
  memoPrefix: string;
  /** The run record's `memoSet`, when it has one: its retention marker names it. */
  memoSet?: string | undefined;
  nowMs: number;
  priority?: number | undefined;
  maxAttempts?: number | undefined;
  /** A signal wait index entry the run holds, to release. */
  signalWait?: string | undefined;
  /** The run group member this run is, whose record the termination rewrites. */
  group?: GroupRef | undefined;
  /** The run's submission time (its place in the run index). */
  submittedAtMs: number;
  /** The run record's `submission`, when it has one. */
  submission?: string | undefined;
  /** The parent run that started this run as its child, to which the termination reports. */
  parent?: ParentRef | undefined;
  /** The run has child bookkeeping to settle (running children, unread child ends): see `children/child-runs`. */
  hasChildren?: boolean | undefined;
  /** The run that replaced this one (a debounce). */
  supersededBy?: RunId | undefined;
  /** The run's reserved trace header, passed on to the notification job so the terminal hook joins the run's trace. */
  traceHeaders?: Readonly<Record<string, string>>;
  /** The outcome the worker recorded in the terminal record instead of a run result record (see `inline-outcome`). */
  inline?: InlineOutcome | undefined;
}

/**
 * The optional fields of a `TerminationInput`. Its builders leave an absent
 * one out, so under a polluted `Object.prototype` (see `own-fields`) reading
 * it would find the prototype's value and record it as the run's.
 */
const TERMINATION_INPUT_OPTIONAL: readonly (keyof TerminationInput)[] = [
  "error",
  "errorKind",
  "publicError",
  "errorCode",
  "result",
  "priority",
  "maxAttempts",
  "finalStepWaited",
  "signalWait",
  "group",
  "submission",
  "parent",
  "hasChildren",
  "supersededBy",
  "traceHeaders",
  "inline",
];

/** The optional fields of a `RunOutcome`, given as its own by `runOutcomeOf` under a polluted prototype. */
const OUTCOME_OPTIONAL: readonly (keyof RunOutcome)[] = ["result", "error", "errorKind", "publicError", "errorCode", "supersededBy"];

/** How a run ends that no step settlement ends: a debounce replacing it, reconciliation of its dead step, a cancel. */
export interface EndOfActiveRun {
  status: TerminalStatus;
  errorKind: RunErrorKind;
  error?: string | undefined;
  finalStep: number;
  token: string;
  supersededBy?: RunId | undefined;
  signalWait?: string | undefined;
}

/**
 * The termination of the active run `run` as `end` says, the rest from the
 * run's own records: its headers, group, parent, children and memo prefix
 * (`defaultMemoPrefix` for a record that names none), and the priority and
 * attempts of its step job `job` when read (else the run's). No worker
 * records an outcome for such an end: the terminal record keeps the
 * headers, so the outcome read back from it reports them.
 */
export function terminationOfActive(
  runId: RunId,
  run: RunRecord,
  end: EndOfActiveRun,
  nowMs: number,
  defaultMemoPrefix: string,
  job?: { readonly priority: number; readonly maxAttempts: number } | null,
): TerminationInput {
  return {
    runId,
    incarnation: run.incarnation,
    ...end,
    headers: run.headers,
    memoPrefix: run.memoPrefix ?? defaultMemoPrefix,
    memoSet: run.memoSet,
    nowMs,
    priority: job?.priority ?? run.priority,
    maxAttempts: job?.maxAttempts ?? run.maxAttempts,
    group: run.group,
    parent: run.parent,
    hasChildren: run.hasChildren,
    submittedAtMs: run.submittedAtMs,
    submission: run.submission,
    inline: inlineHeadersOf(run.headers),
  };
}

/**
 * Retention markers of the runs of step queue `queueName`: an expiry index
 * whose entries are suffixed with the run id and hold a {@link MarkerValue},
 * so any runtime of the step queue sweeps any of its runs, wherever their
 * memo entries live.
 */
export function terminalMarkersFor(queueName: string): ExpiryIndex {
  return new ExpiryIndex(terminalMarkersPrefix(queueName));
}

/** What a retention marker holds: the termination it belongs to and where the run's memo entries live. */
export interface MarkerValue {
  token: string;
  memoPrefix: string;
  /** The ended run's memo set; absent for a run without one and in markers written before sets existed. */
  memoSet?: string;
  /**
   * The ended pass's incarnation, which the terminal record it belongs to
   * holds too: a later run under the id may end with the same token (a
   * caller's `WorkflowQueue` may give its step the same job id), never with
   * the same incarnation. Absent in markers written before it was kept.
   */
  incarnation?: string;
}

export function encodeMarkerValue(v: MarkerValue): Uint8Array {
  const out: MarkerValue = { token: v.token, memoPrefix: v.memoPrefix };
  if (v.memoSet !== undefined) out.memoSet = v.memoSet;
  if (v.incarnation !== undefined) out.incarnation = v.incarnation;
  return encodeValue(out);
}

/** The marker's value; `StoreCorruptedError` naming `key` when it is not one. */
export function decodeMarkerValue(bytes: Uint8Array, key: string): MarkerValue {
  let v: unknown;
  try {
    v = decodeValue(bytes);
  } catch {
    v = undefined;
  }
  const m = v as Partial<MarkerValue> | undefined;
  if (m === undefined || m === null || typeof m.token !== "string" || typeof m.memoPrefix !== "string") {
    throw new StoreCorruptedError(key, "retention marker lacks its token or memo prefix");
  }
  // Read own: a `memoSet` on Object.prototype must not name a set to clear.
  const memoSet = Object.hasOwn(m, "memoSet") ? m.memoSet : undefined;
  if (memoSet !== undefined && typeof memoSet !== "string") throw new StoreCorruptedError(key, "retention marker has a malformed memo set");
  const incarnation = Object.hasOwn(m, "incarnation") ? m.incarnation : undefined;
  if (incarnation !== undefined && typeof incarnation !== "string") throw new StoreCorruptedError(key, "retention marker has a malformed incarnation");
  const out: MarkerValue = { token: m.token, memoPrefix: m.memoPrefix };
  if (memoSet !== undefined) out.memoSet = memoSet;
  if (incarnation !== undefined) out.incarnation = incarnation;
  return out;
}

/** The outcome the hook and `WorkflowRuntime.outcome` see for a termination. */
export function runOutcomeOf(t: TerminationInput): RunOutcome {
  ownFieldsIfPolluted(t, TERMINATION_INPUT_OPTIONAL);
  const o: Building<RunOutcome> = {
    runId: t.runId,
    status: t.status,
    headers: { ...t.headers },
    finalStep: t.finalStep,
  };
  if (t.result !== undefined) o.result = t.result;
  if (t.error !== undefined) o.error = t.error;
  if (t.errorKind !== undefined) o.errorKind = t.errorKind;
  if (t.publicError !== undefined) o.publicError = t.publicError;
  if (t.errorCode !== undefined) o.errorCode = t.errorCode;
  if (t.supersededBy !== undefined) o.supersededBy = t.supersededBy;
  // Its readers (the inline outcome, a parent's child end, the hook's job) read absent fields too.
  ownFieldsIfPolluted(o, OUTCOME_OPTIONAL);
  return o;
}

/**
 * The options of a job a run's end enqueues for its parent or children: the
 * step job's priority and attempts when the run had them. A function of the
 * module, not a closure per end: a closure bound to a name costs a
 * definition of its name per call where the sources run through esbuild's
 * keepNames (tsx, as the peers' harness runs them).
 */
function endJobOptions(
  t: TerminationInput,
  dedupKey: string,
  headers: Record<string, string>,
): { dedupKey: string; headers: Record<string, string>; priority?: number; maxAttempts?: number } {
  return {
    dedupKey,
    headers,
    ...(t.priority === undefined ? {} : { priority: t.priority }),
    ...(t.maxAttempts === undefined ? {} : { maxAttempts: t.maxAttempts }),
  };
}

/**
 * What a worker's termination hands `addTerminalEffects` and gets back: the
 * outcome it made to record (`runOutcomeOf`, made once), and the terminal
 * record staged with the bytes staged for it, which the process that
 * commits them may keep as the record's decoding (see `WorkflowView.endCommitted`).
 */
export interface WrittenTerminal {
  outcome?: RunOutcome | undefined;
  record?: TerminalRecord | undefined;
  bytes?: CommitOnlyBytes | undefined;
}

/**
 * `record` as a decoding of its bytes gives it, for readers to share: its
 * inline result copied now, as the bytes were encoded, since the outcome
 * shown to the hook (which may change it) holds the same array.
 */
function keptRecord(record: TerminalRecord): TerminalRecord {
  const inline = record.inline;
  if (inline?.result === undefined) return record;
  return { ...record, inline: { ...inline, result: inline.result.slice() } };
}

/**
 * Adds to `into` everything a termination commits: the run record and
 * step pointer removed, the terminal record written, signal bookkeeping
 * released, the retention marker (when retention is on) and the
 * notification job (when the hook observes the outcome).
 *
 * What only some runs add (a group, retention, a parent, children, a hook
 * that observes) is in functions of its own: V8 optimizes a function after
 * ticks in proportion to its bytecode, so this one, run once per run, is
 * optimized windows sooner without their bytecode (and theirs when used).
 */
export function addTerminalEffects(
  s: TerminalSettings,
  t: TerminationInput,
  into: SettlementEffects = new SettlementEffects(),
  written?: WrittenTerminal,
): SettlementEffects {
  // First: it gives `t` its optional fields as its own under a polluted prototype. The worker made it already to record it.
  const outcome = written?.outcome ?? runOutcomeOf(t);
  const error = t.error === undefined ? undefined : boundText(t.error, MAX_RECORDED_ERROR_CHARS);
  into.kvDelete(runKey(s.queueName, t.runId));
  into.kvDelete(stepPointerKey(s.queueName, t.runId));
  if (t.finalStepWaited !== false) {
    into.kvDelete(signalDeliveredKey(s.queueName, t.runId, t.finalStep));
    into.kvDelete(signalTimedOutKey(s.queueName, t.runId, t.finalStep));
  }
  if (t.signalWait !== undefined) into.kvDelete(signalWaitKey(s.queueName, t.signalWait));
  const record = terminalRecordOf(t, error);
  const bytes = terminalRecordForCommit(record, s.commits);
  stageCommitOnly(into, terminalRecordKey(s.queueName, t.runId), bytes);
  if (written !== undefined) {
    written.record = keptRecord(record);
    written.bytes = bytes;
  }
  stageEnded(s.queueName, t.runId, t.submittedAtMs, t.status, into);
  if (t.group !== undefined) addGroupMember(s, t, t.group, error, into);
  if (s.memoRetentionMs !== undefined) addRetentionMarker(s, t, s.memoRetentionMs, into);
  if (t.parent !== undefined) addChildEnd(s, t, t.parent, outcome, into);
  if (t.hasChildren === true) addParentEnded(s, t, into);
  if (hookObserves(s.hook, outcome)) addEndNotification(s, t, outcome, into);
  return into;
}

/** The terminal record of `t` (`error` bounded). */
function terminalRecordOf(t: TerminationInput, error: string | undefined): TerminalRecord {
  // Optional fields set after the others, in the record's own order: no empty object spread per absent one.
  const record: Building<TerminalRecord> = {
    runId: t.runId,
    status: t.status,
    finalStep: t.finalStep,
    terminatedAtMs: t.nowMs,
    incarnation: t.incarnation,
    token: t.token,
    memoPrefix: t.memoPrefix,
    submittedAtMs: t.submittedAtMs,
  };
  if (t.submission !== undefined) record.submission = t.submission;
  if (error !== undefined) record.error = error;
  if (t.errorKind !== undefined) record.errorKind = t.errorKind;
  if (t.supersededBy !== undefined) record.supersededBy = t.supersededBy;
  if (t.inline !== undefined) record.inline = t.inline;
  return record;
}

/** The run's entry in its group, with its end. */
function addGroupMember(s: TerminalSettings, t: TerminationInput, group: GroupRef, error: string | undefined, into: SettlementEffects): void {
  into.kvPut(
    groupMemberKey(s.queueName, group.id, group.key),
    encodeGroupMember({
      key: group.key,
      runId: t.runId,
      incarnation: t.incarnation,
      state: t.status,
      terminatedAtMs: t.nowMs,
      ...(error === undefined ? {} : { error }),
      ...(t.errorKind === undefined ? {} : { errorKind: t.errorKind }),
    }),
  );
}

/** The marker that removes the run's memo entries once its retention ends. */
function addRetentionMarker(s: TerminalSettings, t: TerminationInput, retentionMs: number, into: SettlementEffects): void {
  s.markers.add(
    into,
    t.nowMs + retentionMs,
    t.runId,
    encodeMarkerValue({ token: t.token, memoPrefix: t.memoPrefix, incarnation: t.incarnation, ...(t.memoSet === undefined ? {} : { memoSet: t.memoSet }) }),
  );
}

/**
 * A child's end for its parent: it waits in the parent's signal buffer, written with the
 * termination itself, so it is durable exactly when the end is; the job wakes the parent's
 * step if it already waits (a later wait consumes the buffer when it registers).
 */
function addChildEnd(s: TerminalSettings, t: TerminationInput, parent: ParentRef, outcome: RunOutcome, into: SettlementEffects): void {
  const key = childCompletionKey(parent.runId, t.runId);
  into.kvDelete(childEntryKey(s.queueName, parent.runId, t.runId));
  into.kvPut(signalBufferKey(s.queueName, key), encodeChildEnd(outcome, { token: t.token, memoPrefix: t.memoPrefix, incarnation: t.incarnation }));
  into.enqueue(s.queueName, encodeValue(parent.runId), endJobOptions(t, `run:${t.runId}:child-ended:${endDedupName(t)}`, { [HEADER_CHILD_ENDED]: key }));
}

/** The job that tells a parent's children it ended. */
function addParentEnded(s: TerminalSettings, t: TerminationInput, into: SettlementEffects): void {
  // The submission tells this run's children from those of a later run under its id, should this job come late.
  const headers = {
    [HEADER_PARENT_ENDED]: t.runId,
    ...(t.submission === undefined ? {} : { [HEADER_PARENT_SUBMISSION]: t.submission, [HEADER_PARENT_STATUS]: t.status }),
  };
  into.enqueue(s.queueName, encodeValue(t.status), endJobOptions(t, `run:${t.runId}:parent-ended:${endDedupName(t)}`, headers));
}

/** The notification job of a hook that observes `outcome`. */
function addEndNotification(s: TerminalSettings, t: TerminationInput, outcome: RunOutcome, into: SettlementEffects): void {
  const opts: { dedupKey: string; headers: Record<string, string>; priority?: number; maxAttempts?: number } = {
    dedupKey: terminalDedupKey(t.runId, endDedupName(t)),
    headers: { ...t.traceHeaders, [HEADER_RUN_ID]: t.runId, [HEADER_TERMINAL]: "1" },
  };
  if (t.priority !== undefined) opts.priority = t.priority;
  if (t.maxAttempts !== undefined) opts.maxAttempts = t.maxAttempts;
  into.enqueue(s.queueName, encodeRunOutcome(outcome), opts);
}
