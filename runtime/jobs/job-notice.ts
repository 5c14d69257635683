/**
 * @module Job completion signals: a job submitted with `notifySignal` sends
 * its outcome as a signal when it ends, so a workflow step can wait for a
 * job the way it waits for any signal (`continueOnSignal`, with a timeout)
 * instead of holding a worker slot in a blocking join.
 *
 * The key travels as the job run's header {@link JOB_NOTIFY_HEADER}. The
 * runner's terminal hook observes exactly the terminations that carry it,
 * so the runtime commits a notification job in the same settlement as the
 * termination (success, typed failure, exhausted attempts, dead letter,
 * cancellation alike); the worker then reads the job's outcome and sends
 * the signal. A crash between the send and the notification's
 * acknowledgement sends it again: the duplicate finds no waiter and is
 * buffered under the key, which is why the key should be unique to the
 * waiting run and job.
 */
import { ValidationError } from "../errors.js";
import { isWellFormed } from "../queue/names.js";
import { utf8 } from "../workflow/records/codec.js";
import type { RunErrorKind, RunOutcome } from "../workflow/runs/run-types.js";
import type { TerminalEffects } from "../workflow/steps/effects-handle.js";
import type { TerminalHook } from "../workflow/terminal-hook/terminal-hook.js";
import { hookObserves } from "../workflow/terminal-hook/terminal-hook.js";
import { canonicalJson } from "../contract/canonical-json.js";
import type { ResolvedOutcome } from "./job-results.js";
import { describeValue, ownHeader } from "../option-values.js";

/** The job run header carrying the completion signal's correlation key. */
export const JOB_NOTIFY_HEADER = "jobs.notify_signal";

/**
 * The payload of a job completion signal (UTF-8 canonical JSON): the job id
 * and its `JobOutcome`, plus why a failed or cancelled job ended.
 */
export type JobNotice<Output = unknown, Err = unknown> =
  | { readonly job_id: string; readonly status: "succeeded"; readonly output: Output }
  | { readonly job_id: string; readonly status: "failed"; readonly error?: Err; readonly message: string; readonly kind?: RunErrorKind }
  | { readonly job_id: string; readonly status: "cancelled"; readonly kind?: RunErrorKind };

/** @internal Runners whose runtime carries the notice hook (built by `JobRunner.builder`). */
export const noticeRunners = new WeakSet<object>();

/** @internal Checks a `notifySignal` option; throws `ValidationError`. */
export function checkNotifyKey(key: unknown): string {
  if (typeof key !== "string" || key.length === 0 || !isWellFormed(key) || utf8(key).byteLength > 512) {
    throw new ValidationError(`notifySignal must be a correlation key of 1 to 512 bytes of well-formed text, got ${describeValue(key)}`);
  }
  return key;
}

/** @internal The notice of a job that ended with `r`. */
export function jobNotice(jobId: string, r: ResolvedOutcome<unknown, unknown>): JobNotice {
  const o = r.outcome;
  const kind = r.kind === undefined ? {} : { kind: r.kind };
  if (o.status === "succeeded") return { job_id: jobId, status: "succeeded", output: o.output };
  if (o.status === "cancelled") return { job_id: jobId, status: "cancelled", ...kind };
  return { job_id: jobId, status: "failed", ...(o.error === undefined ? {} : { error: o.error }), message: o.message, ...kind };
}

/** @internal Encodes a notice as a signal payload. */
export function encodeJobNotice(notice: JobNotice): Uint8Array {
  return utf8(canonicalJson(notice));
}

/**
 * @internal The terminal hook of a runtime built by `JobRunner.builder`:
 * `inner` (the user's hook) plus completion signals for jobs that asked for
 * one. `send` is bound once the runner exists.
 */
export function withJobNotices(inner: TerminalHook, send: () => ((runId: string, key: string) => Promise<void>) | undefined): TerminalHook {
  const keyOf = (o: RunOutcome): string | undefined => ownHeader(o.headers, JOB_NOTIFY_HEADER);
  return {
    observes: (o) => keyOf(o) !== undefined || hookObserves(inner, o),
    async onTermination(o: RunOutcome, effects: TerminalEffects): Promise<void> {
      const key = keyOf(o);
      if (key !== undefined) {
        const deliver = send();
        // Thrown errors retry the notification with the queue's backoff.
        if (deliver === undefined) throw new Error("the job runner of this runtime is not built yet; the completion signal is retried");
        await deliver(o.runId, key);
      }
      if (hookObserves(inner, o)) await inner.onTermination(o, effects);
    },
  };
}
