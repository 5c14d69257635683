/**
 * @module The runtime's durable records and their codecs.
 *
 * Every record is a MessagePack map with named fields. Decoders check the
 * shape and throw `StoreCorruptedError` naming the key, so a damaged record
 * is reported, never half-read.
 */
import { StoreCorruptedError, ValidationError } from "../../errors.js";
import { decodeValue, decodeValueDefining, encodeValue } from "./codec.js";
import { type CommitOnlyBytes, type CommitTarget, encodeForCommit } from "./commit-bytes.js";
import { beginPlainFields, endPlainFields, fieldName, plainCompact, plainField, plainNumber, plainString } from "../../queue/record-pack.js";
import type { RunErrorKind, RunOutcome, TerminalStatus, Termination } from "../runs/run-types.js";
import type { RunId } from "../runs/run-id.js";
import type { StepOutcome } from "../steps/step-outcome.js";
import { describeValue } from "../../option-values.js";
import { ownFieldsIfPolluted, prototypeHoldsAny, setOwn } from "../../own-fields.js";
import { isCount, isPositiveCount, isStoredDelay, isStoredTime } from "../../value-ranges.js";
import { MAX_DELAY_MS } from "../../time-bounds.js";
import { isPriority, MAX_PRIORITY } from "../../queue/config.js";

/** `workflow/runs/{runId}`: an active run. Deleted by the terminating settlement. */
export interface RunRecord {
  runId: string;
  submittedAtMs: number;
  /** Hex SHA-256 of step 0's input, for the duplicate-with-different-input check. */
  inputSha256: string;
  /**
   * Identifies this pass of the run: a ULID drawn at submission (the
   * `submission`) and drawn again by `retryRun`. The records a pass leaves
   * (its terminal record, a group member's end, a job's result record, a
   * retention marker) name it, so an earlier pass's or run's never match.
   * Step 0's job id in records written before it was drawn.
   */
  incarnation: string;
  /**
   * Identifies the submission that started this run: a ULID drawn at
   * submission (never a job id, which a caller's `WorkflowQueue` may hand a
   * later run's first step again), kept by `retryRun`: a run submitted again
   * under the id after its end gets a new one. Its children record it (see
   * `children/child-runs`). Step 0's job id in records written before it
   * was drawn; absent in records written before it existed.
   */
  submission?: string;
  headers: Record<string, string>;
  priority?: number;
  maxAttempts?: number;
  /** Set by `WorkflowRuntime.cancel`; the worker settles the run as cancelled. */
  cancelRequested?: boolean;
  /** The run group and member key this run was submitted as, if any. */
  group?: GroupRef;
  /** The run that started this one as its child, if any (see `children/child-runs`). */
  parent?: ParentRef;
  /** Set when the run starts its first child: its termination then settles its children. */
  hasChildren?: boolean;
  /**
   * The memo prefix of the runtime that submitted the run: every runtime of
   * the step queue keeps the run's memo entries, replay records and result
   * record there, so they stay together whichever runtime works a step.
   * Absent in records written before it existed (the runtime's own prefix).
   */
  memoPrefix?: string;
  /**
   * The memo set of this submission (a ULID drawn at submission, the `submission` itself since that is one; kept by `retryRun`):
   * its steps' memo entries and replay records live under it, so a run
   * submitted again under the id after its end reads none of the earlier
   * run's. Absent in records written before it existed: their memos sit
   * where those versions put them, which the run keeps reading.
   */
  memoSet?: string;
}

/** A child run's link to the run that started it. */
export interface ParentRef {
  runId: string;
  /** The parent's step that started the child. */
  step: number;
  /** The child's parent-close policy (absent: `cancel`). */
  parentClose?: ParentClosePolicy;
  /**
   * The parent's `submission`: which run under the parent's id started the
   * child. Absent in records written before it existed, and for a parent
   * whose record had none.
   */
  submission?: string;
}

/** `workflow/children/{q}/{parent}/{child}`: a running child of a parent run. */
export interface ChildEntry {
  /** What happens to the child when the parent fails or is cancelled while it runs. */
  parentClose: ParentClosePolicy;
}

