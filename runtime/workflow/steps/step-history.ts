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
  // No signal resolved (most steps): no receipt, without looking the header up.
  if (signal === undefined) return undefined;
  const key = ownHeader(job.headers, HEADER_SIGNAL_WAIT);
  if (key === undefined) return undefined;
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
  return stageAfterEarlier(core, job, s, end, effects);
}

/**
 * `stageStepHistory` once the earlier attempts are read: the closure made
 * here, not there, where it would put the parameters it names in a context
 * allocated for every step, the many with no earlier attempts included.
 */
function stageAfterEarlier(core: RuntimeCore, job: ClaimedJob, s: StepTrace, end: StepEnd, effects: SettlementEffects): Promise<void> {
  return earlierAttempts(core, job).then((earlier) => stageWith(core, job, s, end, effects, earlier));
}

/** What a step with no earlier attempts, no memo writes or no staged puts lists: one array for every such step, never written (the record only encodes it). */
const NONE: readonly never[] = Object.freeze([]);

/**
 * The attempt and the facts `stageWith` hands the writer: two objects
 * refilled for every step rather than made per step. The writer reads
 * them within the call and keeps none of them (the encoder's own state is
 * one per module too); every field is an own field from the start, so
 * refilling defines nothing, and the payloads and lists are dropped after
 * each write so no step's data outlives its entry.
 */
const current: AttemptHistory = { attempt: 0, startedAtMs: 0, endedAtMs: 0, outcome: "continued", error: undefined, stack: undefined };
const facts: StepFacts = {
  step: 0,
  name: undefined,
  payloadBytes: 0,
  earlier: NONE,
  current,
  signal: undefined,
  transition: undefined,
  memoKeys: NONE,
  kvPuts: NONE,
  kvDeletes: NONE,
  payload: undefined,
  next: undefined,
  signalPayload: undefined,
};

function stageWith(core: RuntimeCore, job: ClaimedJob, s: StepTrace, end: StepEnd, effects: SettlementEffects, earlier: readonly AttemptHistory[]): void {
  // First, before the shared objects are filled: reading a thrown value's stack may run the thrower's code.
  const f = end.error === undefined ? undefined : errorFieldsOf(end.error.thrown, end.error.text);
  const kvPuts = end.staged === undefined || end.staged.puts.length === 0 ? NONE : end.staged.puts.map(([k]) => k);
  const c = current as Building<AttemptHistory>;
  c.attempt = job.attempt;
  c.startedAtMs = job.claimedAt;
  c.endedAtMs = end.endedAtMs;
  c.outcome = end.outcome;
  c.error = f?.error;
  c.stack = f?.stack;
  facts.step = s.step;
  facts.name = s.name;
  facts.payloadBytes = job.payload.byteLength;
  facts.earlier = earlier;
  facts.signal = signalReceipt(job, s.signal);
  facts.transition = end.transition;
  facts.memoKeys = s.memoKeys ?? NONE;
  facts.kvPuts = kvPuts;
  facts.kvDeletes = end.staged?.deletes ?? NONE;
  facts.payload = end.keepPayload === true ? job.payload : undefined;
  facts.next = end.next;
  facts.signalPayload = s.signal ?? undefined;
  let bytes: ReturnType<typeof encodeStepFactsForCommit>;
  try {
    // Written once and never read back here: written from the facts without a record built first, and staged without a copy, as a view of the encoder's chunk when the commit copies it.
    bytes = encodeStepFactsForCommit(facts, core.queue);
  } finally {
    dropFacts();
  }
  // Under the run's history prefix, checked once per run: no key built and checked whole per step.
  if (s.keys !== undefined) stageCommitOnlyUnder(effects, s.keys.history, paddedStep(s.step), bytes);
  else stageCommitOnlyOnce(effects, stepHistoryKey(core.queueName, s.runId, s.step), bytes);
  const evicted = evictedStep(s.step);
  if (evicted !== undefined) effects.kvDelete(stepHistoryKey(core.queueName, s.runId, evicted));
}

/** Lets go of what the last write's facts referred to. */
function dropFacts(): void {
  const c = current as Building<AttemptHistory>;
  c.error = undefined;
  c.stack = undefined;
  facts.name = undefined;
  facts.earlier = NONE;
  facts.signal = undefined;
  facts.transition = undefined;
  facts.memoKeys = NONE;
  facts.kvPuts = NONE;
  facts.kvDeletes = NONE;
  facts.payload = undefined;
  facts.next = undefined;
  facts.signalPayload = undefined;
}
