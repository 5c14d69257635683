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
 */
import { MAX_DELAY_MS } from "../../time-bounds.js";
import { SettlementEffects } from "../../queue/effects.js";
import type { ClaimedJob, EnqueueOptions } from "../../queue/types.js";
import { makeStep } from "./delivery.js";
import { applyStaged, EffectsHandle } from "./effects-handle.js";
import { replayRecordKey, runKey, stepDedupKey, stepPointerKey } from "../records/kv-keys.js";
import {
  decodeReplayRecord,
  decodeRunRecord,
  decodeStepPointer,
  encodeReplayRecord,
  encodeStepPointer,
  type RunRecord,
  type StagedKv,
  type StepPointer,
} from "../records/records.js";
import { HEADER_NOOP, HEADER_RUN_ID, HEADER_SIGNAL_WAIT, HEADER_STEP, HEADER_TERMINAL } from "../records/reserved.js";
import { RunId } from "../runs/run-id.js";
import type { RuntimeCore } from "../runtime-core.js";
import type { MemoStore } from "../memo/memo.js";
import { afterWaitRegistered, releaseStepSignal, resolveSignal, stageSignalWait } from "../signals/signals.js";
import type { StepOutcome } from "./step-outcome.js";
import { userHeadersOf } from "../runs/submit.js";
import { addTerminalEffects, runOutcomeOf, type TerminationInput } from "../runs/terminal.js";
import { processNotification } from "../terminal-hook/notification.js";
import { errorText, StepError } from "../workflow-errors.js";
import type { WorkerSlot } from "./settlement-slots.js";
import { logFailedAttempt, noteRunEnded, thrownCause, traceHeaderOf } from "./step-log.js";

type Verdict =
  | { ok: true; outcome: StepOutcome; staged: StagedKv; replayed: boolean; storedAtMs?: number }
  | { ok: false; error: unknown };

/** Rejects what is not a StepOutcome, so a runner bug fails the step instead of corrupting a record. */
function validTrigger(w: unknown): boolean {
  const t = w as { kind?: unknown; delayMs?: unknown; correlationKey?: unknown; timeoutMs?: unknown } | null;
  if (t === null || typeof t !== "object") return false;
  // The same bounds as Trigger.after / onSignal: an outcome built by hand gets no looser check.
  const ms = (x: unknown) => typeof x === "number" && Number.isFinite(x) && x >= 0 && x <= MAX_DELAY_MS;
  if (t.kind === "immediate") return true;
  if (t.kind === "after") return ms(t.delayMs);
  return t.kind === "onSignal" && typeof t.correlationKey === "string" && t.correlationKey.length > 0 && ms(t.timeoutMs);
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
  return o as StepOutcome;
}

/**
 * Processes and settles one claimed job of the step queue. A settlement the
 * queue refuses (a lost claim, a closed queue) rejects; the caller logs it
 * and the queue redelivers the job.
 */
