/**
 * @module Processing one claimed step job: run the runner (or replay its
 * recorded outcome), then settle with the effects its outcome implies.
 *
 * Outcome precedence:
 * 1. a runner-issued `cancel` wins and keeps its staged effects;
 * 2. an external cancel overrides everything else, errors included: the
 *    step is acked, the run ends cancelled and staged effects are dropped;
 * 3. `continue` enqueues the next step in the ack;
 * 4. `succeed` / `fail` ack and terminate;
 * 5. a permanent error dead-letters with the terminal effects;
 * 6. a transient error nacks; on the last attempt with the terminal effects.
 *
 * Store faults are not the runner's failures: the runtime's own memo-store
 * calls (replay records, the run result record) and the runner's memo calls
 * retry in place with backoff, and when the store still fails the step goes
 * back to the queue without counting an attempt. A run therefore never
 * terminates without its result record, and never fails because the store
 * hiccuped.
 */
import { memoOwnerOf } from "./memo-owner.js";
import { isStoredDelay } from "../../value-ranges.js";
import { SettlementEffects, stageOwnedPut, stageRebuiltEnqueue } from "../../queue/effects.js";
import { ownedBytes } from "../../queue/owned-bytes.js";
import type { AckedClaimingNext, ClaimedJob } from "../../queue/types.js";
import type { KvToken } from "../../queue/queue.js";
import { type DurableEnd, settledInTurn, type SubmittedAck } from "../../queue/claim-settle.js";
import { cancelRequestedOf } from "../../queue/cancel-state.js";
import { makeJobStep, type Step } from "./delivery.js";
import { cancelRecorded, OpenStep, openStep, runEndedMeanwhile, tokenNow } from "./step-open.js";
import { applyStaged, EffectsHandle } from "./effects-handle.js";
import { replayRecordKey, stepDedupKey } from "../records/kv-keys.js";
import type { CarriedRun, Known, RunKeys } from "./step-carry.js";
import { decodeReplayRecord, encodeReplayRecord, encodeNextStepPointer, type RunRecord, type StagedKv, type StepPointer } from "../records/records.js";
import { HEADER_RUN_ID, HEADER_SIGNAL_WAIT, HEADER_STEP, HEADER_TRACEPARENT, RESERVED_HEADER_PREFIX } from "../records/reserved.js";
import { RunId } from "../runs/run-id.js";
import type { RuntimeCore } from "../runtime-core.js";
import type { MemoStore } from "../memo/memo.js";
import { afterWaitRegistered, releaseStepSignal, resolveSignal, stageSignalWait } from "../signals/signals.js";
import { checkReason, type StepOutcome, type Trigger } from "./step-outcome.js";
import { hadEarlierAttempts, stageStepHistory, type StepTrace as HistoryTrace } from "./step-history.js";
import { continuedAtReturn, payloadCopiedAtReturn, succeededAtReturn } from "./returned-payload.js";
import type { StepTransitionHistory } from "../runs/run-history.js";
import type { RunErrorKind, RunOutcome } from "../runs/run-types.js";
import { describePayload } from "../runs/index-effects.js";
import { Memo, watchMemoWrites } from "../memo/memo.js";
import { FLOW_HEADER_PREFIX, flowHeadersOf, withCurrentLimit } from "../runs/submit.js";
import { addTerminalEffects, runOutcomeOf, type TerminationInput, type WrittenTerminal } from "../runs/terminal.js";
import { inlineOutcomeOf } from "../runs/inline-outcome.js";
import { deliveryToken } from "../runs/end-tokens.js";
import { errorText, isMemoFault, StepError } from "../workflow-errors.js";
import { nextStepIdTaken } from "../runs/drawn-job-id.js";
import { ownHeader, showLoneSurrogates } from "../../option-values.js";
import { isStoreFault, retryStore } from "../store-retry.js";
import type { WorkflowLogger } from "../../logger.js";
import { checkCorrelationKey, checkRunPayload } from "../limits.js";
import type { SlotChain, WorkerSlot } from "./settlement-slots.js";
import { logFailedAttempt, noteRunEnded, thrownCause, traceHeaderOf } from "./step-log.js";
import { stepEnqueuedNow } from "../../telemetry/metrics.js";

type Verdict = { ok: true; outcome: StepOutcome; staged: StagedKv; replayed: boolean; storedAtMs?: number } | { ok: false; error: unknown };

/** What the history entry of the step being processed needs from every settlement path. */
type StepTrace = HistoryTrace & { memoKeys: string[] | undefined };

/**
 * Rejects what is not a StepOutcome, so a runner bug fails the step instead of corrupting a record. Delays get the
 * bounds of Trigger.after / onSignal, which a replay record's read checks too: an outcome built by hand gets no looser check.
 */
function validTrigger(w: unknown): boolean {
  const t = w as { kind?: unknown; delayMs?: unknown; correlationKey?: unknown; timeoutMs?: unknown } | null;
  if (t === null || typeof t !== "object") return false;
  if (t.kind === "immediate") return true;
  if (t.kind === "after") return isStoredDelay(t.delayMs);
  return t.kind === "onSignal" && typeof t.correlationKey === "string" && t.correlationKey.length > 0 && isStoredDelay(t.timeoutMs);
}