/** What a running child does when its parent fails or is cancelled: be cancelled (default) or keep running. */
export type ParentClosePolicy = "cancel" | "abandon";

export const isParentClosePolicy = (v: unknown): v is ParentClosePolicy => v === "cancel" || v === "abandon";

/** `policy` if it is a parent-close policy; a `ValidationError` otherwise (a caller's untyped value). */
export function checkParentClose(policy: unknown): ParentClosePolicy {
  if (!isParentClosePolicy(policy)) throw new ValidationError(`parentClose must be "cancel" or "abandon", got ${describeValue(policy)}`);
  return policy;
}

export function encodeChildEntry(e: ChildEntry): Uint8Array {
  return encodeValue({ parentClose: e.parentClose });
}

export function decodeChildEntry(bytes: Uint8Array, key: string): ChildEntry {
  return decodeChecked<ChildEntry>(bytes, key, "child run entry", (v) =>
    isParentClosePolicy(v.parentClose) ? undefined : "has an unknown parent-close policy",
  );
}

/** A run's place in a run group. */
export interface GroupRef {
  id: string;
  key: string;
}

/**
 * `workflow/groups/{groupId}/{key}`: one member of a run group, written with
 * the member's submission and rewritten by the settlement that terminates it.
 */
export interface GroupMemberRecord {
  key: string;
  runId: string;
  /** The pass of the run it describes (the run record's incarnation). */
  incarnation: string;
  state: "active" | TerminalStatus;
  error?: string;
  errorKind?: RunErrorKind;
  terminatedAtMs?: number;
}

export function encodeGroupMember(r: GroupMemberRecord): Uint8Array {
  return encodeValue(compact(r));
}

const MEMBER_OPTIONAL = fieldsOf<GroupMemberRecord>("error", "errorKind", "terminatedAtMs");

export function decodeGroupMember(bytes: Uint8Array, key: string): GroupMemberRecord {
  return decodeChecked<GroupMemberRecord>(
    bytes,
    key,
    "group member record",
    (v) => {
      if (!isStr(v.key) || !isStr(v.runId) || !isStr(v.incarnation)) return "lacks its key, run or incarnation";
      if (v.state !== "active" && !(isStr(v.state) && TERMINAL_STATUSES.includes(v.state))) return "has an unknown state";
      if (!optional(v.terminatedAtMs, isStoredTime)) return `has an end time of ${describeValue(v.terminatedAtMs)}, ${NO_TIME}`;
      return optional(v.error, isStr) ? undefined : "has a malformed termination";
    },
    MEMBER_OPTIONAL,
  );
}

/** `workflow/steps/{runId}`: which queue job is the run's current step. */
export interface StepPointer {
  step: number;
  jobId: string;
  /** The correlation key the step waits on, when it was continued on a signal. */
  signalWait?: string;
  /** The step's name, as the runner described its payload (typed workflows). */
  name?: string;
}

/** `workflow/outcomes/{runId}`: a terminated run. */
export interface TerminalRecord extends Termination {
  incarnation: string;
  /** Identifies the terminating settlement; the run result record carries the same token. */
  token: string;
  /** Where the run's memo entries and result record live (the run record's `memoPrefix`). */
  memoPrefix?: string;
  /** The run's submission time, which places it in the run index; absent in records written before the index existed. */
  submittedAtMs?: number;
  /** The run record's `submission`, when it had one. */
  submission?: string;
  /**
   * The outcome fields the termination does not hold, when the worker kept
   * the outcome here instead of in a run result record (see
   * `runs/inline-outcome`). Absent when the outcome is in a result record,
   * when no worker recorded one, and in records written before it existed.
   */
  inline?: InlineOutcome;
}

/**
 * The part of a run's outcome a terminal record keeps inline: the rest
 * (status, error, error kind, final step, superseding run) is the
 * termination's own.
 */
export interface InlineOutcome {
  result?: Uint8Array;
  headers: Record<string, string>;
  publicError?: string;
  errorCode?: string;
}

