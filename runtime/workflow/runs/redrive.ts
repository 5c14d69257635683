/**
 * @module Redrive: re-opening a failed or cancelled run at a step, with the
 * payload that step ran with, keeping the run's memo.
 *
 * The payload comes from the run's history (the step that ended the run
 * keeps its own; a continuing step keeps the next one's; the index entry
 * keeps step 0's) or, for a step the queue dead-lettered, from the dead job
 * itself, which is requeued. One commit re-opens the run: the run record
 * and step pointer back, the terminal record and ended index entry gone,
 * the group member active again, the later history entries removed, the
 * redrive recorded; with the new step job when the payload came from the
 * history. A requeued dead job is requeued first, so a crash between the two
 * commits leaves a claimable job whose worker finishes the re-opening (see
 * `reopenRequeued`).
 *
 * Every change of a terminal record in this process takes turns on the
 * run's submission lock (submit, redrive, the memo sweeper), and only the
 * owner writes, so the terminal record read under the lock is the one the
 * commit replaces.
 */
import { drawRunIdentity } from "./drawn-identity.js";
import { ValidationError } from "../../errors.js";
import { SettlementEffects } from "../../queue/effects.js";
import type { ClaimedJob, EnqueueOptions } from "../../queue/types.js";
import { markEffects, type AppliedMark } from "../records/applied-mark.js";
import {
  childCompletionPrefix,
  childEntryKey,
  childrenPrefix,
  groupMemberKey,
  runKey,
  signalBufferKey,
  stepDedupKey,
  stepPointerKey,
  terminalRecordKey,
} from "../records/kv-keys.js";
import {
  decodeRunRecord,
  decodeStepPointer,
  decodeTerminalRecord,
  encodeChildEntry,
  encodeGroupMember,
  encodeRunRecord,
  encodeStepPointer,
  type RunRecord,
  type StepPointer,
  type TerminalRecord,
} from "../records/records.js";
import { HEADER_RUN_ID, HEADER_SIGNAL_DELIVERED, HEADER_SIGNAL_WAIT, HEADER_STEP } from "../records/reserved.js";
import { afterWaitRegistered, stageSignalWait } from "../signals/signals.js";
import { signalDeliveredKey, signalTimedOutKey } from "../records/kv-keys.js";
import type { RuntimeCore } from "../runtime-core.js";
import { RunNotFoundError, RunNotRetryableError } from "../workflow-errors.js";
import { drawnIdTaken } from "./drawn-job-id.js";
import { drawnIdOptions } from "../../queue/validate-enqueue.js";
import { isDeadStepOf, jobIdOfEnd } from "./end-tokens.js";
import {
  decodeRedrives,
  decodeStepRecord,
  encodeRedrives,
  HISTORY_FINAL_PAYLOAD_BYTES,
  HISTORY_NEXT_PAYLOAD_BYTES,
  redrivesKey,
  stepHistoryKey,
  type StepRecord,
} from "./history-records.js";
import { describePayload, stageReopened } from "./index-effects.js";
import { decodeIndexEntry, INDEX_INPUT_BYTES, runIndexKey, type IndexEntry } from "./run-index.js";
import { RunId } from "./run-id.js";
import type { RetryOutcome, RetryRunOptions } from "./run-types.js";
import type { WorkflowView } from "./workflow-view.js";
import { withCurrentLimit } from "./submit.js";
import { HISTORY_STEPS_PER_RUN, type RunEndHistory } from "./run-history.js";
import { describeValue, isOptionObject, ownHeader, readOptions } from "../../option-values.js";
import { refuseUnknownRetryFields } from "./run-option-fields.js";

/** Rounds of re-reading after a concurrent change (a worker finishing a requeued step's re-opening). */
const MAX_ROUNDS = 8;

/** Checks `retryRun` options; returns `fromStep`. `ValidationError` for anything else (also in a client, before writing). */
export function checkRetryOptions(opts: unknown): number | undefined {
  if (opts === undefined || opts === null) return undefined;
  if (!isOptionObject(opts)) throw new ValidationError("retryRun takes an options object ({ fromStep? })");
  refuseUnknownRetryFields(opts);
  const { fromStep: from } = readOptions(opts, ["fromStep"], "RetryRunOptions");
  if (from === undefined) return undefined;
  if (typeof from !== "number" || !Number.isInteger(from) || from < 0 || from > 1e9) {
    throw new ValidationError(`retryRun: fromStep must be a step number (an integer >= 0), got ${describeValue(from)}`);
  }
  return from;
}

