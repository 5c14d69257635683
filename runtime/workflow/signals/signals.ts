/**
 * @module Durable signals: a step continued on a signal is a scheduled job
 * woken early by `signal`, or by its timeout.
 *
 * KV bookkeeping: `signal-wait/{key}` names the scheduled waiter,
 * `signal-buf/{key}` holds one buffered payload (a later signal replaces
 * it), `signal-delivered/{run}/{step}` holds a payload consumed on a step's
 * behalf so every redelivery of the step observes the same value, and
 * `signal-timed-out/{run}/{step}` records that a delivery resolved the wait
 * as timed out, so a signal arriving before a redelivery does not change
 * what the step observes (it stays buffered for the next waiter). Both are
 * deleted by the step's settlement.
 */
import { instruments } from "../../telemetry/metrics.js";
import { endOk, endWithError, startSpan, traceSignalWait } from "../../telemetry/tracing.js";
import type { ClaimedJob, EnqueueOptions } from "../../queue/types.js";
import { SettlementEffects } from "../../queue/effects.js";
import { signalBufferKey, signalDeliveredKey, signalTimedOutKey, signalWaitKey, stepPointerKey } from "../records/kv-keys.js";
import { decodeSignalWait, decodeStepPointer, signalWaitForCommit, type StepPointer } from "../records/records.js";
import { stageCommitOnly } from "../records/commit-bytes.js";
import { HEADER_SIGNAL_DELIVERED, HEADER_SIGNAL_WAIT } from "../records/reserved.js";
import type { SignalOutcome } from "../runs/run-types.js";
import type { RuntimeCore } from "../runtime-core.js";
import { checkCorrelationKey, checkSignalPayload, excerpt } from "../limits.js";
import { bytesAtCall } from "../bytes-at-call.js";
import { markEffects, type AppliedMark } from "../records/applied-mark.js";
import { StepError } from "../workflow-errors.js";
import { ownHeader } from "../../option-values.js";

const TIMED_OUT = new Uint8Array([1]);

/** Adds to `effects` the removal of the signal bookkeeping of one step (what it observed). */
export function releaseStepSignal(queueName: string, runId: string, step: number, effects: SettlementEffects): void {
  effects.kvDelete(signalDeliveredKey(queueName, runId, step));
  effects.kvDelete(signalTimedOutKey(queueName, runId, step));
}

/** Releases the wait index entry when it still names `jobId`. */
async function releaseWait(core: RuntimeCore, correlationKey: string, jobId: string): Promise<void> {
  const k = signalWaitKey(core.queueName, correlationKey);
  const cur = await core.queue.kvGet(k);
  if (cur !== null && decodeSignalWait(cur, k).jobId === jobId) await core.queue.kvCompareAndDelete(k, cur);
}

/**
 * The signal a claimed step observes: `undefined` for a step not continued
 * on a signal, the payload when one arrived, `null` when its timeout fired.
 */
export async function resolveSignal(core: RuntimeCore, job: ClaimedJob, runId: string, step: number): Promise<Uint8Array | null | undefined> {
  const correlationKey = ownHeader(job.headers, HEADER_SIGNAL_WAIT);
  if (correlationKey === undefined) return undefined;
  const signal = await resolveWait(core, job, runId, step, correlationKey);
  // The first attempt of the woken step ends the wait; a redelivery would only repeat it.
  if (job.attempt === 1) traceSignalWait(core.queueName, job, runId, step, signal === null);
  return signal;
}