function checkOutcome(o: unknown): StepOutcome {
  const v = o as { kind?: unknown; payload?: unknown; result?: unknown; reason?: unknown; when?: unknown } | null;
  const ok =
    v !== null &&
    typeof v === "object" &&
    ((v.kind === "continue" && v.payload instanceof Uint8Array && validTrigger(v.when)) ||
      (v.kind === "succeed" && v.result instanceof Uint8Array) ||
      ((v.kind === "fail" || v.kind === "cancel") && typeof v.reason === "string"));
  if (!ok) throw StepError.permanent(new Error("the runner returned something that is not a StepOutcome; build one with StepOutcome.*"));
  const out = o as StepOutcome;
  // The same limits as the public calls, so a bad outcome fails its step with a message about the outcome.
  try {
    if (out.kind === "continue") {
      checkRunPayload("the payload the step continues with", out.payload);
      if (out.when.kind === "onSignal") checkCorrelationKey(out.when.correlationKey);
    } else if (out.kind === "succeed") {
      checkRunPayload("the run result", out.result);
    } else {
      checkReason(`the ${out.kind} outcome`, out.reason);
    }
  } catch (e) {
    throw StepError.permanent(e);
  }
  return out;
}

/**
 * Processes and settles one claimed job of the step queue. A settlement the
 * queue refuses (a lost claim, a closed queue) rejects; the caller logs it
 * and the queue redelivers the job.
 */
export async function processJob(core: RuntimeCore, job: ClaimedJob, slot: WorkerSlot, log: WorkflowLogger): Promise<void> {
  try {
    await processStep(core, job, slot, log);
  } catch (e) {
    await recoverStep(core, job, slot, log, e);
  }
}

/**
 * What `processJob` (and `processStep` for a worker) does when a step's
 * processing threw `e`: a store fault before the settlement (a memo read
 * that kept failing) puts the step back uncounted; anything else, or a
 * failed settlement, is thrown on for the caller to log.
 */
function recoverStep(core: RuntimeCore, job: ClaimedJob, slot: WorkerSlot, log: WorkflowLogger, e: unknown): Promise<void> {
  if (!isStoreFault(e) || slot.settlementSubmitted) throw e;
  return putBack(core, job, slot, log, e);
}

/**
 * Returns the step to the queue without counting the attempt, because the
 * store (not the runner) failed; it is claimed again at once, after the
 * in-place retries already spent seconds backing off.
 */
async function putBack(core: RuntimeCore, job: ClaimedJob, slot: WorkerSlot, log: WorkflowLogger, cause: unknown): Promise<void> {
  const reason = `the object store kept failing, the step will run again (not counted as an attempt): ${errorText(cause)}`;
  log.error({ err: cause, jobId: job.id }, "workflow step put back after store faults; it is retried without counting an attempt");
  await slot.freeAfterSubmitting(core.queue.nack(job, reason, undefined, { countAttempt: false }));
}

/**
 * The step could not record what it must before settling: after store
 * faults it goes back uncounted; any other error (one that repeating cannot
 * fix) is a counted retry, so it cannot loop forever.
 */
async function retryStep(core: RuntimeCore, job: ClaimedJob, slot: WorkerSlot, log: WorkflowLogger, error: unknown, what: string): Promise<void> {
  if (isStoreFault(error)) await putBack(core, job, slot, log, error);
  else await slot.freeAfterSubmitting(core.queue.nack(job, `${what}: ${errorText(error)}`));
}

/**
 * What the worker does around a step it processes without telemetry (see
 * `processStep`'s `worker`): log a settlement that failed, and hear that
 * the step's work ended (its slot freed).
 */
export interface StepWorkEnd {
  /** The step's processing or settlement failed after `recoverStep`; the queue redelivers it. */
  stepFailed(job: ClaimedJob, error: unknown): void;
  /** The step's work ended, however it ended; called once, after its slot was freed. */
  stepEnded(): void;
}

/**
 * Processes and settles one claimed job of the step queue; `processJob`
 * without the put-back of a store fault (see `recoverStep`), which rejects
 * when the step fails. With `worker`, the worker's whole handling of the
 * step in this one async frame (a frame of the worker's own around it cost
 * every step a promise and a turn): a failure goes through `recoverStep`
 * and then to `worker.stepFailed`, the slot is freed and `worker.stepEnded`
 * called, and the promise never rejects.
 *
 * This frame holds only what the path most steps take needs (a step of a
 * live run whose runner continues it at once, its records read in this
 * turn): an async frame keeps every register of its function for the
 * step's whole life, so opening the step, the rare outcomes, replay and
 * cancels are functions of their own.
 */