/** Where the payload of the re-opened step comes from. */
type Source = { kind: "payload"; payload: Uint8Array; name?: string | undefined } | { kind: "dead"; jobId: string; name?: string | undefined };

async function readStep(core: RuntimeCore, runId: string, step: number): Promise<StepRecord | undefined> {
  const key = stepHistoryKey(core.queueName, runId, step);
  const b = await core.queue.kvGet(key);
  return b === null ? undefined : decodeStepRecord(b, key);
}

async function payloadSource(core: RuntimeCore, t: TerminalRecord, entry: IndexEntry, step: number): Promise<Source> {
  const named = (payload: Uint8Array, fallback?: string): Source => ({
    kind: "payload",
    payload,
    name: describePayload(core.runner, payload)?.step ?? fallback,
  });
  if (step === t.finalStep) {
    // A dead step job is requeued rather than copied, so the dead letters do not keep a step that ran again.
    const own = await readStep(core, t.runId, step);
    const jobId = jobIdOfEnd(t);
    const job = jobId === undefined ? null : await core.queue.view().job(jobId);
    // The run's own step job only: a token read the other way (see `jobIdOfEnd`) may name another run's dead job.
    if (job !== null && jobId !== undefined && isDeadStepOf(job, core.queueName, t.runId)) return { kind: "dead", jobId, name: own?.name };
    if (own?.payload !== undefined) return named(own.payload, own.name);
  }
  if (step > 0) {
    const prev = await readStep(core, t.runId, step - 1);
    if (prev?.next !== undefined) return named(prev.next);
  } else if (entry.input !== undefined) {
    return named(entry.input);
  }
  throw new RunNotRetryableError(
    t.runId,
    "payload_not_kept",
    `the payload of step ${step} was not kept (the step that ended a run keeps its payload up to ${HISTORY_FINAL_PAYLOAD_BYTES} bytes, or its dead job does; ` +
      `earlier steps up to ${step === 0 ? INDEX_INPUT_BYTES : HISTORY_NEXT_PAYLOAD_BYTES} bytes, for the last ${HISTORY_STEPS_PER_RUN} steps); retry from another step (inspectRun shows which are retryable)`,
  );
}

/** The refusal to re-open a run a debounced submission replaced. */
function supersededRefusal(t: TerminalRecord): RunNotRetryableError {
  const by = t.supersededBy === undefined ? "a later run" : `run "${t.supersededBy}"`;
  return new RunNotRetryableError(
    t.runId,
    "superseded",
    `it was superseded by ${by} (a later submission with its debounce key replaced it before it started), so running it would do work the debounce dropped; retry or submit ${by} instead`,
  );
}

/** The run's end as a redrive records what it replaced. */
function endOf(t: TerminalRecord): RunEndHistory {
  return {
    status: t.status,
    ...(t.error === undefined || t.error === null ? {} : { error: t.error }),
    ...(t.errorKind === undefined || t.errorKind === null ? {} : { errorKind: t.errorKind }),
    finalStep: t.finalStep,
    atMs: t.terminatedAtMs,
  };
}

/** Whether the run that started a child as `parent` says is active: a run under its id submitted later is not. */
async function parentStillActive(core: RuntimeCore, parent: NonNullable<IndexEntry["parent"]>): Promise<boolean> {
  const key = runKey(core.queueName, parent.runId);
  const bytes = await core.queue.kvGet(key);
  if (bytes === null) return false;
  if (parent.submission === undefined) return true;
  const now = decodeRunRecord(bytes, key).submission;
  return now === undefined || now === parent.submission;
}