async function resolveWait(core: RuntimeCore, job: ClaimedJob, runId: string, step: number, correlationKey: string): Promise<Uint8Array | null> {
  await releaseWait(core, correlationKey, job.id);
  if (job.attached !== undefined) return job.attached;
  const deliveredKey = signalDeliveredKey(core.queueName, runId, step);
  const delivered = await core.queue.kvGet(deliveredKey);
  if (delivered !== null) return delivered;
  const timedOutKey = signalTimedOutKey(core.queueName, runId, step);
  if ((await core.queue.kvGet(timedOutKey)) !== null) return null;
  // Turn-taking with `signal` on this key: the buffer read below and its consumption are one step.
  return core.signalLock.run(correlationKey, async () => {
    const bufKey = signalBufferKey(core.queueName, correlationKey);
    const pointerKey = stepPointerKey(core.queueName, runId);
    // Each write below is held to this step still being its run's current one: a repair that ended the run
    // since it was opened deleted the step's signal records, and a write after that end would outlive the
    // run (a later run under its id would observe it) and take a buffered signal from the next waiter.
    // A change of the pointer or (outside the key's lock, by a clear) of the buffer fails the comparison: read again.
    for (;;) {
      const pointer = await core.queue.kvGet(pointerKey);
      // Ended or moved on: nothing is recorded, and the step's settlement finds the run ended.
      if (pointer === null || decodeStepPointer(pointer, pointerKey).jobId !== job.id) return null;
      const current = { key: pointerKey, value: pointer };
      // A signal that arrived while this step's timeout was promoting it: consume it now.
      const buffered = await core.queue.kvGet(bufKey);
      if (buffered !== null) {
        // Recorded for the step and removed from the buffer in one commit, so a crash cannot leave it both
        // delivered here and buffered for the next waiter. A KV commit of its own: a job carrying it would be
        // one more done job of the step queue than the run's steps.
        const effects = new SettlementEffects().kvPut(deliveredKey, buffered).kvDelete(bufKey);
        if (await core.queue.kvCompareAndApply([{ key: bufKey, value: buffered }, current], effects)) return buffered;
        continue;
      }
      // Durable before the runner sees the timeout: every later delivery of this step sees it too.
      if (await core.queue.kvCompareAndApply([current], new SettlementEffects().kvPut(timedOutKey, TIMED_OUT))) {
        instruments()?.signalsTimedOut.add(1, { "taquba.queue": core.queueName });
        return null;
      }
    }
  });
}

/** What registering a wait decided. */
export interface Registration {
  /** The wait index entry written; `undefined` when a buffered signal was consumed at once. */
  waitingOn: string | undefined;
}

/**
 * Stages the registration of the next step's wait on `correlationKey` into
 * `effects`, adjusting the next step's enqueue options and pointer. Throws a
 * permanent `StepError` when another live waiter holds the key.
 */
export async function stageSignalWait(
  core: RuntimeCore,
  args: { runId: string; nextStep: number; nextJobId: string; correlationKey: string; timeoutMs: number; now: number },
  opts: EnqueueOptions & { headers: Record<string, string> },
  pointer: StepPointer,
  effects: SettlementEffects,
): Promise<Registration> {
  const { runId, nextStep, nextJobId, correlationKey } = args;
  const waitKey = signalWaitKey(core.queueName, correlationKey);
  const existing = await core.queue.kvGet(waitKey);
  if (existing !== null) {
    const w = decodeSignalWait(existing, waitKey);
    const info = await core.queue.view().job(w.jobId);
    if (info !== null && info.state === "scheduled") {
      throw StepError.permanent(
        new Error(
          `signal key "${correlationKey}" already has a waiter (run ${w.runId}, step ${w.step}); one waiter is allowed per key, so include the run id in the key`,
        ),
      );
    }
  }
  opts.headers[HEADER_SIGNAL_WAIT] = correlationKey;
  const bufKey = signalBufferKey(core.queueName, correlationKey);
  const buffered = await core.queue.kvGet(bufKey);
  if (buffered !== null) {
    opts.headers[HEADER_SIGNAL_DELIVERED] = "1";
    effects.kvPut(signalDeliveredKey(core.queueName, runId, nextStep), buffered);
    effects.kvDelete(bufKey);
    return { waitingOn: undefined };
  }
  opts.runAt = args.now + args.timeoutMs;
  stageCommitOnly(effects, waitKey, signalWaitForCommit({ jobId: nextJobId, runId, step: nextStep }, core.queue));
  pointer.signalWait = correlationKey;
  return { waitingOn: correlationKey };
}

/**
 * After a wait registration committed: a signal found buffered is handed
 * over now rather than at the timeout. Registration and `signal` take turns
 * per key, so none is expected; this is a cheap guard that a signal never
 * waits for a timeout it need not.
 */
