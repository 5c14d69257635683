/**
 * @module How a run's records read as a listing row: the state an operator
 * sees, derived from the run record, step pointer and step job of an
 * active run, or from the terminal record of an ended one. Pure.
 */
import { ValidationError } from "../../errors.js";
import type { JobInfo, WaitingReason } from "../../queue/types.js";
import { validateInstant } from "../../time-bounds.js";
import type { RunRecord, StepPointer, TerminalRecord } from "../records/records.js";
import type { IndexEntry } from "./run-index.js";
import type { RunId } from "./run-id.js";
import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, RUN_LIST_STATES, type ListRunsOptions, type RunListState, type RunRow } from "./run-listing.js";
import type { Building } from "../../queue/cancel-state.js";
import { describeValue, isOptionObject, optionFields, readOptions, refuseUnknownFields } from "../../option-values.js";

/** The active part of a row: what the step pointer and step job say. */
export interface ActiveView {
  state: RunListState;
  attempt: number;
  updatedAtMs: number;
  signal?: { key: string; deadlineMs: number };
  runAtMs?: number;
  heldBy?: WaitingReason;
}

/** The state of an active run from its records. `job` is `null` while its step is settling. */
export function activeView(run: RunRecord, pointer: StepPointer, job: JobInfo | null): ActiveView {
  if (job === null) return { state: run.cancelRequested === true ? "cancelling" : "running", attempt: 0, updatedAtMs: run.submittedAtMs };
  const updatedAtMs = Math.max(job.enqueuedAt, job.claimedAt ?? 0, job.wokenAt ?? 0, job.failedAt ?? 0);
  const base = { attempt: job.attempt, updatedAtMs, ...(job.waiting === undefined ? {} : { heldBy: job.waiting }) };
  if (run.cancelRequested === true) return { ...base, state: "cancelling" };
  switch (job.state) {
    case "pending":
      return { ...base, state: "pending" };
    case "scheduled": {
      const at = job.runAt ?? updatedAtMs;
      if (pointer.signalWait !== undefined) return { ...base, state: "awaiting_signal", signal: { key: pointer.signalWait, deadlineMs: at } };
      return { ...base, state: "scheduled", runAtMs: at };
    }
    default:
      // Claimed; or dead-lettered outside the worker, which reconciliation turns into a failure at once.
      return { ...base, state: "running" };
  }
}

/** A row from its parts; `entry` supplies what the submission fixed. */
export function rowOf(
  runId: RunId,
  entry: IndexEntry,
  parts:
    | { kind: "active"; run: RunRecord; pointer: StepPointer; view: ActiveView }
    | { kind: "ended"; terminal: TerminalRecord; stepName?: string | undefined; attempt: number },
): RunRow {
  const row: Building<RunRow> = {
    runId,
    state: "pending",
    step: 0,
    attempt: 0,
    submittedAtMs: entry.submittedAtMs,
    updatedAtMs: entry.submittedAtMs,
    headers: { ...entry.headers },
  };
  if (entry.workflow !== undefined) row.workflow = entry.workflow;
  if (entry.kind !== undefined) row.kind = entry.kind;
  if (entry.group !== undefined) row.group = { id: entry.group.id, key: entry.group.key };
  if (entry.parent !== undefined) row.parent = { runId: entry.parent.runId, step: entry.parent.step };
  if (parts.kind === "active") {
    const v = parts.view;
    row.state = v.state;
    row.step = parts.pointer.step;
    if (parts.pointer.name !== undefined) row.stepName = parts.pointer.name;
    row.attempt = v.attempt;
    row.updatedAtMs = v.updatedAtMs;
    if (v.signal !== undefined) row.signal = v.signal;
    if (v.runAtMs !== undefined) row.runAtMs = v.runAtMs;
    if (v.heldBy !== undefined) row.heldBy = v.heldBy;
  } else {
    const t = parts.terminal;
    row.state = t.status;
    row.step = t.finalStep;
    if (parts.stepName !== undefined) row.stepName = parts.stepName;
    row.attempt = parts.attempt;
    row.updatedAtMs = t.terminatedAtMs;
    if (t.error !== undefined && t.error !== null) row.error = t.error;
    if (t.errorKind !== undefined && t.errorKind !== null) row.errorKind = t.errorKind;
    if (t.supersededBy !== undefined && t.supersededBy !== null) row.supersededBy = t.supersededBy;
  }
  return row;
}

/** `listRuns`' options, checked. */
export interface CheckedListOptions {
  state?: RunListState;
  workflow?: string;
  after?: number;
  before?: number;
  cursor?: string;
  limit: number;
}

const LIST_FIELDS = optionFields<ListRunsOptions>({ state: true, workflow: true, submittedAfter: true, submittedBefore: true, cursor: true, limit: true });

/** Checks `listRuns` options; `ValidationError` saying which one is wrong and what it takes. */
export function checkListOptions(o: unknown, what = "listRuns"): CheckedListOptions {
  if (o === undefined || o === null) return { limit: DEFAULT_LIST_LIMIT };
  if (!isOptionObject(o)) throw new ValidationError(`${what} takes an options object, got ${describeValue(o)}`);
  refuseUnknownFields(o, LIST_FIELDS, `${what}.`, `${what}'s options`);
  // Each field read once: a limit checked is the limit used.
  const v = readOptions(o, LIST_FIELDS, what, `${what}'s options`) as ListRunsOptions;
  const out: CheckedListOptions = { limit: DEFAULT_LIST_LIMIT };
  if (v.limit !== undefined) {
    if (typeof v.limit !== "number" || !Number.isInteger(v.limit) || v.limit < 1 || v.limit > MAX_LIST_LIMIT) {
      throw new ValidationError(`${what}: limit must be an integer from 1 to ${MAX_LIST_LIMIT}, got ${describeValue(v.limit)}`);
    }
    out.limit = v.limit;
  }
  if (v.state !== undefined) {
    if (!(RUN_LIST_STATES as readonly unknown[]).includes(v.state)) {
      throw new ValidationError(`${what}: unknown state ${JSON.stringify(v.state)}; use one of ${RUN_LIST_STATES.join(", ")}`);
    }
    out.state = v.state;
  }
  if (v.workflow !== undefined) {
    if (typeof v.workflow !== "string" || v.workflow.length === 0 || v.workflow.length > 256) {
      throw new ValidationError(`${what}: workflow must be a name of 1 to 256 characters, got ${describeValue(v.workflow)}`);
    }
    out.workflow = v.workflow;
  }
  if (v.submittedAfter !== undefined) out.after = validateInstant(`${what}: submittedAfter`, v.submittedAfter);
  if (v.submittedBefore !== undefined) out.before = validateInstant(`${what}: submittedBefore`, v.submittedBefore);
  if (v.cursor !== undefined) {
    if (typeof v.cursor !== "string") throw new ValidationError(`${what}: cursor must be the nextCursor string of a previous page`);
    out.cursor = v.cursor;
  }
  return out;
}