/** Everything but the step job that re-opens the run `t` ended at `pointer`'s step, with its step job. */
async function reopenEffects(
  core: RuntimeCore,
  t: TerminalRecord,
  entry: IndexEntry,
  pointer: StepPointer,
  effects: SettlementEffects = new SettlementEffects(),
): Promise<SettlementEffects> {
  const q = core.queueName;
  const runId = t.runId;
  const { step } = pointer;
  // Drawn, not the step job's id, which a caller's WorkflowQueue may have given the ended pass's job too.
  const incarnation = drawRunIdentity();
  const run: RunRecord = {
    runId,
    submittedAtMs: entry.submittedAtMs,
    inputSha256: entry.inputSha256 ?? "",
    // A new incarnation: records of the ended pass (a job's result, a group member's end) no longer match.
    incarnation,
    // The same run again: the children it started are still its own.
    ...(entry.submission === undefined ? {} : { submission: entry.submission }),
    // And its memos: the steps it runs again find what the ended pass memoized.
    ...(entry.memoSet === undefined ? {} : { memoSet: entry.memoSet }),
    headers: entry.headers,
    ...(t.memoPrefix === undefined ? {} : { memoPrefix: t.memoPrefix }),
    ...(entry.priority === undefined ? {} : { priority: entry.priority }),
    ...(entry.maxAttempts === undefined ? {} : { maxAttempts: entry.maxAttempts }),
    ...(entry.group === undefined ? {} : { group: { id: entry.group.tag ?? entry.group.id, key: entry.group.key } }),
    ...(entry.parent === undefined ? {} : { parent: { ...entry.parent } }),
  };
  // A re-opened child reports its next end to its parent again, and is one of its running
  // children again while the parent is active (the run that started it, not a later one under its id).
  if (entry.parent !== undefined && (await parentStillActive(core, entry.parent))) {
    effects.kvPut(childEntryKey(q, entry.parent.runId, runId), encodeChildEntry({ parentClose: entry.parent.parentClose ?? "cancel" }));
  }
  // A re-opened parent still settles the children and unread ends its ended pass left.
  const pending = async (prefix: string) => (await core.queue.kvScan(prefix, { limit: 1 })).entries.length > 0;
  if ((await pending(childrenPrefix(q, runId))) || (await pending(signalBufferKey(q, childCompletionPrefix(runId))))) run.hasChildren = true;
  effects.kvPut(runKey(q, runId), encodeRunRecord(run));
  effects.kvPut(stepPointerKey(q, runId), encodeStepPointer(pointer));
  effects.kvDelete(terminalRecordKey(q, runId));
  stageReopened(q, t, effects);
  if (entry.group !== undefined) {
    const tag = entry.group.tag ?? entry.group.id;
    effects.kvPut(groupMemberKey(q, tag, entry.group.key), encodeGroupMember({ key: entry.group.key, runId, incarnation, state: "active" }));
  }
  // The history of the steps that run again starts over (at most the kept ones exist).
  for (let s = Math.max(step, t.finalStep - HISTORY_STEPS_PER_RUN); s <= t.finalStep; s++) effects.kvDelete(stepHistoryKey(q, runId, s));
  const rk = redrivesKey(q, runId);
  const rb = await core.queue.kvGet(rk);
  const list = rb === null ? [] : decodeRedrives(rb, rk);
  effects.kvPut(rk, encodeRedrives([...list, { step, atMs: core.clock.now(), replaced: endOf(t) }]));
  return effects;
}

/**
 * How step `step` of the run met its signal, when it is a step continued on
 * a signal: its key, the payload it observed when the history kept it, and
 * the wait the step before chose (to wait again when the payload is not
 * kept). `undefined` for a step that does not wait for a signal.
 */
interface SignalPlan {
  key: string;
  payload?: Uint8Array;
  timedOut: boolean;
  timeoutMs?: number;
}

async function signalPlan(core: RuntimeCore, runId: string, step: number): Promise<SignalPlan | undefined> {
  const own = await readStep(core, runId, step);
  const before = step > 0 ? (await readStep(core, runId, step - 1))?.transition : undefined;
  const wait = before?.kind === "on_signal" ? before : undefined;
  const key = own?.signal?.key ?? wait?.key;
  if (key === undefined) return undefined;
  return {
    key,
    ...(own?.signal?.result === "delivered" && own.signalPayload !== undefined ? { payload: own.signalPayload } : {}),
    timedOut: own?.signal?.result === "timed_out",
    ...(wait === undefined ? {} : { timeoutMs: wait.timeoutMs }),
  };
}

/**
 * Stages, for a requeued dead step job (which keeps its signal-wait header
 * and an attached payload), the signal it observed before: the kept
 * payload, or the timeout. Its first run's bookkeeping went with the run's
 * end, and without it the job would see a timeout, or take a signal
 * buffered for the next waiter.
 */
function stageObservedSignal(q: string, runId: string, step: number, plan: SignalPlan | undefined, effects: SettlementEffects): void {
  if (plan?.payload !== undefined) effects.kvPut(signalDeliveredKey(q, runId, step), plan.payload);
  else if (plan?.timedOut === true) effects.kvPut(signalTimedOutKey(q, runId, step), new Uint8Array([1]));
}

async function readEntry(core: RuntimeCore, t: TerminalRecord): Promise<IndexEntry> {
  const key = t.submittedAtMs === undefined ? undefined : runIndexKey(core.queueName, t.submittedAtMs, t.runId);
  const bytes = key === undefined ? null : await core.queue.kvGet(key);
  if (bytes === null || key === undefined) {
    throw new RunNotRetryableError(
      t.runId,
      "payload_not_kept",
      "it ended before this version kept the run index and history a redrive needs; submit it again instead",
    );
  }
  return decodeIndexEntry(bytes, key);
}