export async function processJob(core: RuntimeCore, job: ClaimedJob, slot: WorkerSlot): Promise<void> {
  if (job.headers[HEADER_TERMINAL] !== undefined) return processNotification(core, job, slot);
  if (job.headers[HEADER_NOOP] !== undefined) {
    await slot.freeAfterSubmitting(core.queue.ack(job));
    return;
  }
  const runId = job.headers[HEADER_RUN_ID];
  const step = Number(job.headers[HEADER_STEP]);
  if (!RunId.isValid(runId) || !Number.isInteger(step) || step < 0) {
    await slot.freeAfterSubmitting(core.queue.deadLetter(job, "not a workflow step job: the workflow.run_id / workflow.step headers are missing or malformed"));
    return;
  }
  const runBytes = await core.queue.kvGet(runKey(core.queueName, runId));
  const ptrBytes = await core.queue.kvGet(stepPointerKey(core.queueName, runId));
  const pointer = ptrBytes === null ? null : decodeStepPointer(ptrBytes, stepPointerKey(core.queueName, runId));
  if (runBytes === null || pointer === null || pointer.jobId !== job.id) {
    // The run terminated or moved past this job (a stale redelivery): nothing to do.
    await slot.freeAfterSubmitting(core.queue.ack(job));
    return;
  }
  const run = decodeRunRecord(runBytes, runKey(core.queueName, runId));
  // The run's memo lives where its submitting runtime keeps memos, whichever runtime works this step.
  const memos = core.memos.withPrefix(run.memoPrefix ?? core.memos.prefix);
  const base: Omit<TerminationInput, "status"> = {
    runId,
    incarnation: run.incarnation,
    memoPrefix: memos.prefix,
    finalStep: step,
    headers: run.headers,
    token: `${job.id}:${job.attempt}`,
    nowMs: core.clock.now(),
    priority: job.priority,
    maxAttempts: job.maxAttempts,
    group: run.group,
  };
  if (run.cancelRequested === true || job.cancelSignal.aborted) {
    await terminate(core, job, slot, { ...base, status: "cancelled", errorKind: "cancelled" }, undefined);
    return;
  }

  const signal = await resolveSignal(core, job, runId, step);
  const verdict = await runOrReplay(core, memos, job, run, runId, step, signal);
  const externalCancel = job.cancelSignal.aborted || (await cancelRequested(core, runId));
  if (verdict.ok && !verdict.replayed && !externalCancel && core.stepOutputReplay) {
    const record = { storedAtMs: core.clock.now(), outcome: verdict.outcome, effects: verdict.staged };
    try {
      await memos.store.put(replayRecordKey(memos.prefix, runId, step, job.payload), encodeReplayRecord(record));
    } catch (e) {
      // The record is part of the settlement: without it, retry the step, except on its last attempt.
      if (!job.isLastAttempt()) {
        await slot.freeAfterSubmitting(core.queue.nack(job, `could not write the step's replay record: ${errorText(e)}`));
        return;
      }
    }
  }
  const now = core.clock.now();
  const at = { ...base, nowMs: now };

  if (verdict.ok && verdict.outcome.kind === "cancel") {
    await terminate(core, job, slot, { ...at, status: "cancelled", errorKind: "runner", error: verdict.outcome.reason }, verdict.staged);
  } else if (externalCancel) {
    await terminate(core, job, slot, { ...at, status: "cancelled", errorKind: "cancelled" }, undefined);
  } else if (verdict.ok) {
    const o = verdict.outcome;
    if (o.kind === "continue") await continueRun(core, job, slot, runId, step, o, verdict, now, at);
    else if (o.kind === "succeed") await terminate(core, job, slot, { ...at, status: "succeeded", result: o.result }, verdict.staged);
    else if (o.kind === "fail") await terminate(core, job, slot, { ...at, status: "failed", errorKind: "runner", error: o.reason }, verdict.staged);
  } else {
    await failStep(core, job, slot, at, verdict.error);
  }
}

async function cancelRequested(core: RuntimeCore, runId: string): Promise<boolean> {
  const b = await core.queue.kvGet(runKey(core.queueName, runId));
  return b !== null && decodeRunRecord(b, runKey(core.queueName, runId)).cancelRequested === true;
}

/** Runs the runner, or replays the outcome recorded for this delivery. */
async function runOrReplay(core: RuntimeCore, memos: MemoStore, job: ClaimedJob, run: RunRecord, runId: RunId, step: number, signal: Uint8Array | null | undefined): Promise<Verdict> {
  if (core.stepOutputReplay) {
    const key = replayRecordKey(memos.prefix, runId, step, job.payload);
    const found = await memos.store.get(key);
    if (found !== null) {
      try {
        const r = decodeReplayRecord(found.body, key);
        return { ok: true, outcome: r.outcome, staged: r.effects, replayed: true, storedAtMs: r.storedAtMs };
      } catch {
        // An unreadable record is a miss: run the step again.
      }
    }
  }
  const effects = new EffectsHandle();
  const s = makeStep(
    {
      runId,
      headers: run.headers,
      jobId: job.id,
      attempt: job.attempt,
      maxAttempts: job.maxAttempts,
      cancelSignal: job.cancelSignal,
      lease: job.lease,
      memo: memos.newMemo(runId, step),
      runMemo: memos.runMemo(runId),
      effects,
      kv: { get: (key) => core.queue.kvGet(key) },
    },
    step,
    job.payload,
    signal,
  );
  try {
    const outcome = checkOutcome(await core.runner.runStep(s));
    return { ok: true, outcome, staged: effects.staged(), replayed: false };
  } catch (error) {
    return { ok: false, error };
  } finally {
    effects.seal();
  }
}

/** Writes the run result record, then commits the termination with the step's ack. */
async function terminate(core: RuntimeCore, job: ClaimedJob, slot: WorkerSlot, t: TerminationInput, staged: StagedKv | undefined): Promise<void> {
  if (!(await recordOutcome(core, job, slot, t))) return;
  const effects = new SettlementEffects();
  if (staged !== undefined) applyStaged(staged, effects);
  addTerminalEffects(core.terminal, t, effects);
  await slot.freeAfterSubmitting(core.queue.ack(job, effects));
  core.noteTerminated(t.runId, t.nowMs);
  noteRunEnded(core, t.status);
}

