/**
 * @module `inspectRun`: a run's history from its history entries, index
 * entry, redrive list and records; for an active run, the step it is on
 * (with the attempts the queue recorded so far) closes the list.
 */
import type { JobAttempt } from "../../queue/record.js";
import {
  attemptFromQueue,
  boundAttempts,
  decodeRedrives,
  decodeStepRecord,
  redrivesKey,
  runHistoryPrefix,
  stepHistoryKey,
  type StepRecord,
} from "./history-records.js";
import { decodeIndexEntry, runIndexKey, type IndexEntry } from "./run-index.js";
import type { RunHistory, StepHistory } from "./run-history.js";
import type { RunId } from "./run-id.js";
import { activeView } from "./run-rows.js";
import { isDeadStepOf, jobIdOfEnd } from "./end-tokens.js";
import type { TerminalRecord } from "../records/records.js";
import type { RunReads } from "./list-runs.js";
import type { Building } from "../../queue/cancel-state.js";

/** The reads `inspectRun` adds to a listing's. */
export interface HistoryReads extends RunReads {
  attemptHistory?(jobId: string): Promise<JobAttempt[]>;
}

/** How many of a run's history entries `inspectRunPage` reads in one call (one read): the run page's and `runs show`'s share. */
export const HISTORY_ENTRIES_PER_PAGE = 100;

/** One page of a run's history: those after step `after` (from the first when absent), `count` of them; `next`, the last one's step, when more follow. */
export interface HistoryPage {
  readonly after?: number;
  readonly count: number;
  readonly next?: number;
}

async function readSteps(reads: HistoryReads, runId: string): Promise<StepRecord[]> {
  const prefix = runHistoryPrefix(reads.queueName, runId);
  const out: StepRecord[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await reads.kvScan(prefix, after === undefined ? { limit: 256 } : { after, limit: 256 });
    for (const e of page.entries) out.push(decodeStepRecord(e.value, e.key));
    if (page.nextCursor === undefined) return out;
    after = page.nextCursor;
  }
}

/** The history entries of one page (one read), and how far it went. */
async function readStepPage(reads: HistoryReads, runId: string, after: number | undefined): Promise<{ records: StepRecord[]; page: HistoryPage }> {
  const q = reads.queueName;
  const prefix = runHistoryPrefix(q, runId);
  const scanned = await reads.kvScan(prefix, { limit: HISTORY_ENTRIES_PER_PAGE, ...(after === undefined ? {} : { after: stepHistoryKey(q, runId, after) }) });
  const records = scanned.entries.map((e) => decodeStepRecord(e.value, e.key));
  const last = records[records.length - 1];
  const from = after === undefined ? {} : { after };
  // A full page may still have more after it: the next page starts where this one stopped.
  return {
    records,
    page: scanned.nextCursor === undefined || last === undefined ? { ...from, count: records.length } : { ...from, count: records.length, next: last.step },
  };
}

/** The history entry of step `step`, or undefined: a record just outside a page that a page's entry is judged by. */
async function stepRecordAt(reads: HistoryReads, runId: string, step: number): Promise<StepRecord | undefined> {
  if (step < 0) return undefined;
  const key = stepHistoryKey(reads.queueName, runId, step);
  const bytes = await reads.kvGet(key);
  return bytes === null ? undefined : decodeStepRecord(bytes, key);
}

/** The public form of the kept steps: payloads become whether a redrive can start there (`before`: the entry before the first, on a later page). */
function publicSteps(records: readonly StepRecord[], entry: IndexEntry | undefined, before?: StepRecord): StepHistory[] {
  const byStep = new Map(records.map((r) => [r.step, r]));
  if (before !== undefined) byStep.set(before.step, before);
  return records.map((r) => {
    const { payload, next, signalPayload, ...rest } = r;
    void next;
    void signalPayload;
    const prev = byStep.get(r.step - 1);
    const retryable = payload !== undefined || prev?.next !== undefined || (r.step === 0 && entry?.input !== undefined);
    return { ...rest, retryable };
  });
}

/** The final step of a run whose dead step job the worker never settled, from that job's attempts. */
async function deadStep(reads: HistoryReads, t: TerminalRecord): Promise<StepHistory[]> {
  const jobId = jobIdOfEnd(t);
  if (jobId === undefined || reads.attemptHistory === undefined) return [];
  const job = await reads.job(jobId);
  if (job === null || !isDeadStepOf(job, reads.queueName, t.runId)) return [];
  const step = t.finalStep;
  const { attempts, dropped } = boundAttempts((await reads.attemptHistory(jobId)).map(attemptFromQueue));
  return [
    {
      step,
      payloadBytes: job.payloadSize,
      attempts,
      attemptsDropped: dropped,
      memoKeys: [],
      memoKeysWritten: 0,
      kvPuts: [],
      kvDeletes: [],
      kvEffects: 0,
      // A redrive requeues the dead job itself.
      retryable: true,
    },
  ];
}

/** The history of `runId`, or `null` for an unknown run; see `WorkflowView.inspectRun`. */
export function inspectRun(reads: HistoryReads, runId: RunId): Promise<RunHistory | null> {
  return inspectRunRead(reads, runId, undefined);
}

/**
 * The history of `runId` with one page of its history entries (see
 * `HistoryPage`: `HISTORY_ENTRIES_PER_PAGE` after step `after`), or `null`
 * for an unknown run: a run page's load costs one read of them, not one
 * per 256 kept steps. The step an active run is on, or its end, is there
 * on every page; `stepsDropped` counts the steps retention dropped.
 */
