/**
 * @module `inspectRun`: a run's history from its history entries, index
 * entry, redrive list and records; for an active run, the step it is on
 * (with the attempts the queue recorded so far) closes the list.
 */
import type { JobAttempt } from "../../queue/record.js";
import { attemptFromQueue, boundAttempts, decodeRedrives, decodeStepRecord, redrivesKey, runHistoryPrefix, type StepRecord } from "./history-records.js";
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

/** The public form of the kept steps: payloads become whether a redrive can start there. */
function publicSteps(records: readonly StepRecord[], entry: IndexEntry | undefined): StepHistory[] {
  const byStep = new Map(records.map((r) => [r.step, r]));
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
export async function inspectRun(reads: HistoryReads, runId: RunId): Promise<RunHistory | null> {
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
  const records = await readSteps(reads, runId);
  const steps = publicSteps(records, entry);
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
    stepsDropped: records.length === 0 ? 0 : records[0]!.step,
    redrives,
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
    const tail = steps.some((s) => s.step === t.finalStep) ? [] : await deadStep(reads, t);
    return { ...base, state: t.status, steps: [...steps, ...tail], end };
  }
  // The step the run is on has no entry yet (or an entry of an earlier pass, before a redrive).
  const { run, pointer } = r;
  const job = await reads.job(pointer.jobId);
  const view = activeView(run, pointer, job);
  const queued = job === null || reads.attemptHistory === undefined ? [] : await reads.attemptHistory(pointer.jobId);
  const { attempts, dropped } = boundAttempts(queued.map(attemptFromQueue));
  const prev = records.find((s) => s.step === pointer.step - 1);
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