export async function processStep(core: RuntimeCore, job: ClaimedJob, slot: WorkerSlot, log: WorkflowLogger, worker?: StepWorkEnd): Promise<void> {
  let endedLater = false;
  try {
    const opening = openStep(core, job, slot);
    const w = opening instanceof OpenStep ? opening : await opening;
    if (w === undefined) return;
    if (w.run.cancelRequested === true || cancelRequestedOf(job)) {
      await terminateCancelled(core, job, slot, log, w);
      return;
    }
    // Only a step continued on a signal has one to resolve (an async call costs even when it has nothing to wait for).
    if (ownHeader(job.headers, HEADER_SIGNAL_WAIT) !== undefined) w.signal = await resolveSignal(core, job, w.runId, w.step);
    if (core.stepOutputReplay) {
      await processReplayable(core, job, slot, log, w);
      return;
    }
    // The runner is awaited here rather than in a function of its own: an async frame per step for one await.
    let outcome: StepOutcome;
    let landing: Promise<unknown> | undefined;
    try {
      outcome = checkOutcome(await core.runner.runStep(stepFor(core, job, w)));
      landing = w.seal();
      // Taken in the turn the return is seen: the runner may change its array after (see returned-payload).
      if (outcome.kind === "continue") outcome = continuedAtReturn(outcome, landing === undefined && settlesInTurn(core, job, outcome), w.runId, w.step);
      else if (outcome.kind === "succeed") outcome = succeededAtReturn(outcome, w.runId, w.step);
    } catch (error) {
      await settleThrown(core, job, slot, log, w, error);
      return;
    }
    if (landing !== undefined) await landing;
    const staged = EffectsHandle.stagedOwned(w.effects);
    const cancelled = cancelRequestedOf(job) || cancelRecorded(core, w);
    if (outcome.kind !== "continue" || cancelled !== false) {
      await settleVerdict(core, job, slot, log, w, { ok: true, outcome, staged, replayed: false }, cancelled);
      return;
    }
    const now = core.clock.now();
    try {
      const c = continueRun(core, job, slot, w, outcome, staged, undefined, now, log);
      if (!(c instanceof ChainedAck)) await c;
      else if (worker !== undefined && c.endsWithGroup(job, slot, worker)) {
        // Ended by its WAL group's one reaction (see `ChainedAck.durable`), which frees the slot and ends the step.
        endedLater = true;
        return;
      } else {
        // `settledContinue` inlined for the path most steps take: its async frame cost a promise and a turn.
        let next: ClaimedJob | undefined;
        try {
          const s = c.settled;
          if (s instanceof Promise) next = (await s).next;
          else {
            // The ack's commit awaited here rather than in a settlement frame of the queue's own: a promise and a turn per step.
            try {
              await s.durable;
            } catch (e) {
              s.failed(e);
              throw e;
            }
            const done = s.settled();
            next = (done instanceof Promise ? await done : done).next;
          }
        } finally {
          handOffNext(c, next);
        }
      }
    } catch (e) {
      if (!nextStepIdTaken(e)) throw e;
      await continueAgain(core, job, slot, w, outcome, staged, undefined, now, log);
    }
  } catch (e) {
    if (worker === undefined) throw e;
    try {
      await recoverStep(core, job, slot, log, e);
    } catch (failed) {
      worker.stepFailed(job, failed);
    }
  } finally {
    if (worker !== undefined && !endedLater) {
      slot.free();
      worker.stepEnded();
    }
  }
}

/**
 * Whether a continuing step's payload is read for the last time in the turn
 * its runner's return is seen, once no child start is landing: the
 * settlement awaits nothing before the ack (no earlier attempts to read for
 * its history, no signal wait's lock, a cancel check answered in this turn)
 * and the next step is not claimed by the ack, which hands it the very
 * array (so a continue at once may be, when the queue chains).
 */
function settlesInTurn(core: RuntimeCore, job: ClaimedJob, o: Extract<StepOutcome, { kind: "continue" }>): boolean {
  const kind = o.when.kind;
  if (kind === "onSignal" || (kind === "immediate" && core.queue.ackClaimingNext !== undefined)) return false;
  return core.queue.kvGetNow !== undefined && !hadEarlierAttempts(job);
}

/** A step of a run whose cancel was recorded before it ran: the run ends cancelled without running it. */
function terminateCancelled(core: RuntimeCore, job: ClaimedJob, slot: WorkerSlot, log: WorkflowLogger, w: OpenStep): Promise<void> {
  const base = terminationBase(job, w.run, w.runId, w.step, w.memos, core.clock.now(), w.run.hasChildren);
  return terminate(core, job, slot, ending(base, "cancelled", "cancelled"), undefined, log, w);
}

/** A step whose runner threw (or returned no StepOutcome): sealed, then settled as its error and any cancel have it. */
async function settleThrown(core: RuntimeCore, job: ClaimedJob, slot: WorkerSlot, log: WorkflowLogger, w: OpenStep, error: unknown): Promise<void> {
  const landing = w.seal();
  if (landing !== undefined) await landing;
  await settleVerdict(core, job, slot, log, w, { ok: false, error }, cancelRequestedOf(job) || cancelRecorded(core, w));
}

/**
 * A step processed with step output replay on: its recorded outcome
 * replayed, or the runner run and its outcome recorded before the
 * settlement (unless the run was cancelled meanwhile).
 */
async function processReplayable(core: RuntimeCore, job: ClaimedJob, slot: WorkerSlot, log: WorkflowLogger, w: OpenStep): Promise<void> {
  let verdict = await replayedVerdict(w.memos, job, w.runId, w.step, w.run.memoSet);
  if (verdict === undefined) {
    try {
      let outcome = checkOutcome(await core.runner.runStep(stepFor(core, job, w)));
      // The replay record's write is awaited before the settlement: the payload is copied at the return.
      if (outcome.kind === "continue") outcome = continuedAtReturn(outcome, false, w.runId, w.step);
      else if (outcome.kind === "succeed") outcome = succeededAtReturn(outcome, w.runId, w.step);
      verdict = { ok: true, outcome, staged: EffectsHandle.stagedOwned(w.effects), replayed: false };
    } catch (error) {
      verdict = { ok: false, error };
    } finally {
      const landing = w.seal();
      if (landing !== undefined) await landing;
    }
  }
  const cancelled = cancelRequestedOf(job) || (await cancelRecorded(core, w));
  if (verdict.ok && !verdict.replayed && !cancelled) {
    const record = { storedAtMs: core.clock.now(), outcome: verdict.outcome, effects: verdict.staged };
    const key = replayRecordKey(w.memos.prefix, w.runId, w.step, job.payload, w.run.memoSet);
    try {
      await putReplayRecord(w.memos, key, encodeReplayRecord(record));
    } catch (e) {
      // The record is part of the settlement: without it, run the step again (uncounted after store faults).
      await retryStep(core, job, slot, log, e, "could not write the step's replay record");
      return;
    }
  }
  await settleVerdict(core, job, slot, log, w, verdict, cancelled);
}