export async function inspectRunPage(
  reads: HistoryReads,
  runId: RunId,
  after: number | undefined,
): Promise<(RunHistory & { readonly historyPage: HistoryPage }) | null> {
  const out = await inspectRunRead(reads, runId, after ?? -1);
  return out as (RunHistory & { readonly historyPage: HistoryPage }) | null;
}

/** `inspectRun`, or with `paged` (a step, -1 for the first page) `inspectRunPage`. */
async function inspectRunRead(reads: HistoryReads, runId: RunId, paged: number | undefined): Promise<RunHistory | null> {
  const q = reads.queueName;
  const r = await reads.records(runId);
  if (r.kind === "unknown") return null;
  const submittedAtMs = r.kind === "active" ? r.run.submittedAtMs : r.terminal.submittedAtMs;
  let entry: IndexEntry | undefined;
  if (submittedAtMs !== undefined) {
    const key = runIndexKey(q, submittedAtMs, runId);
    const bytes = await reads.kvGet(key);
    if (bytes !== null) entry = decodeIndexEntry(bytes, key);
  }
  const after = paged === undefined || paged < 0 ? undefined : paged;
  const read = paged === undefined ? { records: await readSteps(reads, runId), page: undefined } : await readStepPage(reads, runId, after);
  const { records, page } = read;
  // On a later page, the entry before its first says whether that one can be retried from; past the page, any one is read alone.
  const first = records[0];
  const before = after === undefined || first === undefined ? undefined : await stepRecordAt(reads, runId, first.step - 1);
  const steps = publicSteps(records, entry, before);
  const more = page?.next !== undefined;
  const recordOf = async (step: number) =>
    records.find((s) => s.step === step) ?? (after !== undefined || more ? await stepRecordAt(reads, runId, step) : undefined);
  const memoSet = r.kind === "active" ? r.run.memoSet : entry?.memoSet;
  const submission = r.kind === "active" ? r.run.submission : r.terminal.submission;
  const rk = redrivesKey(q, runId);
  const rb = await reads.kvGet(rk);
  const redrives = rb === null ? [] : decodeRedrives(rb, rk);
  const base = {
    runId,
    ...(entry?.workflow === undefined ? {} : { workflow: entry.workflow }),
    ...(entry?.kind === undefined ? {} : { kind: entry.kind }),
    ...(entry?.parent === undefined ? {} : { parent: { runId: entry.parent.runId, step: entry.parent.step } }),
    submittedAtMs: submittedAtMs ?? 0,
    ...(memoSet === undefined ? {} : { memoSet }),
    ...(submission === undefined ? {} : { submission }),
    headers: { ...(entry?.headers ?? (r.kind === "active" ? r.run.headers : {})) },
    // The steps retention dropped: before the first kept entry, which a later page does not hold.
    stepsDropped:
      after !== undefined
        ? ((await reads.kvScan(runHistoryPrefix(q, runId), { limit: 1 })).entries.map((e) => decodeStepRecord(e.value, e.key).step)[0] ?? 0)
        : (first?.step ?? 0),
    redrives,
    ...(page === undefined ? {} : { historyPage: page }),
  };
  if (r.kind === "terminated") {
    const t = r.terminal;
    const end = {
      status: t.status,
      ...(t.error === undefined || t.error === null ? {} : { error: t.error }),
      ...(t.errorKind === undefined || t.errorKind === null ? {} : { errorKind: t.errorKind }),
      ...(t.supersededBy === undefined || t.supersededBy === null ? {} : { supersededBy: t.supersededBy }),
      finalStep: t.finalStep,
      atMs: t.terminatedAtMs,
    };
    // A step the queue dead-lettered outside the worker wrote no entry: its dead job still has its attempts.
    const tail = (await recordOf(t.finalStep)) !== undefined ? [] : await deadStep(reads, t);
    return { ...base, state: t.status, steps: [...steps, ...tail], end };
  }
  // The step the run is on has no entry yet (or an entry of an earlier pass, before a redrive).
  const { run, pointer } = r;
  const job = await reads.job(pointer.jobId);
  const view = activeView(run, pointer, job);
  const queued = job === null || reads.attemptHistory === undefined ? [] : await reads.attemptHistory(pointer.jobId);
  const { attempts, dropped } = boundAttempts(queued.map(attemptFromQueue));
  const prev = await recordOf(pointer.step - 1);
  const current: Building<StepHistory> = {
    step: pointer.step,
    payloadBytes: job?.payloadSize ?? 0,
    attempts,
    attemptsDropped: dropped,
    memoKeys: [],
    memoKeysWritten: 0,
    kvPuts: [],
    kvDeletes: [],
    kvEffects: 0,
    retryable: prev?.next !== undefined || (pointer.step === 0 && entry?.input !== undefined),
  };
  if (pointer.name !== undefined) current.name = pointer.name;
  if (job?.state === "claimed" && job.claimedAt !== undefined) current.inProgress = { attempt: job.attempt, startedAtMs: job.claimedAt };
  if (view.signal !== undefined) current.waiting = { signalKey: view.signal.key, untilMs: view.signal.deadlineMs };
  else if (view.runAtMs !== undefined) current.waiting = { untilMs: view.runAtMs };
  if (view.heldBy !== undefined) current.heldBy = view.heldBy;
  const earlier = steps.filter((s) => s.step < pointer.step);
  return { ...base, state: view.state, steps: [...earlier, current] };
}