/** The run result record of an outcome too large for the terminal record (see `runResultKey`). */
export interface OutcomeRecord {
  token: string;
  /**
   * The incarnation of the pass whose end wrote it, which its terminal
   * record holds too: a later pass under the run id may end with the same
   * token (a caller's `WorkflowQueue` may hand its step the same job id)
   * and write its record at the same key. Absent in records written before
   * it was kept.
   */
  incarnation?: string;
  outcome: RunOutcome;
}

/** Staged caller KV effects, as replay records store them. */
export interface StagedKv {
  puts: Array<[string, Uint8Array]>;
  deletes: string[];
}

/** `{memoPrefix}/step-outputs/...`: an outcome stored before its settlement, replayed on redelivery. */
export interface ReplayRecord {
  storedAtMs: number;
  outcome: StepOutcome;
  effects: StagedKv;
}

type Check = (v: Record<string, unknown>) => string | undefined;

/**
 * @internal Decodes the record `what` at `key` as a MessagePack map; anything
 * else is a `StoreCorruptedError`. `optional`: the record's fields its
 * encoding may leave out, made its own (undefined) while `Object.prototype`
 * holds one of those names (see `ownFieldsIfPolluted`), so none is read from there.
 * `nested`: the optional fields of maps it holds, which the caller makes
 * their own; while the prototype holds one of those names or of
 * `optional`, the record is decoded so that no setter of that name is
 * called (see `decodeValueDefining`).
 */
