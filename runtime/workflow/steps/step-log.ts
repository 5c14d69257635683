/**
 * @module The log records of a failed step attempt: a retry at warn, a
 * dead letter or a failure that ends the run at error. Each carries the
 * error's name, message and stack and the run's headers with the
 * sensitive ones redacted; never the step's payload.
 */
import { errorFields, redactHeaders } from "../../logger.js";
import type { ClaimedJob } from "../../queue/types.js";
import type { RuntimeCore } from "../runtime-core.js";
import { userHeadersOf } from "../runs/submit.js";
import { StepError } from "../workflow-errors.js";
import { HEADER_TRACEPARENT } from "../records/reserved.js";
import { endWithError, stepSpanOf } from "../../telemetry/tracing.js";
import { instruments } from "../../telemetry/metrics.js";
import { ownHeader } from "../../option-values.js";

// The attempts logFailedAttempt saw, so the worker counts the others as completed.
const failedAttempts = new WeakSet<ClaimedJob>();

/** Whether `job`'s attempt failed (was logged by {@link logFailedAttempt}). */
export function attemptFailed(job: ClaimedJob): boolean {
  return failedAttempts.has(job);
}

/** Counts a run that ended, by status. */
export function noteRunEnded(core: RuntimeCore, status: string): void {
  instruments()?.runsTerminated.add(1, { "taquba.queue": core.queueName, "taquba.outcome": status });
}

/** The reserved trace header a step passes on to the next step of its run. */
export function traceHeaderOf(job: ClaimedJob): Record<string, string> {
  const t = ownHeader(job.headers, HEADER_TRACEPARENT);
  return t === undefined ? {} : { [HEADER_TRACEPARENT]: t };
}

/** The error a step threw, unwrapped from a `StepError` that only classifies it. */
export function thrownCause(error: unknown): unknown {
  return error instanceof StepError && error.cause !== undefined ? error.cause : error;
}

/** How a failed attempt was settled. */
export type FailedAttemptOutcome = "retried" | "dead_lettered" | "failed";

export function logFailedAttempt(core: RuntimeCore, job: ClaimedJob, runId: string, step: number, error: unknown, outcome: FailedAttemptOutcome): void {
  const obj = {
    err: errorFields(thrownCause(error)),
    runId,
    step,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    jobId: job.id,
    queue: core.queueName,
    outcome,
    headers: redactHeaders(userHeadersOf(job.headers), core.sensitiveHeaders),
  };
  endWithError(stepSpanOf(job.id, job.attempt), thrownCause(error), StepError.kindOf(error), { "taquba.outcome": outcome });
  failedAttempts.add(job);
  const m = instruments();
  if (m !== undefined) {
    m.stepAttempts.add(1, { "taquba.queue": core.queueName, "taquba.outcome": outcome });
    if (outcome === "retried") m.stepRetries.add(1, { "taquba.queue": core.queueName });
  }
  if (outcome === "retried") core.log.warn(obj, `workflow run ${runId} step ${step} attempt ${job.attempt} of ${job.maxAttempts} failed; retrying`);
  else if (outcome === "dead_lettered")
    core.log.error(obj, `workflow run ${runId} step ${step} failed permanently; the step is dead-lettered and the run fails`);
  else core.log.error(obj, `workflow run ${runId} step ${step} failed on its last attempt; the run fails`);
}
