/**
 * @module What the commits that change a run stage for the run index and
 * its history: its entries at submission, the ended entry at termination,
 * and their removal when the run is swept, resubmitted or redriven.
 */
import type { SettlementEffects } from "../../queue/effects.js";
import type { KvScanner } from "../../queue/expiry-index.js";
import type { RunRecord, TerminalRecord } from "../records/records.js";
import { type CommitTarget, stageCommitOnly } from "../records/commit-bytes.js";
import { decodeIndexEntry, EMPTY_VALUE, indexEntryForCommit, INDEX_INPUT_BYTES, runEndedKey, runIndexKey, runNameKey, type IndexEntry } from "./run-index.js";
import { redrivesKey, runHistoryPrefix } from "./history-records.js";
import type { StepDescription, StepRunner } from "../steps/delivery.js";
import type { TerminalStatus } from "./run-types.js";

/** The runner's names for a payload; `undefined` when it has none (or its `describe` misbehaves). */
export function describePayload(runner: StepRunner, payload: Uint8Array): StepDescription | undefined {
  if (runner.describe === undefined) return undefined;
  try {
    const d = runner.describe(payload);
    if (d === undefined || d === null || typeof d.name !== "string" || (d.kind !== "workflow" && d.kind !== "job")) return undefined;
    // Names are labels: one too long to be a name is left out rather than stored with every step.
    if (d.name.length > MAX_NAME_CHARS) return undefined;
    if (d.step !== undefined && (typeof d.step !== "string" || d.step.length > MAX_NAME_CHARS)) return { kind: d.kind, name: d.name };
    return d;
  } catch {
    return undefined;
  }
}

/** Names longer than this are not indexed by name (a runner's `describe` is not trusted to be sensible). */
const MAX_NAME_CHARS = 256;

/** The index entries of a new run: the time entry and, for a typed run, the name entry (`input` undefined when not known), for a commit of `target`. */
export function stageSubmission(
  q: string,
  run: RunRecord,
  d: StepDescription | undefined,
  input: Uint8Array | undefined,
  effects: SettlementEffects,
  groupName?: string,
  flow?: Record<string, string>,
  target: CommitTarget = {},
): void {
  const { runId, submittedAtMs, group } = run;
  const named = d !== undefined && d.name.length > 0 && d.name.length <= MAX_NAME_CHARS ? d : undefined;
  const entry: IndexEntry = { submittedAtMs, headers: run.headers, inputSha256: run.inputSha256 };
  if (run.priority !== undefined) entry.priority = run.priority;
  if (run.maxAttempts !== undefined) entry.maxAttempts = run.maxAttempts;
  if (flow !== undefined && Object.keys(flow).length > 0) entry.flow = flow;
  if (named !== undefined) {
    entry.workflow = named.name;
    entry.kind = named.kind;
  }
  if (group !== undefined) entry.group = { id: groupName ?? group.id, key: group.key, tag: group.id };
  if (run.parent !== undefined) entry.parent = { ...run.parent };
  if (run.submission !== undefined) entry.submission = run.submission;
  if (run.memoSet !== undefined) entry.memoSet = run.memoSet;
  if (input !== undefined && input.byteLength <= INDEX_INPUT_BYTES) entry.input = input;
  stageCommitOnly(effects, runIndexKey(q, submittedAtMs, runId), indexEntryForCommit(entry, target));
  if (named !== undefined) effects.kvPut(runNameKey(q, named.name, submittedAtMs, runId), EMPTY_VALUE);
}

/** The ended entry a terminating commit writes. */
export function stageEnded(q: string, runId: string, submittedAtMs: number | undefined, status: TerminalStatus, effects: SettlementEffects): void {
  if (submittedAtMs !== undefined) effects.kvPut(runEndedKey(q, status, submittedAtMs, runId), EMPTY_VALUE);
}

/** Removes the ended entry of `terminal` (a redrive re-opens the run). */
export function stageReopened(q: string, terminal: TerminalRecord, effects: SettlementEffects): void {
  if (terminal.submittedAtMs !== undefined) effects.kvDelete(runEndedKey(q, terminal.status, terminal.submittedAtMs, terminal.runId));
}

/**
 * Removes everything the index and the history keep of the run `terminal`
 * ended: its index entries, history entries and redrives. Reads the time
 * entry (for the name) and lists the history entries through `kv`.
 */
export async function stageForgotten(
  kv: KvScanner & { kvGet(key: string): Promise<Uint8Array | null> },
  q: string,
  terminal: TerminalRecord,
  effects: SettlementEffects,
): Promise<void> {
  const runId = terminal.runId;
  if (terminal.submittedAtMs !== undefined) {
    const at = terminal.submittedAtMs;
    const key = runIndexKey(q, at, runId);
    const bytes = await kv.kvGet(key);
    if (bytes !== null) {
      effects.kvDelete(key);
      try {
        const e = decodeIndexEntry(bytes, key);
        if (e.workflow !== undefined) effects.kvDelete(runNameKey(q, e.workflow, at, runId));
      } catch {
        // A damaged entry names no workflow: its name entry (if any) stays until listed as unreadable.
      }
    }
    effects.kvDelete(runEndedKey(q, terminal.status, at, runId));
  }
  let after: string | undefined;
  for (;;) {
    const page = await kv.kvScan(runHistoryPrefix(q, runId), after === undefined ? { limit: 256 } : { after, limit: 256 });
    for (const e of page.entries) effects.kvDelete(e.key);
    if (page.nextCursor === undefined) break;
    after = page.nextCursor;
  }
  effects.kvDelete(redrivesKey(q, runId));
}