/**
 * Settles a step by its verdict and whether its run's cancel was recorded
 * while it ran (`cancelled`), in the precedence the module note gives.
 */
async function settleVerdict(
  core: RuntimeCore,
  job: ClaimedJob,
  slot: WorkerSlot,
  log: WorkflowLogger,
  w: OpenStep,
  verdict: Verdict,
  cancelled: boolean | Promise<boolean>,
): Promise<void> {
  const externalCancel = typeof cancelled === "boolean" ? cancelled : await cancelled;
  if (externalCancel && (await runEndedMeanwhile(core, w))) {
    // Its end stands (a repair's): this step ends nothing, starts nothing and writes no history of its own.
    await slot.freeAfterSubmitting(core.queue.ack(job));
    return;
  }
  const now = core.clock.now();
  const { run, runId, step, memos } = w;
  if (verdict.ok && verdict.outcome.kind === "cancel") {
    const at = terminationBase(job, run, runId, step, memos, now, w.hasChildren());
    await terminate(core, job, slot, ending(at, "cancelled", "runner", verdict.outcome.reason), verdict.staged, log, w);
  } else if (externalCancel) {
    const at = terminationBase(job, run, runId, step, memos, now, w.hasChildren());
    await terminate(core, job, slot, ending(at, "cancelled", "cancelled"), undefined, log, w);
  } else if (verdict.ok) {
    const o = verdict.outcome;
    if (o.kind === "continue") {
      await continueAgain(core, job, slot, w, o, verdict.staged, verdict.replayed ? verdict.storedAtMs : undefined, now, log);
    } else if (o.kind === "succeed") {
      const t = ending(terminationBase(job, run, runId, step, memos, now, w.hasChildren()), "succeeded");
      t.result = o.result;
      await terminate(core, job, slot, t, verdict.staged, log, w);
    } else if (o.kind === "fail") {
      const at = terminationBase(job, run, runId, step, memos, now, w.hasChildren());
      await terminate(core, job, slot, ending(at, "failed", "runner", o.reason), verdict.staged, log, w);
    }
  } else {
    await failStep(core, job, slot, terminationBase(job, run, runId, step, memos, now, w.hasChildren()), verdict.error, log, w);
  }
}

/** What a step continued on a signal has `stageSignalWait` adjust of its next step's job: its headers and deadline. */
type SignalWaitOptions = { headers: Record<string, string>; runAt?: number };

type NextStepOptions = {
  jobId: string;
  jobIdDrawn: true;
  dedupKey: string;
  priority: number;
  maxAttempts: number;
  headers: Record<string, string>;
  runAt: number | undefined;
};

/**
 * The next step job's options as `stageRebuiltEnqueue` reads them: one
 * object refilled by `submitContinue` for every step rather than made per
 * step (the queue reads it within the call and keeps only the headers
 * object, which is the step's own), every field an own field from the start.
 */
const nextOptions: NextStepOptions = {
  jobId: "",
  jobIdDrawn: true,
  dedupKey: "",
  priority: 0,
  maxAttempts: 0,
  headers: {},
  runAt: undefined,
};
const NO_NEXT_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>;

/** What every termination of this step records besides how it ended, with the time and the children flag as the step leaves them. */
function terminationBase(
  job: ClaimedJob,
  run: RunRecord,
  runId: RunId,
  step: number,
  memos: MemoStore,
  nowMs: number,
  hasChildren: boolean | undefined,
): Omit<TerminationInput, "status"> {
  return {
    runId,
    incarnation: run.incarnation,
    memoPrefix: memos.prefix,
    memoSet: run.memoSet,
    finalStep: step,
    // Only a step continued on a signal has signal keys its end must delete (see `releaseStepSignal`).
    finalStepWaited: ownHeader(job.headers, HEADER_SIGNAL_WAIT) !== undefined,
    headers: run.headers,
    token: deliveryToken(job.id, job.attempt, job.requeues),
    nowMs,
    priority: job.priority,
    maxAttempts: job.maxAttempts,
    group: run.group,
    parent: run.parent,
    hasChildren,
    submittedAtMs: run.submittedAtMs,
    submission: run.submission,
    traceHeaders: traceHeaderOf(job),
  };
}

/**
 * `at` completed into a termination input in place, with the fields a
 * spread of it would add in the same order: it is this step's own object,
 * used for nothing after, and a literal spreading it and then setting
 * fields is a slow path in V8.
 */
function ending(at: Omit<TerminationInput, "status">, status: TerminationInput["status"], errorKind?: RunErrorKind, error?: string): TerminationInput {
  const t = at as TerminationInput;
  t.status = status;
  if (errorKind !== undefined) t.errorKind = errorKind;
  if (error !== undefined) t.error = error;
  return t;
}

/** The outcome recorded for this delivery when step output replay is on, or undefined: run the step. */
async function replayedVerdict(memos: MemoStore, job: ClaimedJob, runId: RunId, step: number, memoSet: string | undefined): Promise<Verdict | undefined> {
  const key = replayRecordKey(memos.prefix, runId, step, job.payload, memoSet);
  const found = await retryStore(() => memos.store.get(key));
  if (found === null) return undefined;
  try {
    const r = decodeReplayRecord(found.body, key);
    return { ok: true, outcome: r.outcome, staged: r.effects, replayed: true, storedAtMs: r.storedAtMs };
  } catch {
    // An unreadable record is a miss: run the step again.
    return undefined;
  }
}

