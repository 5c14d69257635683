/**
 * @module Errors of typed jobs as callers see them.
 */
import { TaqubaError } from "../errors.js";
import type { RunErrorKind } from "../workflow/runs/run-types.js";

/**
 * A job ended without an output: `JobHandle.output()` rejects with it.
 * `error` is the typed error when the handler failed through `ctx.fail`;
 * `kind` says why (`runner` for a typed error, `transient` when attempts
 * ran out, `permanent`, `dead_lettered`).
 */
export class JobFailedError<Err = unknown> extends TaqubaError {
  constructor(
    readonly jobId: string,
    readonly error: Err | undefined,
    readonly kind: RunErrorKind | undefined,
    readonly detail: string,
  ) {
    super("JOB_FAILED", `job ${jobId} failed (${kind ?? "unknown"}): ${detail}; inspect .error for the typed error, if any`);
  }
}

/** A job was cancelled before it produced an output (`supersededBy`: replaced by a later submission of a debounced job). */
export class JobCancelledError extends TaqubaError {
  constructor(
    readonly jobId: string,
    readonly supersededBy?: string,
  ) {
    super(
      "JOB_CANCELLED",
      supersededBy === undefined
        ? `job ${jobId} was cancelled before it produced an output`
        : `job ${jobId} was superseded by job ${supersededBy} (a later submission with the same debounce key) before it started; await that job's output instead`,
    );
  }
}

/** The runner has no record of a job id: never submitted here, or forgotten. */
export class JobNotFoundError extends TaqubaError {
  constructor(readonly jobId: string) {
    super("JOB_NOT_FOUND", `no record of job "${jobId}" in this runner's queue: it was never submitted there, or its records were removed`);
  }
}

/**
 * A job or workflow step asked to submit jobs through a `WorkflowDispatcher`
 * that no `JobRunner` was attached to.
 */
export class JobsNotAttachedError extends TaqubaError {
  constructor() {
    super(
      "JOBS_NOT_ATTACHED",
      "this dispatcher has no JobRunner attached, so its steps cannot submit jobs; build the runtime with JobRunner.builder(...), or call JobRunner.over(queue, runtime, dispatcher) before the worker starts",
    );
  }
}

/** A dispatcher already serves one `JobRunner`: its job steps submit children through that runner only. */
export class JobsAlreadyAttachedError extends TaqubaError {
  constructor() {
    super("JOBS_ALREADY_ATTACHED", "this dispatcher already has a JobRunner attached; make one JobRunner per runtime and share it");
  }
}