export function decodeMap(
  bytes: Uint8Array,
  key: string,
  what: string,
  optional: readonly string[] = NO_FIELDS,
  nested: readonly string[] = NO_FIELDS,
): Record<string, unknown> {
  // Asked before the decode, so that a setter of one of those names is not called with the record's field.
  const polluted = prototypeHoldsAny(optional) || (nested.length > 0 && prototypeHoldsAny(nested));
  let v: unknown;
  try {
    v = polluted ? decodeValueDefining(bytes) : decodeValue(bytes);
  } catch (e) {
    throw new StoreCorruptedError(key, `${what} is not MessagePack: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new StoreCorruptedError(key, `${what} is not a map`);
  if (polluted && optional.length > 0) ownFieldsIfPolluted(v, optional);
  return v as Record<string, unknown>;
}

const NO_FIELDS: readonly string[] = [];

/** `optional` names as `decodeMap` takes them, each a field of `T` (checked when compiled). */
function fieldsOf<T>(...names: (keyof T & string)[]): readonly string[] {
  return names;
}

/** A nested map `v[k]` of a decoded record, given its own optional fields as `decodeMap` gives the record's. */
function ownNested(v: Record<string, unknown>, k: string, optional: readonly string[]): void {
  const o = v[k];
  if (o !== null && typeof o === "object") ownFieldsIfPolluted(o, optional);
}

function decodeChecked<T>(bytes: Uint8Array, key: string, what: string, check: Check, optional: readonly string[] = NO_FIELDS): T {
  const v = decodeMap(bytes, key, what, optional);
  const problem = check(v);
  if (problem !== undefined) throw new StoreCorruptedError(key, `${what} ${problem}`);
  return v as T;
}

const isStr = (x: unknown): x is string => typeof x === "string";
const isNum = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x);
/** What a stored time, count or limit outside its range is not (see value-ranges.ts). */
const NO_TIME = `not a time in ms from 0 to ${Number.MAX_SAFE_INTEGER}`;
const NO_STEP = "not a step index (a whole number from 0 up)";
const NO_LIMIT = "not a whole number from 1 up";
const isBytes = (x: unknown): x is Uint8Array => x instanceof Uint8Array;
const isStrMap = (x: unknown): boolean => x !== null && typeof x === "object" && !Array.isArray(x) && Object.values(x as object).every(isStr);
const optional = (x: unknown, pred: (x: unknown) => boolean): boolean => x === undefined || x === null || pred(x);
/** Fields new enough that no writer ever stored them as `null`. */
const absentOr = (x: unknown, pred: (x: unknown) => boolean): boolean => x === undefined || pred(x);

const SUBMISSION_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

/** Whether `x` can be a run's `submission`: 1 to 128 characters of `[A-Za-z0-9_-]` (a ULID, or a job id where earlier versions stored one). */
export const isSubmissionId = (x: unknown): x is string => typeof x === "string" && SUBMISSION_PATTERN.test(x);

/** A parent reference's shape, as run records and run index entries hold it. */
export const isParentRef = (p: unknown): boolean =>
  p !== null && typeof p === "object" && isStr((p as ParentRef).runId) && isCount((p as ParentRef).step) && absentOr((p as ParentRef).submission, isStr);

const TERMINAL_STATUSES: readonly string[] = ["succeeded", "failed", "cancelled"] satisfies TerminalStatus[];
const ERROR_KINDS: readonly string[] = ["runner", "transient", "permanent", "cancelled", "dead_lettered", "superseded"] satisfies RunErrorKind[];

/** Drops `undefined` fields so an encoded record omits them. */
function compact<T extends object>(o: T): T {
  const out: Record<string, unknown> = {};
  const from = o as Record<string, unknown>;
  // Own keys in `Object.entries` order, without its array of pairs (the step pointer is compacted per step).
  for (const k in from) {
    if (!Object.hasOwn(from, k)) continue;
    const v = from[k];
    if (v === undefined) continue;
    // Defined where Object.prototype holds the name: a setter there would take an assignment, and the record be stored without it.
    setOwn(out, k, v);
  }
  return out as T;
}

export function encodeRunRecord(r: RunRecord): Uint8Array {
  return encodeValue(compact(r));
}

/** `encodeRunRecord` for a put staged into a commit of `target` (see `CommitOnlyBytes`). */
export function runRecordForCommit(r: RunRecord, target: CommitTarget): CommitOnlyBytes {
  return encodeForCommit(compact(r), target);
}

const RUN_OPTIONAL = fieldsOf<RunRecord>("submission", "priority", "maxAttempts", "cancelRequested", "group", "parent", "hasChildren", "memoPrefix", "memoSet");
const PARENT_OPTIONAL = fieldsOf<ParentRef>("parentClose", "submission");

export function decodeRunRecord(bytes: Uint8Array, key: string): RunRecord {
  return decodeChecked<RunRecord>(
    bytes,
    key,
    "run record",
    (v) => {
      ownNested(v, "parent", PARENT_OPTIONAL);
      if (!isStr(v.runId) || typeof v.submittedAtMs !== "number" || !isStr(v.inputSha256) || !isStr(v.incarnation)) return "lacks its identity fields";
      if (!isStoredTime(v.submittedAtMs)) return `has a submission time of ${v.submittedAtMs}, ${NO_TIME}`;
      if (!isStrMap(v.headers)) return "has malformed headers";
      if (!optional(v.priority, isPriority)) return `has a step priority of ${describeValue(v.priority)}, not a whole number from 0 to ${MAX_PRIORITY}`;
      if (!optional(v.maxAttempts, isPositiveCount)) return `has a step attempt limit of ${describeValue(v.maxAttempts)}, ${NO_LIMIT}`;
      if (!optional(v.memoPrefix, isStr)) return "has a malformed memo prefix";
      if (!absentOr(v.memoSet, isStr)) return "has a malformed memo set";
      if (!absentOr(v.submission, isSubmissionId)) return `has a submission of ${describeValue(v.submission)}, not 1 to 128 characters of [A-Za-z0-9_-]`;
      // Every version that stored a memo set stored the submission too: its children are named by it.
      if (v.memoSet !== undefined && v.submission === undefined) return "has a memo set but no submission";
      if (!optional(v.group, (g) => g !== null && typeof g === "object" && isStr((g as GroupRef).id) && isStr((g as GroupRef).key)))
        return "has a malformed group";
      if (!optional(v.parent, isParentRef)) return "has a malformed parent";
      return undefined;
    },
    RUN_OPTIONAL,
  );
}

/**
 * How many fields the map whose MessagePack encoding starts `bytes` holds,
 * from its header alone; -1 when `bytes` does not start a map.
 */
function mapHeaderFields(bytes: Uint8Array): number {
  const b = bytes.length === 0 ? -1 : bytes[0]!;
  if (b >= 0x80 && b <= 0x8f) return b & 0x0f;
  if (b === 0xde && bytes.length >= 3) return (bytes[1]! << 8) | bytes[2]!;
  if (b === 0xdf && bytes.length >= 5) return ((bytes[1]! << 24) | (bytes[2]! << 16) | (bytes[3]! << 8) | bytes[4]!) >>> 0;
  return -1;
}

/**
 * A record at `key` read only to learn that it exists (a wait's read of an
 * active run): its header checked, its fields not decoded. Throws
 * `StoreCorruptedError` when the bytes start no map of at least `fields`
 * fields, which no encoding of the record does; the full decoder reads the rest.
 */
function checkRecordShape(bytes: Uint8Array, key: string, what: string, fields: number): void {
  const n = mapHeaderFields(bytes);
  if (n < 0) throw new StoreCorruptedError(key, `${what} is not a map`);
  if (n < fields) throw new StoreCorruptedError(key, `${what} lacks its required fields`);
}

/** `decodeRunRecord`'s check of the bytes' header only (see `checkRecordShape`): runId, submittedAtMs, inputSha256, incarnation and headers. */
export function checkRunRecordShape(bytes: Uint8Array, key: string): void {
  checkRecordShape(bytes, key, "run record", 5);
}

/** `decodeStepPointer`'s check of the bytes' header only (see `checkRecordShape`): step and jobId. */
export function checkStepPointerShape(bytes: Uint8Array, key: string): void {
  checkRecordShape(bytes, key, "step pointer", 2);
}

export function encodeStepPointer(p: StepPointer): Uint8Array {
  return encodeValue(compact(p));
}

const P_STEP = fieldName("step");
const P_JOB_ID = fieldName("jobId");
const P_NAME = fieldName("name");
const P_SIGNAL_WAIT = fieldName("signalWait");

/**
 * `encodeStepPointer`'s bytes for a pointer whose fields were set in the
 * order step, jobId, name, signalWait (a continuing step's: `continueRun`,
 * then `stageSignalWait`), written field by field: no compacted copy, and
 * the field names encoded once. A value the writer does not take goes to
 * `encodeStepPointer`. test/workflow/step-pointer-writer.test.ts holds the
 * two equal.
 */
export function encodeNextStepPointer(p: StepPointer): Uint8Array {
  beginPlainFields();
  plainField(P_STEP);
  plainNumber(p.step);
  plainField(P_JOB_ID);
  plainString(p.jobId);
  const { name, signalWait } = p;
  if (name !== undefined) {
    plainField(P_NAME);
    plainString(name);
  }
  if (signalWait !== undefined) {
    plainField(P_SIGNAL_WAIT);
    plainString(signalWait);
  }
  return endPlainFields(false) ?? encodeStepPointer(p);
}

/** `encodeStepPointer` for a put staged into a commit of `target` that nothing reads back (a submission's). */
export function stepPointerForCommit(p: StepPointer, target: CommitTarget): CommitOnlyBytes {
  return encodeForCommit(compact(p), target);
}

const POINTER_OPTIONAL = fieldsOf<StepPointer>("signalWait", "name");

export function decodeStepPointer(bytes: Uint8Array, key: string): StepPointer {
  return decodeChecked<StepPointer>(
    bytes,
    key,
    "step pointer",
    (v) => {
      if (typeof v.step === "number" && !isCount(v.step)) return `holds step ${v.step}, ${NO_STEP}`;
      return isNum(v.step) && isStr(v.jobId) && optional(v.signalWait, isStr) && optional(v.name, isStr) ? undefined : "lacks its step or job id";
    },
    POINTER_OPTIONAL,
  );
}

function terminationProblem(v: Record<string, unknown>): string | undefined {
  if (!isStr(v.runId) || !isStr(v.status) || !TERMINAL_STATUSES.includes(v.status)) return "has no valid status";
  if (typeof v.finalStep !== "number") return "has no final step";
  if (!isCount(v.finalStep)) return `has a final step of ${v.finalStep}, ${NO_STEP}`;
  if (!optional(v.error, isStr)) return "has a malformed error";
  if (!optional(v.errorKind, (k) => isStr(k) && ERROR_KINDS.includes(k))) return "has an unknown error kind";
  if (!optional(v.supersededBy, isStr)) return "has a malformed superseding run";
  return undefined;
}

export function encodeTerminalRecord(r: TerminalRecord): Uint8Array {
  return encodeValue(storedTerminal(r));
}

/**
 * `encodeTerminalRecord` for a put staged into a commit of `target` (see
 * `CommitOnlyBytes`). A record whose fields were set in the order the
 * terminating settlement sets them (see `addTerminalEffects`) is written
 * field by field, with the field names encoded once and no compacted
 * copies; the same bytes, which test/workflow/terminal-record-writer.test.ts
 * holds equal. A value the writer does not take goes to the general encoder.
 */
export function terminalRecordForCommit(r: TerminalRecord, target: CommitTarget): CommitOnlyBytes {
  // Its optional fields are read by name: one the record lacks would be read from a polluted prototype.
  const written = prototypeHoldsAny(TERMINAL_OPTIONAL) ? undefined : writeTerminalRecord(r, target.copiesCommittedValues === true);
  return written === undefined ? encodeForCommit(storedTerminal(r), target) : (written as unknown as CommitOnlyBytes);
}

const T_RUN_ID = fieldName("runId");
const T_STATUS = fieldName("status");
const T_FINAL_STEP = fieldName("finalStep");
const T_TERMINATED_AT = fieldName("terminatedAtMs");
const T_INCARNATION = fieldName("incarnation");
const T_TOKEN = fieldName("token");
const T_MEMO_PREFIX = fieldName("memoPrefix");
const T_SUBMITTED_AT = fieldName("submittedAtMs");
const T_SUBMISSION = fieldName("submission");
const T_ERROR = fieldName("error");
const T_ERROR_KIND = fieldName("errorKind");
const T_SUPERSEDED_BY = fieldName("supersededBy");
const T_INLINE = fieldName("inline");

/** The terminal record's bytes written field by field in the settlement's order (see `terminalRecordForCommit`); undefined for a value the writer does not take. */
function writeTerminalRecord(r: TerminalRecord, shared: boolean): Uint8Array | undefined {
  beginPlainFields();
  plainField(T_RUN_ID);
  plainString(r.runId);
  plainField(T_STATUS);
  plainString(r.status);
  plainField(T_FINAL_STEP);
  plainNumber(r.finalStep);
  plainField(T_TERMINATED_AT);
  plainNumber(r.terminatedAtMs);
  plainField(T_INCARNATION);
  plainString(r.incarnation);
  plainField(T_TOKEN);
  plainString(r.token);
  const { memoPrefix, submittedAtMs, submission, error, errorKind, supersededBy, inline } = r;
  if (memoPrefix !== undefined) {
    plainField(T_MEMO_PREFIX);
    plainString(memoPrefix);
  }
  if (submittedAtMs !== undefined) {
    plainField(T_SUBMITTED_AT);
    plainNumber(submittedAtMs);
  }
  if (submission !== undefined) {
    plainField(T_SUBMISSION);
    plainString(submission);
  }
  if (error !== undefined) {
    plainField(T_ERROR);
    plainString(error);
  }
  if (errorKind !== undefined) {
    plainField(T_ERROR_KIND);
    plainString(errorKind);
  }
  if (supersededBy !== undefined) {
    plainField(T_SUPERSEDED_BY);
    plainString(supersededBy);
  }
  if (inline !== undefined) {
    plainField(T_INLINE);
    plainCompact(inline);
  }
  return endPlainFields(shared);
}

function storedTerminal(r: TerminalRecord): TerminalRecord {
  // Its own inline outcome only: one a polluted Object.prototype holds is no outcome of this run.
  const inline = Object.hasOwn(r, "inline") ? r.inline : undefined;
  return compact(inline === undefined ? r : { ...r, inline: compact(inline) });
}

/** The encoding of an inline outcome as a terminal record holds it (its size is what the inline bound measures). */
export function encodeInlineOutcome(o: InlineOutcome): Uint8Array {
  return encodeValue(compact(o));
}

function isInlineOutcome(x: unknown): boolean {
  if (x === null || typeof x !== "object" || Array.isArray(x)) return false;
  const o = x as Record<string, unknown>;
  return absentOr(o.result, isBytes) && isStrMap(o.headers) && absentOr(o.publicError, isStr) && absentOr(o.errorCode, isStr);
}

const TERMINATION_OPTIONAL = fieldsOf<Termination>("error", "errorKind", "supersededBy");
const TERMINAL_OPTIONAL = [...TERMINATION_OPTIONAL, ...fieldsOf<TerminalRecord>("memoPrefix", "submittedAtMs", "submission", "inline")];
const INLINE_OPTIONAL = fieldsOf<InlineOutcome>("result", "publicError", "errorCode");
const OUTCOME_OPTIONAL = [...TERMINATION_OPTIONAL, ...fieldsOf<RunOutcome>("result", "publicError", "errorCode")];

/**
 * Whether `Object.prototype` holds a name of a terminal record's optional
 * fields (its inline outcome's included): a record made in memory, which
 * lacks its absent ones, is then read differently from its decoding.
 */
export function terminalFieldsOnPrototype(): boolean {
  return prototypeHoldsAny(TERMINAL_OPTIONAL) || prototypeHoldsAny(INLINE_OPTIONAL);
}

export function decodeTerminalRecord(bytes: Uint8Array, key: string): TerminalRecord {
  return decodeChecked<TerminalRecord>(
    bytes,
    key,
    "terminal record",
    (v) => {
      ownNested(v, "inline", INLINE_OPTIONAL);
      const p = terminationProblem(v);
      if (p !== undefined) return p;
      if (!optional(v.memoPrefix, isStr)) return "has a malformed memo prefix";
      if (!optional(v.submittedAtMs, isStoredTime)) return `has a submission time of ${describeValue(v.submittedAtMs)}, ${NO_TIME}`;
      if (!absentOr(v.submission, isStr)) return "has a malformed submission";
      if (!absentOr(v.inline, isInlineOutcome)) return "has a malformed inline outcome";
      if (typeof v.terminatedAtMs === "number" && !isStoredTime(v.terminatedAtMs)) return `has an end time of ${v.terminatedAtMs}, ${NO_TIME}`;
      return isNum(v.terminatedAtMs) && isStr(v.incarnation) && isStr(v.token) ? undefined : "lacks its time or token";
    },
    TERMINAL_OPTIONAL,
  );
}

/** The {@link Termination} part of a terminal record, without its bookkeeping fields. */
export function terminationOf(r: TerminalRecord): Termination {
  return compact({
    runId: r.runId as RunId,
    status: r.status,
    error: r.error ?? undefined,
    errorKind: r.errorKind ?? undefined,
    finalStep: r.finalStep,
    terminatedAtMs: r.terminatedAtMs,
    supersededBy: (r.supersededBy ?? undefined) as RunId | undefined,
  });
}

export function encodeRunOutcome(o: RunOutcome): Uint8Array {
  return encodeValue(compact({ ...o }));
}

export function decodeRunOutcome(bytes: Uint8Array, key: string): RunOutcome {
  return decodeChecked<RunOutcome>(
    bytes,
    key,
    "run outcome",
    (v) => {
      const p = terminationProblem(v);
      if (p !== undefined) return p;
      if (!optional(v.result, isBytes)) return "has a malformed result";
      if (!optional(v.publicError, isStr) || !optional(v.errorCode, isStr)) return "has a malformed public error";
      return isStrMap(v.headers) ? undefined : "has malformed headers";
    },
    OUTCOME_OPTIONAL,
  );
}

export function encodeOutcomeRecord(r: OutcomeRecord): Uint8Array {
  return encodeValue(
    r.incarnation === undefined
      ? { token: r.token, outcome: compact({ ...r.outcome }) }
      : { token: r.token, incarnation: r.incarnation, outcome: compact({ ...r.outcome }) },
  );
}

const OUTCOME_RECORD_OPTIONAL = fieldsOf<OutcomeRecord>("incarnation");

export function decodeOutcomeRecord(bytes: Uint8Array, key: string): OutcomeRecord {
  const r = decodeChecked<{ token: string; incarnation?: string; outcome: unknown }>(
    bytes,
    key,
    "run result record",
    (v) => {
      if (!isStr(v.token) || v.outcome === null || typeof v.outcome !== "object") return "lacks its token or outcome";
      return absentOr(v.incarnation, isStr) ? undefined : "has a malformed incarnation";
    },
    OUTCOME_RECORD_OPTIONAL,
  );
  const out: OutcomeRecord = { token: r.token, outcome: decodeRunOutcome(encodeValue(r.outcome), key) };
  if (r.incarnation !== undefined) out.incarnation = r.incarnation;
  return out;
}

/**
 * Whether the run result record `rec` is the one the end `end` (its
 * terminal record, or a child's end naming it) wrote: the same token, and
 * the same incarnation where both name one.
 */
export function outcomeRecordOfEnd(rec: OutcomeRecord, end: { readonly token: string; readonly incarnation?: string | undefined }): boolean {
  return rec.token === end.token && (rec.incarnation === undefined || end.incarnation === undefined || rec.incarnation === end.incarnation);
}

function stepOutcomeProblem(o: unknown): string | undefined {
  if (o === null || typeof o !== "object") return "has no outcome";
  const v = o as Record<string, unknown>;
  switch (v.kind) {
    case "succeed":
      return isBytes(v.result) ? undefined : "has a succeed outcome without a result";
    case "fail":
    case "cancel":
      return isStr(v.reason) ? undefined : `has a ${v.kind} outcome without a reason`;
    case "continue": {
      if (!isBytes(v.payload)) return "has a continue outcome without a payload";
      const w = v.when as Record<string, unknown> | null;
      if (w === null || typeof w !== "object") return "has a continue outcome without a trigger";
      if (w.kind === "immediate") return undefined;
      if (w.kind === "after")
        return isStoredDelay(w.delayMs) ? undefined : `has an after trigger whose delay ${describeValue(w.delayMs)} is not ms from 0 to ${MAX_DELAY_MS}`;
      if (w.kind === "onSignal") {
        if (!isStr(w.correlationKey)) return "has a signal trigger without its correlation key";
        return isStoredDelay(w.timeoutMs) ? undefined : `has a signal trigger whose timeout ${describeValue(w.timeoutMs)} is not ms from 0 to ${MAX_DELAY_MS}`;
      }
      return "has an unknown trigger";
    }
    default:
      return "has an unknown outcome kind";
  }
}

export function encodeReplayRecord(r: ReplayRecord): Uint8Array {
  return encodeValue(r);
}

export function decodeReplayRecord(bytes: Uint8Array, key: string): ReplayRecord {
  return decodeChecked<ReplayRecord>(bytes, key, "replay record", (v) => {
    if (!isStoredTime(v.storedAtMs)) return "has no store time";
    const p = stepOutcomeProblem(v.outcome);
    if (p !== undefined) return p;
    const e = v.effects as Record<string, unknown> | null;
    if (e === null || typeof e !== "object" || !Array.isArray(e.puts) || !Array.isArray(e.deletes)) return "has malformed effects";
    const putsOk = e.puts.every((p) => Array.isArray(p) && p.length === 2 && isStr(p[0]) && isBytes(p[1]));
    return putsOk && e.deletes.every(isStr) ? undefined : "has malformed effects";
  });
}

/** `workflow/signal-wait/{key}`: which scheduled step waits on a correlation key. */
export interface SignalWaitRecord {
  jobId: string;
  runId: string;
  step: number;
}

export function encodeSignalWait(r: SignalWaitRecord): Uint8Array {
  return encodeValue(r);
}

/** `encodeSignalWait` for a put staged into a commit of `target` (see `CommitOnlyBytes`). */
export function signalWaitForCommit(r: SignalWaitRecord, target: CommitTarget): CommitOnlyBytes {
  return encodeForCommit(r, target);
}

export function decodeSignalWait(bytes: Uint8Array, key: string): SignalWaitRecord {
  return decodeChecked<SignalWaitRecord>(bytes, key, "signal wait record", (v) =>
    isStr(v.jobId) && isStr(v.runId) && isCount(v.step) ? undefined : "lacks its job, run or step (a whole number from 0 up)",
  );
}
