/**
 * @module The terminal hook, run as the worker of a run's notification job.
 */
import type { ClaimedJob } from "../../queue/types.js";
import { TerminalEffects } from "../steps/effects-handle.js";
import { decodeRunOutcome } from "../records/records.js";
import type { RuntimeCore } from "../runtime-core.js";
import { errorText, StepError } from "../workflow-errors.js";
import type { WorkerSlot } from "../steps/settlement-slots.js";
import { thrownCause } from "../steps/step-log.js";
import { endWithError, stepSpanOf } from "../../telemetry/tracing.js";

/**
 * Calls the hook and settles the notification: its staged effects commit
 * with the ack; a transient error retries per the queue's backoff up to the
 * terminal step's attempt limit; a permanent one dead-letters.
 */
export async function processNotification(core: RuntimeCore, job: ClaimedJob, slot: WorkerSlot): Promise<void> {
  let outcome;
  try {
    outcome = decodeRunOutcome(job.payload, `job ${job.id}`);
  } catch (e) {
    await slot.freeAfterSubmitting(core.queue.deadLetter(job, `unreadable notification payload: ${errorText(e)}`));
    return;
  }
  const effects = new TerminalEffects();
  stepSpanOf(job.id, job.attempt)?.setAttribute("taquba.run.status", outcome.status);
  try {
    await core.hook.onTermination(outcome, effects);
  } catch (error) {
    effects.seal();
    const kind = StepError.kindOf(error);
    const retry = kind !== "permanent" && !job.isLastAttempt();
    endWithError(stepSpanOf(job.id, job.attempt), thrownCause(error), kind, { "taquba.outcome": retry ? "retried" : "dead_lettered" });
    if (kind === "permanent") await slot.freeAfterSubmitting(core.queue.deadLetter(job, errorText(error)));
    else await slot.freeAfterSubmitting(core.queue.nack(job, errorText(error)));
    return;
  }
  effects.seal();
  await slot.freeAfterSubmitting(core.queue.ack(job, effects.toSettlementEffects()));
}