/** The `Step` the runner is handed for the opened step `w`: what it stages goes to `w.effects`, the memo keys it writes to `w.memoKeys`. */
function stepFor(core: RuntimeCore, job: ClaimedJob, w: OpenStep): Step {
  const { memos, runId, step } = w;
  const memoSet = w.run.memoSet;
  const owner = memoOwnerOf(core);
  return makeJobStep(
    runId,
    // A copy: the decoded record may be handed on to the run's next step (see step-carry), so the runner never holds its objects.
    { ...w.run.headers },
    job,
    // The memos of this submission only (see `RunRecord.memoSet`).
    // Each entry written is kept only while the run keeps it: a step outliving its run's removal leaves none behind.
    watchMemoWrites(new Memo(memos.store, memos.prefix, runId, step, memoSet), w, owner),
    watchMemoWrites(new Memo(memos.store, memos.prefix, runId, "run", memoSet), w, owner),
    w.effects,
    core.stepKv,
    w.children,
    step,
    job.payload,
    w.signal,
  );
}

/** Writes the run result record, then commits the termination with the step's ack. */
async function terminate(
  core: RuntimeCore,
  job: ClaimedJob,
  slot: WorkerSlot,
  t: TerminationInput,
  staged: StagedKv | undefined,
  log: WorkflowLogger,
  trace: StepTrace,
): Promise<void> {
  const outcome = await recordOutcome(core, job, slot, t, log);
  if (outcome === undefined) return;
  const effects = new SettlementEffects();
  if (staged !== undefined) applyStaged(staged, effects);
  const written: WrittenTerminal = { outcome };
  addTerminalEffects(core.terminal, t, effects, written);
  const error = t.status === "succeeded" || t.error === undefined ? undefined : { thrown: undefined, text: t.error };
  const history = stageStepHistory(core, job, trace, { outcome: t.status, endedAtMs: t.nowMs, error, staged, keepPayload: t.status !== "succeeded" }, effects);
  if (history !== undefined) await history;
  await slot.freeAfterSubmitting(core.queue.ack(job, effects));
  // Before the end is announced: a wait it wakes finds the record as committed without decoding it.
  core.view.endCommitted(t.runId, written, core.queue);
  core.noteTerminated(t.runId, t.nowMs);
  noteRunEnded(core, t.status);
}

/**
 * Records the run's outcome for its terminating settlement: a small one in
 * the terminal record the settlement commits (sets `t.inline`), a larger
 * one as a run result record written now, retrying store faults. When the
 * memo store keeps failing, the step goes back to the queue without
 * counting an attempt (on any attempt, the last one included): a run never
 * terminates without its outcome recorded. Returns the outcome recorded
 * (for the terminal effects, which need it too); undefined when the job was
 * put back instead.
 */
async function recordOutcome(core: RuntimeCore, job: ClaimedJob, slot: WorkerSlot, t: TerminationInput, log: WorkflowLogger): Promise<RunOutcome | undefined> {
  const outcome = runOutcomeOf(t);
  t.inline = inlineOutcomeOf(outcome);
  if (t.inline !== undefined) return outcome;
  try {
    await core.memos.withPrefix(t.memoPrefix).writeOutcomeRecord(t.runId, { token: t.token, incarnation: t.incarnation, outcome });
    return outcome;
  } catch (e) {
    await retryStep(core, job, slot, log, e, "could not record the run result in the memo store");
    return undefined;
  }
}

async function failStep(
  core: RuntimeCore,
  job: ClaimedJob,
  slot: WorkerSlot,
  at: Omit<TerminationInput, "status">,
  error: unknown,
  log: WorkflowLogger,
  trace: StepTrace,
): Promise<void> {
  // A memo store that kept failing under the runner is the store's fault, not the runner's.
  if (isMemoFault(error)) {
    await putBack(core, job, slot, log, error);
    return;
  }
  const text = errorText(error);
  const kind = StepError.kindOf(error);
  const retry = kind === "transient" && !job.isLastAttempt();
  logFailedAttempt(core, job, at.runId, at.finalStep, error, retry ? "retried" : kind === "permanent" ? "dead_lettered" : "failed");
  if (retry) {
    await slot.freeAfterSubmitting(core.queue.nack(job, text, undefined, { cause: thrownCause(error) }));
    return;
  }
  const t = ending(at, "failed", kind, text);
  t.errorCode = StepError.from(error).publicCode;
  if (error instanceof StepError && error.publicMessage !== undefined) t.publicError = showLoneSurrogates(error.publicMessage);
  const recorded = await recordOutcome(core, job, slot, t, log);
  if (recorded === undefined) return;
  const written: WrittenTerminal = { outcome: recorded };
  const effects = addTerminalEffects(core.terminal, t, undefined, written);
  const outcome = kind === "permanent" ? "dead_lettered" : "failed";
  const history = stageStepHistory(core, job, trace, { outcome, endedAtMs: t.nowMs, error: { thrown: error, text }, keepPayload: true }, effects);
  if (history !== undefined) await history;
  if (kind === "permanent") await slot.freeAfterSubmitting(core.queue.deadLetter(job, text, effects, { cause: thrownCause(error) }));
  else await slot.freeAfterSubmitting(core.queue.nack(job, text, effects, { cause: thrownCause(error) }));
  core.view.endCommitted(t.runId, written, core.queue);
  core.noteTerminated(t.runId, t.nowMs);
  noteRunEnded(core, t.status);
}

/**
 * Settles a step whose runner continued the run: enqueues the next step
 * (claiming it for this worker when it is due now and the queue allows),
 * moves the step pointer and stages the history entry. Not itself async:
 * a step continued at once or after a delay goes straight to the commit,
 * without an async frame of its own; a chained ack comes back as a
 * `ChainedAck` for the caller to await and hand on.
 */
