/**
 * @module `JobGroup`: a run group of jobs of one definition.
 *
 * Members are keyed by the job's idempotency key (the definition's
 * template) or, without one, positionally as `item-{i}` within the call, so
 * submitting the same list again is idempotent. Everything durable is the
 * run group's: the manifest, the member records, plus each member's job
 * result record, which forgetting the group (or its retention) removes too.
 */
import { ValidationError } from "../errors.js";
import type { GroupStatus, GroupSubmitOutcome, RunGroup } from "../workflow/groups/run-group.js";
import type { RunErrorKind } from "../workflow/runs/run-types.js";
import type { HeaderValues, JobDefinition, JobOutcome, JobSubmitOptions } from "../contract/job-definition.js";
import { RunnerJobHandle, type JobReader } from "./job-handle.js";
import { prepareGroupSubmission, type AnyDefinition } from "./job-submission.js";

/** One job's end, as `JobGroup.results` and `JobGroup.join` report it. */
export interface JobMemberResult<Output, Err> {
  readonly key: string;
  readonly jobId: string;
  readonly outcome: JobOutcome<Output, Err>;
  /** Why a failed or cancelled job ended (`runner` for a typed error). */
  readonly kind?: RunErrorKind;
}

/** Submission options of a group: one set for every job (keys come from the inputs or positions). */
export type JobGroupSubmitOptions<Headers extends HeaderValues> = Omit<JobSubmitOptions<Headers>, "idempotencyKey" | "notifySignal">;

/**
 * A durable set of jobs of one definition, named by `JobRunner.group(id, definition)`
 * (or `JobRunner.group(id)`, untyped, to follow up on an existing group).
 *
 * @example
 * const group = runner.group("thumbnails-2026-11", imageScanJob);
 * await group.submit(images.map((object_key) => ({ object_key })));
 * for (const r of await group.join()) if (r.outcome.status !== "succeeded") console.warn(r.key, r.outcome);
 */
export class JobGroup<Input, Output, Err, Headers extends HeaderValues> {
  readonly #group: RunGroup;
  readonly #def: JobDefinition<string, Input, Output, Err, Headers> | undefined;
  readonly #reader: JobReader;

  /** @internal Use `JobRunner.group`. */
  constructor(group: RunGroup, definition: JobDefinition<string, Input, Output, Err, Headers> | undefined, reader: JobReader) {
    this.#group = group;
    this.#def = definition;
    this.#reader = reader;
  }

  /** The group id. */
  get id(): string {
    return this.#group.id;
  }

  /** The member key of item `index` of a submission with `input`. */
  keyOf(input: Input, index: number): string {
    return this.#definition().idempotencyKey?.(input) ?? `item-${index}`;
  }

  #definition(): JobDefinition<string, Input, Output, Err, Headers> {
    if (this.#def === undefined) {
      throw new ValidationError(`job group "${this.id}" was named without a job definition; name it with runner.group(id, definition) to submit jobs to it`);
    }
    return this.#def;
  }

  /**
   * Validates every input and the options (nothing is written when one is
   * invalid), then submits the jobs as the group's members. Idempotent like
   * `RunGroup.submit`: a job that succeeded or is active is left alone, one
   * that failed or was cancelled runs again.
   */
  async submit(inputs: readonly Input[], options?: JobGroupSubmitOptions<Headers>): Promise<GroupSubmitOutcome> {
    const def = this.#definition() as unknown as AnyDefinition;
    const { members, runOptions } = prepareGroupSubmission(def, inputs, options as JobSubmitOptions<HeaderValues> | undefined, (input, i) =>
      this.keyOf(input as Input, i),
    );
    return this.#group.submit(members, runOptions);
  }

  async #result(key: string, runId: string): Promise<JobMemberResult<Output, Err>> {
    const r = await this.#reader.outcome<Output, Err>(runId);
    if (r === "active" || r === "unknown") {
      // The member record said terminated but the run's records are gone (forgotten meanwhile).
      return { key, jobId: runId, outcome: { status: "failed", error: undefined, message: "the job's records were removed" } };
    }
    return { key, jobId: runId, outcome: r.outcome, ...(r.kind === undefined ? {} : { kind: r.kind }) };
  }

  /** Yields each job's result as it ends (those ended before the call first), across restarts. */
  async *results(): AsyncGenerator<JobMemberResult<Output, Err>, void, undefined> {
    for await (const m of this.#group.results()) yield await this.#result(m.key, m.runId);
  }

  /** Waits for every job and returns the results in submission order. */
  async join(): Promise<Array<JobMemberResult<Output, Err>>> {
    const keys = await this.#group.keys();
    const byKey = new Map<string, JobMemberResult<Output, Err>>();
    for await (const r of this.results()) byKey.set(r.key, r);
    return keys.flatMap((k) => {
      const r = byKey.get(k);
      return r === undefined ? [] : [r];
    });
  }

  /** A handle on the member job `key`. */
  handle(key: string): RunnerJobHandle<Output, Err> {
    return new RunnerJobHandle<Output, Err>(this.#reader, this.#group.runIdOf(key), false);
  }

  /** Runs again, from the manifest alone, every job that did not succeed and is not active. */
  resume(): Promise<GroupSubmitOutcome> {
    return this.#group.resume();
  }

  /** Counts the jobs by state; null for a group with no manifest. */
  status(): Promise<GroupStatus | null> {
    return this.#group.status();
  }

  /** Requests cancellation of every active job; returns how many requests were recorded. */
  cancel(): Promise<number> {
    return this.#group.cancel();
  }

  /** Removes the group with its jobs' records and results; throws `GroupActiveError` while jobs are active. */
  forget(): Promise<boolean> {
    return this.#group.forget();
  }
}