/**
 * Re-opens the failed or cancelled run `runIdIn` (see the module comment).
 * `mark` commits with the re-opening (see `applied-mark`); `extra` adds KV
 * effects of a layer above to it (a job's stale result record removed).
 */
export async function retryRun(
  core: RuntimeCore,
  view: WorkflowView,
  runIdIn: RunId | string,
  opts: RetryRunOptions | undefined,
  mark?: AppliedMark<RetryOutcome>,
  extra?: SettlementEffects,
): Promise<RetryOutcome> {
  const runId = RunId.parse(runIdIn);
  const fromStep = checkRetryOptions(opts);
  return core.submitLock.run(runId, async () => {
    let requeued: { jobId: string; step: number; token: string } | undefined;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const r = await view.records(runId);
      if (r.kind === "unknown") {
        await view.durable();
        throw new RunNotFoundError(runId);
      }
      if (r.kind === "active") {
        // A worker claimed the requeued job and finished the re-opening first: this redrive is done.
        if (requeued !== undefined && r.pointer.jobId === requeued.jobId) {
          const out: RetryOutcome = { runId, step: requeued.step, jobId: requeued.jobId };
          if (mark !== undefined) await core.queue.kvCompareAndApply([], markEffects(mark, out));
          return out;
        }
        throw new RunNotRetryableError(
          runId,
          "active",
          `it is still active (step ${r.pointer.step}); only a failed or cancelled run can be retried: cancel it first, or wait for it to end`,
        );
      }
      const t = r.terminal;
      // The worker re-opened the run at the requeued job and it ended again meanwhile: this redrive is done.
      if (requeued !== undefined && t.token !== requeued.token) {
        const out: RetryOutcome = { runId, step: requeued.step, jobId: requeued.jobId };
        if (mark !== undefined) await core.queue.kvCompareAndApply([], markEffects(mark, out));
        return out;
      }
      if (t.status === "succeeded") throw new RunNotRetryableError(runId, "succeeded", "it succeeded; only a failed or cancelled run can be retried");
      // Running it would do work its debounce dropped, beside the run that replaced it.
      if (t.errorKind === "superseded") throw supersededRefusal(t);
      const step = fromStep ?? t.finalStep;
      if (step > t.finalStep)
        throw new RunNotRetryableError(runId, "no_such_step", `it ended at step ${t.finalStep}; fromStep must be from 0 to ${t.finalStep}`);
      const entry = await readEntry(core, t);
      const source = await payloadSource(core, t, entry, step);
      // A step that ended the run by returning (fail, cancel) recorded that outcome for replay: run it again instead.
      await core.memos.withPrefix(t.memoPrefix ?? core.memos.prefix).clearReplaysFrom(runId, step);
      const tk = terminalRecordKey(core.queueName, runId);
      const tBytes = await core.queue.kvGet(tk);
      if (tBytes === null || decodeTerminalRecord(tBytes, tk).token !== t.token) continue;
      if (source.kind === "dead") {
        requeued = { jobId: source.jobId, step, token: t.token };
        const effects = new SettlementEffects();
        stageObservedSignal(core.queueName, runId, step, await signalPlan(core, runId, step), effects);
        await core.queue.requeueDead(source.jobId);
        await reopenEffects(core, t, entry, { step, jobId: source.jobId, ...(source.name === undefined ? {} : { name: source.name }) }, effects);
        if (extra !== undefined) effects.merge(extra);
        const out: RetryOutcome = { runId, step, jobId: source.jobId };
        if (mark !== undefined) markEffects(mark, out, effects);
        if (await core.queue.kvCompareAndApply([{ key: tk, value: tBytes }], effects)) return out;
        continue;
      }
      const jobId = core.queue.nextJobId();
      try {
        const pointer: StepPointer = { step, jobId, ...(source.name === undefined ? {} : { name: source.name }) };
        const opts: EnqueueOptions & { headers: Record<string, string> } = {
          jobId,
          dedupKey: stepDedupKey(runId, step),
          headers: { ...entry.headers, ...withCurrentLimit(core, { ...entry.flow }), [HEADER_RUN_ID]: runId, [HEADER_STEP]: String(step) },
          ...(entry.priority === undefined ? {} : { priority: entry.priority }),
          ...(entry.maxAttempts === undefined ? {} : { maxAttempts: entry.maxAttempts }),
        };
        const plan = await signalPlan(core, runId, step);
        const commit = async (effects: SettlementEffects): Promise<RetryOutcome> => {
          await reopenEffects(core, t, entry, pointer, effects);
          if (extra !== undefined) effects.merge(extra);
          const out: RetryOutcome = { runId, step, jobId };
          if (mark !== undefined) markEffects(mark, out, effects);
          // Drawn from the queue this enqueue commits to: inserted without a look-up unless a caller's id may have taken it since.
          const { outcome } = await core.queue.enqueueWithEffects(core.queueName, source.payload, drawnIdOptions(opts), effects);
          if (outcome.newlyEnqueued) return out;
          throw new RunNotRetryableError(runId, "active", `a job of its step ${step} is already queued (job ${outcome.jobId}); wait for it to run`);
        };
        if (plan === undefined) return await commit(new SettlementEffects());
        if (plan.payload !== undefined || plan.timeoutMs === undefined) {
          // The step observed a signal the history kept (or its wait is no longer known): it sees the same again.
          opts.headers[HEADER_SIGNAL_WAIT] = plan.key;
          if (plan.payload !== undefined) opts.headers[HEADER_SIGNAL_DELIVERED] = "1";
          const effects = new SettlementEffects();
          stageObservedSignal(core.queueName, runId, step, plan, effects);
          return await commit(effects);
        }
        // The step waits for its signal again, as when the step before continued on it.
        const { key, timeoutMs } = plan;
        const registered = await core.signalLock.run(key, async () => {
          const effects = new SettlementEffects();
          let reg;
          try {
            reg = await stageSignalWait(
              core,
              { runId, nextStep: step, nextJobId: jobId, correlationKey: key, timeoutMs, now: core.clock.now() },
              opts,
              pointer,
              effects,
            );
          } catch (e) {
            throw new RunNotRetryableError(
              runId,
              "signal_key_taken",
              `its step ${step} waits for signal "${key}", which another run waits for now (${e instanceof Error ? e.message : String(e)}); retry once that wait ended`,
            );
          }
          return { out: await commit(effects), waitingOn: reg.waitingOn };
        });
        if (registered.waitingOn !== undefined) await afterWaitRegistered(core, registered.waitingOn, jobId);
        return registered.out;
      } catch (e) {
        // The run's records name the step's new job: an id a caller's job took meanwhile is drawn again.
        if (drawnIdTaken(e, jobId)) continue;
        throw e;
      }
    }
    throw new RunNotRetryableError(runId, "active", "it kept changing while the redrive was prepared; try again");
  });
}

