/**
 * @module The telemetry of one claimed job of the step queue, kept out of
 * the worker loop: its span (`taquba.step`, renamed by the typed
 * dispatcher, or `taquba.terminal_hook` for a run's notification), made
 * the active span while the job is processed so the settlement span and
 * the user's own spans are its children; the step duration, submit-to-first
 * step and step transition latencies; and the attempt counted as completed
 * when nothing logged it as failed.
 */
import type { ClaimedJob } from "../../queue/types.js";
import { type Instruments, instruments, recordSince, stepClaimed } from "../../telemetry/metrics.js";
import { endOk, forgetStepSpan, registerStepSpan, startSpan, tracing, withActiveSpan } from "../../telemetry/tracing.js";
import { HEADER_NOOP, HEADER_RUN_ID, HEADER_STEP, HEADER_TERMINAL, HEADER_TRACEPARENT } from "../records/reserved.js";
import type { RuntimeCore } from "../runtime-core.js";
import { attemptFailed } from "./step-log.js";
import { ownHeader } from "../../option-values.js";

/** What the worker holds for a job while telemetry is on. */
export interface AttemptTelemetry {
  /** Runs the job's processing with its span active. */
  run<T>(fn: () => Promise<T>): Promise<T>;
  /** Records the attempt and ends its span (OK unless already ended as failed). */
  end(): void;
}

/** The telemetry of `job`'s attempt; undefined when neither tracing nor metrics is on (the no-cost path). */
export function startAttemptTelemetry(core: RuntimeCore, job: ClaimedJob): AttemptTelemetry | undefined {
  const m = instruments();
  // `tracing()` first: without a tracer the span's attributes would be built for nothing on every step.
  const span = !tracing() || ownHeader(job.headers, HEADER_NOOP) !== undefined ? undefined : startJobSpan(core, job);
  if (m === undefined && span === undefined) return undefined;
  return attemptTelemetry(core, job, m, span);
}

/**
 * `startAttemptTelemetry`'s handle when metrics or tracing is on. Its closures are made here: in
 * `startAttemptTelemetry`, called for every step, they put the variables they name in a context
 * allocated on every call, the no-cost path's included.
 */
function attemptTelemetry(core: RuntimeCore, job: ClaimedJob, m: Instruments | undefined, span: ReturnType<typeof startJobSpan> | undefined): AttemptTelemetry {
  const terminal = ownHeader(job.headers, HEADER_TERMINAL) !== undefined;
  const startedAt = performance.now();
  if (m !== undefined && !terminal && ownHeader(job.headers, HEADER_NOOP) === undefined) noteClaim(m, core, job);
  return {
    run: (fn) => withActiveSpan(span, fn),
    end() {
      if (m !== undefined && !terminal && ownHeader(job.headers, HEADER_NOOP) === undefined) {
        m.stepDuration.record((performance.now() - startedAt) / 1000, { "taquba.queue": core.queueName });
        if (!attemptFailed(job)) m.stepAttempts.add(1, { "taquba.queue": core.queueName, "taquba.outcome": "completed" });
      }
      if (span !== undefined) {
        forgetStepSpan(job.id, job.attempt);
        if (span.isRecording()) endOk(span, { "taquba.outcome": "completed" });
      }
    },
  };
}

/** The span of one step attempt or notification, registered so the dispatcher and the failure log can reach it. */
function startJobSpan(core: RuntimeCore, job: ClaimedJob) {
  const terminal = ownHeader(job.headers, HEADER_TERMINAL) !== undefined;
  const attributes = {
    "taquba.run.id": ownHeader(job.headers, HEADER_RUN_ID) ?? "",
    "taquba.attempt": job.attempt,
    "taquba.queue": core.queueName,
    "taquba.job.id": job.id,
    ...(terminal ? {} : { "taquba.step": Number(ownHeader(job.headers, HEADER_STEP)) }),
  };
  const span = startSpan(
    terminal ? "taquba.terminal_hook" : "taquba.step",
    attributes,
    ownHeader(job.headers, HEADER_TRACEPARENT) ?? "",
    terminal ? "internal" : "consumer",
  );
  registerStepSpan(job.id, job.attempt, span);
  return span;
}

/** Submit-to-first-step latency (step 0's first claim, on the queue clock) and step transition latency (measured in this process). */
function noteClaim(m: Instruments, core: RuntimeCore, job: ClaimedJob): void {
  const attrs = { "taquba.queue": core.queueName };
  if (ownHeader(job.headers, HEADER_STEP) === "0" && job.attempt === 1) m.runStartDelay.record(Math.max(0, job.claimedAt - job.enqueuedAt) / 1000, attrs);
  const enqueuedAt = stepClaimed(job.id);
  if (enqueuedAt !== undefined) recordSince(m.stepTransition, enqueuedAt, attrs);
}