function continueRun(
  core: RuntimeCore,
  job: ClaimedJob,
  slot: WorkerSlot,
  w: OpenStep,
  o: Extract<StepOutcome, { kind: "continue" }>,
  staged: StagedKv,
  storedAtMs: number | undefined,
  now: number,
  log: WorkflowLogger,
): Promise<unknown> | ChainedAck {
  const { runId, step } = w;
  const nextStep = step + 1;
  const nextJobId = core.queue.nextJobId();
  // A replayed delay keeps its original schedule: it counts from when the outcome was first stored (`storedAtMs`, set only for a replayed one).
  const elapsed = storedAtMs !== undefined ? Math.max(0, now - storedAtMs) : 0;
  const headers = nextStepHeaders(core, job, runId, nextStep);
  let runAt: number | undefined;
  const nextName = describePayload(core.runner, o.payload)?.step;
  const pointer: StepPointer = { step: nextStep, jobId: nextJobId };
  if (nextName !== undefined) pointer.name = nextName;
  const effects = applyStaged(staged, new SettlementEffects());
  // Only a step continued on a signal has signal bookkeeping to release.
  if (ownHeader(job.headers, HEADER_SIGNAL_WAIT) !== undefined) releaseStepSignal(core.queueName, runId, step, effects);
  if (o.when.kind === "immediate") stepEnqueuedNow(nextJobId);
  else if (o.when.kind === "after") runAt = now + Math.max(0, o.when.delayMs - elapsed);
  else return continueOnSignalFrom(core, job, slot, w, o, o.when, staged, now, log, headers, pointer, effects, elapsed);
  return commitContinue(core, job, slot, w, o, staged, now, headers, runAt, pointer, effects);
}

/**
 * `continueRun` for a step continued on a signal: its closures made here, not
 * in `continueRun`, where any closure puts the variables it names (most of
 * its parameters) in a context allocated on every call, whichever way the
 * step continues.
 */
function continueOnSignalFrom(
  core: RuntimeCore,
  job: ClaimedJob,
  slot: WorkerSlot,
  w: OpenStep,
  o: Extract<StepOutcome, { kind: "continue" }>,
  when: Extract<Trigger, { kind: "onSignal" }>,
  staged: StagedKv,
  now: number,
  log: WorkflowLogger,
  headers: Record<string, string>,
  pointer: StepPointer,
  effects: SettlementEffects,
  elapsed: number,
): Promise<void> {
  const { runId, step } = w;
  // Its headers and deadline as `stageSignalWait` leaves them, read when the commit is built.
  const opts: SignalWaitOptions = { headers };
  const commit = () => settledContinue(commitContinue(core, job, slot, w, o, staged, now, opts.headers, opts.runAt, pointer, effects));
  const wait = {
    runId,
    nextStep: pointer.step,
    nextJobId: pointer.jobId,
    correlationKey: when.correlationKey,
    timeoutMs: Math.max(0, when.timeoutMs - elapsed),
    now,
  };
  // Built only on this path, where a conflicting wait fails the step: a step continued otherwise terminates nothing.
  const at = () => terminationBase(job, w.run, runId, step, w.memos, now, w.hasChildren());
  return continueOnSignal(core, job, slot, at, log, w, wait, opts, pointer, effects, commit);
}

/** Registers the wait of a step continued on a signal and commits it, the two in the key's turn. */
async function continueOnSignal(
  core: RuntimeCore,
  job: ClaimedJob,
  slot: WorkerSlot,
  at: () => Omit<TerminationInput, "status">,
  log: WorkflowLogger,
  trace: StepTrace,
  wait: Parameters<typeof stageSignalWait>[1],
  opts: SignalWaitOptions,
  pointer: StepPointer,
  effects: SettlementEffects,
  commit: () => Promise<void>,
): Promise<void> {
  // Registration (check, then commit) and `signal` on one key take turns, so a signal
  // sent while a wait registers finds either the waiter or the buffer it consumes.
  const registered = await core.signalLock.run(wait.correlationKey, async () => {
    let reg;
    try {
      reg = await stageSignalWait(core, wait, opts, pointer, effects);
    } catch (error) {
      return { conflict: error };
    }
    await commit();
    return { waitingOn: reg.waitingOn };
  });
  if ("conflict" in registered) await failStep(core, job, slot, at(), registered.conflict, log, trace);
  else if (registered.waitingOn !== undefined) await afterWaitRegistered(core, registered.waitingOn, wait.nextJobId);
}

/**
 * The ack of a continuing step that claims the run's next step for this
 * worker (`ackClaimingNext`), handed to the caller to await: the caller
 * then hands the next step on with `handOffNext`, however the ack ended.
 * It is also what the next step is handed (the run's records, see
 * step-carry), and the step pointer it put as the `Known` the carry holds
 * (its bytes, value and token): one object for all three.
 */
class ChainedAck implements CarriedRun, Known<StepPointer>, DurableEnd {
  /** The step, its slot and its worker, when its WAL group's reaction ends it (`endsWithGroup`). */
  #job: ClaimedJob | undefined = undefined;
  #slot: WorkerSlot | undefined = undefined;
  #worker: StepWorkEnd | undefined = undefined;

  constructor(
    /** The ack, or its commit for the caller to await (see `SubmittedAck`). */
    readonly settled: Promise<AckedClaimingNext> | SubmittedAck,
    readonly chain: SlotChain,
    readonly run: Known<RunRecord>,
    readonly keys: RunKeys,
    readonly memos: MemoStore,
    /** The step pointer's bytes as put, its value and its token (see `pointer`). */
    readonly bytes: Uint8Array,
    readonly value: StepPointer,
    readonly token: KvToken | undefined,
  ) {}