export async function afterWaitRegistered(core: RuntimeCore, correlationKey: string, jobId: string): Promise<void> {
  const buffered = await core.queue.kvGet(signalBufferKey(core.queueName, correlationKey));
  if (buffered !== null) await core.queue.wakeScheduled(core.queueName, jobId);
}

/**
 * `WorkflowRuntime.signal`: wake the registered waiter with the payload, or
 * else buffer it durably for the next waiter.
 */
export async function sendSignal(core: RuntimeCore, correlationKey: string, payload: Uint8Array, mark?: AppliedMark<SignalOutcome>): Promise<SignalOutcome> {
  checkCorrelationKey(correlationKey);
  // Checked up front, so the answer does not depend on whether a run waits (a delivered payload is never buffered).
  checkSignalPayload(correlationKey, payload);
  // Taken now: the send waits for the key's lock and reads the wait index before it writes the payload.
  const bytes = bytesAtCall(`the payload of signal ${excerpt(correlationKey)}`, payload);
  const span = startSpan("taquba.signal.send", { "taquba.queue": core.queueName }, undefined, "producer");
  try {
    const outcome = await core.signalLock.run(correlationKey, () => deliverOrBuffer(core, correlationKey, bytes, mark));
    instruments()?.signals.add(1, { "taquba.queue": core.queueName, "taquba.outcome": outcome });
    endOk(span, { "taquba.outcome": outcome });
    return outcome;
  } catch (e) {
    endWithError(span, e, "signal");
    throw e;
  }
}

/**
 * Wakes first, buffers only when no waiter took the payload: a woken waiter
 * holds the payload durably on its job, so nothing is left in the buffer
 * that a crash could hand to a second waiter. Once this resolves the signal
 * is durable either way. Runs under the key's lock, which registrations and
 * late consumptions also take (and a queue has one writer process), so no
 * registration commits between the read of the wait index and the buffer
 * write.
 */
async function deliverOrBuffer(
  core: RuntimeCore,
  correlationKey: string,
  payload: Uint8Array,
  mark: AppliedMark<SignalOutcome> | undefined,
): Promise<SignalOutcome> {
  const waitKey = signalWaitKey(core.queueName, correlationKey);
  const waitBytes = await core.queue.kvGet(waitKey);
  if (waitBytes !== null && (await wakeWaiter(core, waitKey, waitBytes, payload, mark))) return "delivered";
  const bufKey = signalBufferKey(core.queueName, correlationKey);
  if (mark === undefined) await core.queue.kvPut(bufKey, payload);
  else await core.queue.kvCompareAndApply([], markEffects(mark, "buffered", new SettlementEffects().kvPut(bufKey, payload)));
  return "buffered";
}

/**
 * Wakes the waiter `waitBytes` names with `payload` and releases its index
 * entry; `false` when it is no longer waiting (timed out, cancelled, being
 * claimed), dropping the entry when its job is finished.
 */
async function wakeWaiter(
  core: RuntimeCore,
  waitKey: string,
  waitBytes: Uint8Array,
  payload: Uint8Array,
  mark: AppliedMark<SignalOutcome> | undefined,
): Promise<boolean> {
  const w = decodeSignalWait(waitBytes, waitKey);
  if (await core.queue.wakeScheduled(core.queueName, w.jobId, payload, mark === undefined ? undefined : markEffects(mark, "delivered"))) {
    await core.queue.kvCompareAndDelete(waitKey, waitBytes);
    return true;
  }
  const info = await core.queue.view().job(w.jobId);
  if (info === null || info.state === "done" || info.state === "dead") await core.queue.kvCompareAndDelete(waitKey, waitBytes);
  return false;
}

/** `WorkflowRuntime.clearSignal`: discards the buffered signal of `correlationKey`. */
export async function clearBufferedSignal(core: RuntimeCore, correlationKey: string, mark?: AppliedMark<boolean>): Promise<boolean> {
  checkCorrelationKey(correlationKey);
  const bufKey = signalBufferKey(core.queueName, correlationKey);
  const cur = await core.queue.kvGet(bufKey);
  if (cur === null) return false;
  if (mark === undefined) return core.queue.kvCompareAndDelete(bufKey, cur);
  return core.queue.kvCompareAndApply([{ key: bufKey, value: cur }], markEffects(mark, true, new SettlementEffects().kvDelete(bufKey)));
}