/**
 * Writes the run result record before a terminating settlement. When the
 * memo store fails, the step is retried (nacked) unless this is its last
 * attempt, where terminating without the record beats dead-lettering a step
 * whose outcome is known. `false` when the job was nacked instead.
 */
async function recordOutcome(core: RuntimeCore, job: ClaimedJob, slot: WorkerSlot, t: TerminationInput): Promise<boolean> {
  try {
    await core.memos.withPrefix(t.memoPrefix).writeOutcomeRecord(t.runId, { token: t.token, outcome: runOutcomeOf(t) });
    return true;
  } catch (e) {
    if (job.isLastAttempt()) return true;
    await slot.freeAfterSubmitting(core.queue.nack(job, `could not record the run result in the memo store: ${errorText(e)}`));
    return false;
  }
}

async function failStep(core: RuntimeCore, job: ClaimedJob, slot: WorkerSlot, at: Omit<TerminationInput, "status">, error: unknown): Promise<void> {
  const text = errorText(error);
  const kind = StepError.kindOf(error);
  const retry = kind === "transient" && !job.isLastAttempt();
  logFailedAttempt(core, job, at.runId, at.finalStep, error, retry ? "retried" : kind === "permanent" ? "dead_lettered" : "failed");
  if (retry) {
    await slot.freeAfterSubmitting(core.queue.nack(job, text, undefined, { cause: thrownCause(error) }));
    return;
  }
  const t: TerminationInput = { ...at, status: "failed", errorKind: kind, error: text };
  if (!(await recordOutcome(core, job, slot, t))) return;
  const effects = addTerminalEffects(core.terminal, t);
  if (kind === "permanent") await slot.freeAfterSubmitting(core.queue.deadLetter(job, text, effects, { cause: thrownCause(error) }));
  else await slot.freeAfterSubmitting(core.queue.nack(job, text, effects, { cause: thrownCause(error) }));
  core.noteTerminated(t.runId, t.nowMs);
  noteRunEnded(core, t.status);
}

async function continueRun(
  core: RuntimeCore,
  job: ClaimedJob,
  slot: WorkerSlot,
  runId: RunId,
  step: number,
  o: Extract<StepOutcome, { kind: "continue" }>,
  verdict: Extract<Verdict, { ok: true }>,
  now: number,
  at: Omit<TerminationInput, "status">,
): Promise<void> {
  const nextStep = step + 1;
  const nextJobId = core.queue.nextJobId();
  // A replayed delay keeps its original schedule: it counts from when the outcome was first stored.
  const elapsed = verdict.replayed && verdict.storedAtMs !== undefined ? Math.max(0, now - verdict.storedAtMs) : 0;
  const opts: EnqueueOptions & { headers: Record<string, string> } = {
    jobId: nextJobId,
    dedupKey: stepDedupKey(runId, nextStep),
    priority: job.priority,
    maxAttempts: job.maxAttempts,
    headers: { ...userHeadersOf(job.headers), [HEADER_RUN_ID]: runId, [HEADER_STEP]: String(nextStep), ...traceHeaderOf(job) },
  };
  const pointer: StepPointer = { step: nextStep, jobId: nextJobId };
  const effects = applyStaged(verdict.staged, new SettlementEffects());
  // Only a step continued on a signal has signal bookkeeping to release.
  if (job.headers[HEADER_SIGNAL_WAIT] !== undefined) releaseStepSignal(core.queueName, runId, step, effects);
  const commit = async (): Promise<void> => {
    effects.enqueue(core.queueName, o.payload, opts);
    effects.kvPut(stepPointerKey(core.queueName, runId), encodeStepPointer(pointer));
    await slot.freeAfterSubmitting(core.queue.ack(job, effects));
  };
  if (o.when.kind === "immediate") {
    await commit();
  } else if (o.when.kind === "after") {
    opts.runAt = now + Math.max(0, o.when.delayMs - elapsed);
    await commit();
  } else {
    const { correlationKey } = o.when;
    const timeoutMs = Math.max(0, o.when.timeoutMs - elapsed);
    // Registration (check, then commit) and `signal` on one key take turns, so a signal
    // sent while a wait registers finds either the waiter or the buffer it consumes.
    const registered = await core.signalLock.run(correlationKey, async () => {
      let reg;
      try {
        reg = await stageSignalWait(core, { runId, nextStep, nextJobId, correlationKey, timeoutMs, now }, opts, pointer, effects);
      } catch (error) {
        return { conflict: error };
      }
      await commit();
      return { waitingOn: reg.waitingOn };
    });
    if ("conflict" in registered) await failStep(core, job, slot, at, registered.conflict);
    else if (registered.waitingOn !== undefined) await afterWaitRegistered(core, registered.waitingOn, nextJobId);
  }
}