  /** The step pointer the ack put: this object, whose `bytes`, `value` and `token` are its. */
  get pointer(): Known<StepPointer> {
    return this;
  }

  /**
   * Hands the end of the step to the reaction its ack's WAL group shares
   * (`SubmittedAck.whenDurable`) instead of an await in `processStep`'s
   * frame: false (nothing done) when the ack was not submitted in this turn
   * or the queue offers no such reaction.
   */
  endsWithGroup(job: ClaimedJob, slot: WorkerSlot, worker: StepWorkEnd): boolean {
    const s = this.settled;
    if (s instanceof Promise || s.whenDurable === undefined) return false;
    this.#job = job;
    this.#slot = slot;
    this.#worker = worker;
    s.whenDurable(this);
    return true;
  }

  /** The ack's commit is durable: what `processStep` did after its await, in its order (the hand-out, then the step's end). */
  durable(): void {
    let done: AckedClaimingNext | Promise<AckedClaimingNext>;
    try {
      done = (this.settled as SubmittedAck).settled();
    } catch (e) {
      this.#handOffThenEnd(undefined, true, e);
      return;
    }
    if (done instanceof Promise) {
      done.then(
        (d) => this.#handOffThenEnd(d.next, false, undefined),
        (e: unknown) => this.#handOffThenEnd(undefined, true, e),
      );
    } else this.#handOffThenEnd(done.next, false, undefined);
  }

  /** The ack's commit failed (its WAL put): the next step's claim goes with it, and the step fails as after an await that threw. */
  failed(err: unknown): void {
    try {
      (this.settled as SubmittedAck).failed(err);
    } finally {
      this.#handOffThenEnd(undefined, true, err);
    }
  }

  /** `handOffNext`, then the end of `processStep` for a worker: a failure reported (`error` when `failed`, else one the hand-off threw), the slot freed, the step ended. */
  #handOffThenEnd(next: ClaimedJob | undefined, failed: boolean, error: unknown): void {
    const worker = this.#worker!;
    let failure = error;
    try {
      handOffNext(this, next);
    } catch (e) {
      if (!failed) failure = e;
      failed = true;
    }
    try {
      // What `recoverStep` does once the settlement was submitted: nothing to put back, the error goes on.
      if (failed) worker.stepFailed(this.#job!, failure);
    } finally {
      this.#slot!.free();
      worker.stepEnded();
    }
  }
}

/**
 * The continuing step's settlement: its history entry, the next step's job
 * and the step pointer, with the ack. Not async: a chained ack is returned
 * for `processStep` to await itself (most steps take it), any other
 * settlement as its promise.
 */
function commitContinue(
  core: RuntimeCore,
  job: ClaimedJob,
  slot: WorkerSlot,
  w: OpenStep,
  o: Extract<StepOutcome, { kind: "continue" }>,
  staged: StagedKv,
  now: number,
  headers: Record<string, string>,
  runAt: number | undefined,
  pointer: StepPointer,
  effects: SettlementEffects,
): Promise<unknown> | ChainedAck {
  const transition = transitionOf(o.when, runAt, now);
  const history = stageStepHistory(core, job, w, { outcome: "continued", endedAtMs: now, transition, staged, next: o.payload }, effects);
  if (history !== undefined) return submitAfter(history, core, job, slot, w, o, headers, runAt, pointer, effects);
  return submitContinue(core, job, slot, w, o, headers, runAt, pointer, effects);
}

/**
 * `submitContinue` once the history entry's earlier attempts were read: the
 * closure made here, not in `commitContinue`, which would otherwise put its
 * parameters in a context allocated on every step.
 */
function submitAfter(history: Promise<void>, ...args: Parameters<typeof submitContinue>): Promise<void> {
  return history.then(() => settledContinue(submitContinue(...args)));
}

/** `commitContinue` once the history entry is staged: the next step's job and the step pointer, with the ack. */
function submitContinue(
  core: RuntimeCore,
  job: ClaimedJob,
  slot: WorkerSlot,
  w: OpenStep,
  o: Extract<StepOutcome, { kind: "continue" }>,
  headers: Record<string, string>,
  runAt: number | undefined,
  pointer: StepPointer,
  effects: SettlementEffects,
): Promise<unknown> | ChainedAck {
  const keys = w.keys;
  // Built here from the step job's checked fields: staged without checking its strings again (see `rebuiltEnqueueItem`).
  // The next step's id was drawn from the queue this settlement commits to: inserted without a look-up unless a caller's id may have taken it since.
  const n = nextOptions;
  n.jobId = pointer.jobId;
  n.dedupKey = stepDedupKey(w.runId, pointer.step);
  n.priority = job.priority;
  n.maxAttempts = job.maxAttempts;
  n.headers = headers;
  n.runAt = runAt;
  try {
    // A copy made at the runner's return is the next job's own: a chained hand-out takes it without another.
    stageRebuiltEnqueue(effects, core.queueName, o.payload, n, payloadCopiedAtReturn(o));
  } finally {
    // No step's headers outlive its staging here.
    n.headers = NO_NEXT_HEADERS;
  }
  // Freshly encoded, and only read after (the carry compares it with the stored record): staged without a copy.
  const pointerBytes = ownedBytes(encodeNextStepPointer(pointer));
  stageOwnedPut(effects, keys.pointerAt, pointerBytes);
  const chain = slot.chain;
  const q = core.queue;
  const ackClaimingNext = q.ackClaimingNext;
  if (o.when.kind !== "immediate" || ackClaimingNext === undefined) {
    return slot.freeAfterSubmitting(q.ack(job, effects));
  }
  // The next step, claimed for this worker in the same commit when the queue allows it.
  let settled: Promise<AckedClaimingNext> | SubmittedAck;
  try {
    const claimNext = slot.claimingNext(effects.enqueues.length - 1, core.leaseMs);
    settled = slot.freeAfterSubmitting(
      q.ackClaimingNextInTurn !== undefined ? q.ackClaimingNextInTurn(job, effects, claimNext) : ackClaimingNext.call(q, job, effects, claimNext),
    );
  } catch (e) {
    chain.handOff(undefined);
    throw e;
  }
  // No commit applied since the ack's: the key's token now is that of the pointer bytes it put, made from them when the queue can.
  const pointerToken =
    !(settled instanceof Promise) && settled.nothingCommittedSince?.() === true
      ? (q.kvTokenOfPut?.(keys.pointerAt, pointerBytes) ?? tokenNow(core, keys.pointerAt))
      : undefined;
  // The run record as read before the runner ran, with its token then: the next step reads it again only if it changed since.
  const run: Known<RunRecord> = w.carriedRun ?? { bytes: w.runBytes, value: w.run, token: w.runToken };
  return new ChainedAck(settled, chain, run, keys, w.memos, pointerBytes, pointer, pointerToken);
}

