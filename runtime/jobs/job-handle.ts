/**
 * @module `RunnerJobHandle`: a submitted job, to await or look up, also
 * after a restart (`JobRunner.handle(definition, jobId)`).
 */
import type { RunStatus } from "../workflow/runs/run-types.js";
import type { JobHandle, JobOutcome } from "../contract/job-definition.js";
import { JobCancelledError, JobFailedError, JobNotFoundError } from "./job-errors.js";
import type { ResolvedOutcome } from "./job-results.js";
import type { JobWait } from "./job-waits.js";

/** @internal What a handle reads through. */
export interface JobReader {
  outcome<Output, Err>(jobId: string): Promise<ResolvedOutcome<Output, Err> | "active" | "unknown">;
  /** Registers a wait on the job's termination announcement; register before reading so none is missed. */
  register(jobId: string): JobWait;
  status(jobId: string): Promise<RunStatus | null>;
  cancel(jobId: string): Promise<boolean>;
}

/** A submitted job. `result()` and `fetchResult()` report its `JobOutcome`; `output()` resolves with the output or rejects. */
export class RunnerJobHandle<Output, Err> implements JobHandle<Output, Err> {
  readonly #reader: JobReader;
  /** The job's id: the run id of its single-step run. */
  readonly jobId: string;
  readonly newlySubmitted: boolean;

  /** @internal */
  constructor(reader: JobReader, jobId: string, newlySubmitted: boolean) {
    this.#reader = reader;
    this.jobId = jobId;
    this.newlySubmitted = newlySubmitted;
  }

  async #resolved(): Promise<ResolvedOutcome<Output, Err>> {
    for (;;) {
      const wait = this.#reader.register(this.jobId);
      try {
        const r = await this.#reader.outcome<Output, Err>(this.jobId);
        if (r === "unknown") throw new JobNotFoundError(this.jobId);
        if (r !== "active") return r;
        if (wait.closedError !== undefined) throw wait.closedError;
        await wait.promise;
        if (wait.closedError !== undefined) throw wait.closedError;
      } finally {
        wait.dispose();
      }
    }
  }

  /**
   * Waits for the job to end and reports how it ended. Throws
   * `JobNotFoundError` for a job with no record, and `ClosedError` (its
   * `cause` says why) when the queue closes or its engine fails first.
   */
  async result(): Promise<JobOutcome<Output, Err>> {
    return (await this.#resolved()).outcome;
  }

  /** The outcome if the job has ended, else null; never waits. Throws `JobNotFoundError` for a job with no record. */
  async fetchResult(): Promise<JobOutcome<Output, Err> | null> {
    const r = await this.#reader.outcome<Output, Err>(this.jobId);
    if (r === "unknown") throw new JobNotFoundError(this.jobId);
    return r === "active" ? null : r.outcome;
  }

  /**
   * Waits for the job's typed output. Rejects with `JobFailedError` (its
   * `error` is the typed error of a `ctx.fail`, its `kind` why the job
   * failed) or `JobCancelledError`.
   */
  async output(): Promise<Output> {
    const { outcome, kind } = await this.#resolved();
    if (outcome.status === "succeeded") return outcome.output;
    if (outcome.status === "cancelled") throw new JobCancelledError(this.jobId, outcome.supersededBy);
    throw new JobFailedError<Err>(this.jobId, outcome.error, kind, outcome.message);
  }

  /** The job run's status (pending, running, cancelling, terminated), or null. */
  status(): Promise<RunStatus | null> {
    return this.#reader.status(this.jobId);
  }

  /** Requests cancellation; false when the job already ended. */
  cancel(): Promise<boolean> {
    return this.#reader.cancel(this.jobId);
  }
}