/**
 * For the worker: `job` is a dead step job someone requeued (`requeueDead`,
 * or a redrive that crashed before re-opening the run) whose run it ended.
 * Re-opens the run at that job, so the step runs again and its new end
 * replaces the old one. `true` when the run now points at `job`.
 */
export async function reopenRequeued(core: RuntimeCore, job: ClaimedJob, runId: RunId, step: number): Promise<boolean> {
  const tk = terminalRecordKey(core.queueName, runId);
  const first = await core.queue.kvGet(tk);
  if (first === null) return false;
  const t0 = decodeTerminalRecord(first, tk);
  if (t0.status === "succeeded" || t0.finalStep !== step || jobIdOfEnd(t0) !== job.id) return false;
  const history = await core.queue.view().attemptHistory(job.id);
  // Only a job that was dead and requeued is claimed again after ending its run.
  if (!history.some((a) => a.outcome === "requeued")) return false;
  return core.submitLock.run(runId, async () => {
    const tBytes = await core.queue.kvGet(tk);
    if (tBytes === null) {
      // Re-opened meanwhile (by the redrive that requeued the job): the run points at it.
      const pk = stepPointerKey(core.queueName, runId);
      const p = await core.queue.kvGet(pk);
      return p !== null && decodeStepPointer(p, pk).jobId === job.id;
    }
    const t = decodeTerminalRecord(tBytes, tk);
    if (t.token !== t0.token) return false;
    let entry: IndexEntry;
    try {
      entry = await readEntry(core, t);
    } catch {
      return false;
    }
    const own = await readStep(core, runId, step);
    await core.memos.withPrefix(t.memoPrefix ?? core.memos.prefix).clearReplaysFrom(runId, step);
    const effects = new SettlementEffects();
    if (ownHeader(job.headers, HEADER_SIGNAL_WAIT) !== undefined)
      stageObservedSignal(core.queueName, runId, step, await signalPlan(core, runId, step), effects);
    await reopenEffects(core, t, entry, { step, jobId: job.id, ...(own?.name === undefined ? {} : { name: own.name }) }, effects);
    return core.queue.kvCompareAndApply([{ key: tk, value: tBytes }], effects);
  });
}