/**
 * `continueRun` settled again through `continueRedrawn`: the closure made
 * here, not in `processStep`, where a closure keeps the variables it names
 * in a context allocated on every step.
 */
function continueAgain(...args: Parameters<typeof continueRun>): Promise<void> {
  return continueRedrawn(() => continueRun(...args));
}

/** The step's replay record put, retrying store faults; outside `processStep` for the reason `continueAgain` is. */
function putReplayRecord(memos: MemoStore, key: string, bytes: Uint8Array): Promise<unknown> {
  return retryStore(() => memos.store.put(key, bytes));
}

/**
 * Settles a continuing step again, with its next step's id drawn again and
 * its settlement built around it, for as long as a caller's job takes the
 * id between the draw and the commit (nothing of a refused settlement was
 * committed, and the job is still claimed). Each round waits for that
 * caller's commit, so this is no busy loop.
 */
async function continueRedrawn(again: () => Promise<unknown> | ChainedAck): Promise<void> {
  for (;;) {
    try {
      await settledContinue(again());
      return;
    } catch (e) {
      if (!nextStepIdTaken(e)) throw e;
    }
  }
}

/** Awaits what `commitContinue` returned; a chained ack's next step is handed on however the ack ends. */
async function settledContinue(c: Promise<unknown> | ChainedAck): Promise<void> {
  if (!(c instanceof ChainedAck)) {
    await c;
    return;
  }
  let next: ClaimedJob | undefined;
  try {
    const s = c.settled;
    next = (await (s instanceof Promise ? s : settledInTurn(s))).next;
  } finally {
    handOffNext(c, next);
  }
}

/** Starts the step a chained ack claimed on this worker, with the records its settlement left (or returns the reservation). Once. */
function handOffNext(c: ChainedAck, next: ClaimedJob | undefined): void {
  c.chain.handOff(next, next === undefined ? undefined : c);
}

/**
 * The next step's headers: the user's and the flow headers of this step's
 * job (the concurrency limit as its rule has it now), the run id, the step
 * number and the trace parent, in that order.
 * Assigned one by one into one object (as the spreads they replace would
 * define them): this runs for every step.
 */
function nextStepHeaders(core: RuntimeCore, job: ClaimedJob, runId: RunId, nextStep: number): Record<string, string> {
  const h = job.headers;
  const headers: Record<string, string> = {};
  // One pass for the user's headers that also picks up the trace header and notes whether the run has
  // a flow: most have none, and then the flow headers' own object, lookups and limit check are skipped.
  // A lookup of the trace header apart was a miss on most steps, and as costly as the pass.
  let flowed = false;
  let trace: string | undefined;
  for (const k in h) {
    if (!Object.hasOwn(h, k)) continue;
    if (!k.startsWith(RESERVED_HEADER_PREFIX)) headers[k] = h[k]!;
    else if (k === HEADER_TRACEPARENT) trace = h[k];
    else if (k.startsWith(FLOW_HEADER_PREFIX)) flowed = true;
  }
  if (flowed) {
    const flow = withCurrentLimit(core, flowHeadersOf(h));
    for (const k in flow) headers[k] = flow[k]!;
  }
  headers[HEADER_RUN_ID] = runId;
  headers[HEADER_STEP] = String(nextStep);
  // The trace header as `traceHeaderOf` would give it, without the object.
  if (trace !== undefined) headers[HEADER_TRACEPARENT] = trace;
  return headers;
}

/** A step continued at once, as its history reports it: one object for every such step, only ever encoded. */
const IMMEDIATE: StepTransitionHistory = Object.freeze({ kind: "immediate" });

/** The transition a continuing step chose, as its history reports it. */
function transitionOf(when: Trigger, runAt: number | undefined, now: number): StepTransitionHistory {
  if (when.kind === "immediate") return IMMEDIATE;
  if (when.kind === "after") return { kind: "after", delayMs: when.delayMs, runAtMs: runAt ?? now + when.delayMs };
  return { kind: "on_signal", key: when.correlationKey, timeoutMs: when.timeoutMs, deadlineMs: runAt ?? now + when.timeoutMs };
}
