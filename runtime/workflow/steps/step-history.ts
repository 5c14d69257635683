/**
 * @module The history entry a step's settlement writes: what the step did,
 * staged into the settlement's effects so the entry commits with it (one
 * KV put per settled step, and one delete once a run passes
 * `HISTORY_STEPS_PER_RUN` steps). Retried attempts need no write here: the
 * queue's attempt history keeps them until the step settles, and the
 * settlement copies them into the entry.
 */
import type { SettlementEffects } from "../../queue/effects.js";
import type { Building } from "../../queue/cancel-state.js";
import type { ClaimedJob } from "../../queue/types.js";
import type { StagedKv } from "../records/records.js";
import { HEADER_SIGNAL_WAIT } from "../records/reserved.js";
import { stageCommitOnlyOnce, stageCommitOnlyUnder } from "../records/commit-bytes.js";
import type { KvKeyPrefixRef } from "../../queue/user-keys.js";
import { attemptFromQueue, encodeStepFactsForCommit, errorFieldsOf, evictedStep, paddedStep, type StepFacts, stepHistoryKey } from "../runs/history-records.js";
import type { AttemptHistory, SignalReceipt, StepAttemptOutcome, StepTransitionHistory } from "../runs/run-history.js";
import type { RuntimeCore } from "../runtime-core.js";
import { ownHeader } from "../../option-values.js";

/** What the history needs of the step being processed, gathered while it runs. */
export interface StepTrace {
  runId: string;
  step: number;
  /** The step's name (the step pointer's). */
  name?: string | undefined;
  /** The signal the step observed (`resolveSignal`'s answer). */
  signal?: Uint8Array | null | undefined;
  memoKeys?: readonly string[] | undefined;
  /** The run's keys, when the step was opened: its history prefix, checked once per run. */
  keys?: { readonly history: KvKeyPrefixRef } | undefined;
}

/** How the step ended, as its settlement tells the history. */
export interface StepEnd {
  outcome: StepAttemptOutcome;
  endedAtMs: number;
  /** The thrown value and its text, for a failed attempt. */
  error?: { thrown: unknown; text: string } | undefined;
  transition?: StepTransitionHistory | undefined;
  staged?: StagedKv | undefined;
  /** The step's own payload, kept for a redrive of a run this step ended. */
  keepPayload?: boolean;
  /** The payload the step continues with. */
  next?: Uint8Array | undefined;
}

/** Whether the queue may have recorded attempts of the job before this claim (a first claim with no earlier failure has none). */
export function hadEarlierAttempts(job: ClaimedJob): boolean {
  return job.attempt > 1 || job.lastError !== undefined;
}

/** The attempts the queue recorded for the job before this claim. */
async function earlierAttempts(core: RuntimeCore, job: ClaimedJob): Promise<AttemptHistory[]> {
  const list = await core.queue.view().attemptHistory(job.id);
  return list.map(attemptFromQueue);
}

function signalReceipt(job: ClaimedJob, signal: Uint8Array | null | undefined): SignalReceipt | undefined {
  const key = ownHeader(job.headers, HEADER_SIGNAL_WAIT);
  if (key === undefined || signal === undefined) return undefined;
  return signal === null ? { key, result: "timed_out" } : { key, result: "delivered", payloadBytes: signal.byteLength };
}

/**
 * Stages the step's history entry (and the eviction of the oldest kept one)
 * into `effects`: at once on the common path (a promise only when earlier
 * attempts must be read first; await it then).
 */
export function stageStepHistory(core: RuntimeCore, job: ClaimedJob, s: StepTrace, end: StepEnd, effects: SettlementEffects): Promise<void> | undefined {
  if (!hadEarlierAttempts(job)) {
    stageWith(core, job, s, end, effects, NONE);
    return undefined;
  }
  return earlierAttempts(core, job).then((earlier) => stageWith(core, job, s, end, effects, earlier));
}

/** What a step with no earlier attempts, no memo writes or no staged puts lists: one array for every such step, never written (the record only encodes it). */
const NONE: readonly never[] = Object.freeze([]);

function stageWith(core: RuntimeCore, job: ClaimedJob, s: StepTrace, end: StepEnd, effects: SettlementEffects, earlier: readonly AttemptHistory[]): void {
  // The error fields assigned, not spread into the literal (a slow path in V8, and this runs for every step).
  const current: Building<AttemptHistory> = {
    attempt: job.attempt,
    startedAtMs: job.claimedAt,
    endedAtMs: end.endedAtMs,
    outcome: end.outcome,
  };
  if (end.error !== undefined) {
    const f = errorFieldsOf(end.error.thrown, end.error.text);
    if (f.error !== undefined) current.error = f.error;
    if (f.stack !== undefined) current.stack = f.stack;
  }
  const facts: StepFacts = {
    step: s.step,
    name: s.name,
    payloadBytes: job.payload.byteLength,
    earlier,
    current,
    signal: signalReceipt(job, s.signal),
    transition: end.transition,
    memoKeys: s.memoKeys ?? NONE,
    kvPuts: end.staged === undefined || end.staged.puts.length === 0 ? NONE : end.staged.puts.map(([k]) => k),
    kvDeletes: end.staged?.deletes ?? NONE,
    payload: end.keepPayload === true ? job.payload : undefined,
    next: end.next,
    signalPayload: s.signal ?? undefined,
  };
  // Written once and never read back here: written from the facts without a record built first, and staged without a copy, as a view of the encoder's chunk when the commit copies it.
  const bytes = encodeStepFactsForCommit(facts, core.queue);
  // Under the run's history prefix, checked once per run: no key built and checked whole per step.
  if (s.keys !== undefined) stageCommitOnlyUnder(effects, s.keys.history, paddedStep(s.step), bytes);
  else stageCommitOnlyOnce(effects, stepHistoryKey(core.queueName, s.runId, s.step), bytes);
  const evicted = evictedStep(s.step);
  if (evicted !== undefined) effects.kvDelete(stepHistoryKey(core.queueName, s.runId, evicted));
}
