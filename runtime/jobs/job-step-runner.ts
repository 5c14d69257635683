/**
 * @module The step runner of job runs: one step that runs the registered
 * handler of the job named in the payload. A `WorkflowDispatcher` holds one
 * and hands it every job step, so jobs and typed workflows share a runtime;
 * the `JobRunner` made over that runtime binds itself here for child
 * submissions, `ctx.jobs` of workflow steps and result retention.
 *
 * Both the output and a typed error are validated, then staged as the job
 * result record on the delivery's effects, which the workflow commits with
 * the step's terminating settlement: the record exists exactly when the
 * job's termination committed. Handler errors: a `JobFailure` (`ctx.fail`)
 * ends the job as failed with its typed error and is never retried; a
 * `StepError` keeps its kind; any other error is permanent when it is a
 * `TaqubaError` that is not `retryable` (`PermanentError`, `ValidationError`),
 * else transient (retried up to the attempt limit): `StepError.kindOf`.
 */
import type { TimedClock } from "../clock.js";
import { ValidationError } from "../errors.js";
import { MAX_KV_VALUE_SIZE } from "../queue/names.js";
import type { Step, StepRunner } from "../workflow/steps/delivery.js";
import { StepOutcome } from "../workflow/steps/step-outcome.js";
import { runIncarnationOf } from "../workflow/children/child-runs.js";
import { StepError } from "../workflow/workflow-errors.js";
import { utf8 } from "../workflow/records/codec.js";
import { canonicalJson } from "../contract/canonical-json.js";
import { decodeJobPayload, encodeJobResult, jobResultKey, type JobResultRecord } from "./job-codec.js";
import { makeJobContext, type JobHost, type StateKey, type SubmitJob } from "./job-context.js";
import { JobFailure, type JobDefinition, type JobHandler } from "../contract/job-definition.js";
import { JobsAlreadyAttachedError, JobsNotAttachedError } from "./job-errors.js";
import { addResultMarker } from "./result-retention.js";
import { formatIssue, type ValidationIssue } from "../contract/validator.js";

/** A registered job: its definition and handler, with types erased for the registry. */
export interface Registration {
  readonly definition: JobDefinition<string, unknown, unknown, unknown, never>;
  readonly handler: JobHandler<unknown, unknown, unknown, never>;
}

function invalidValueError(what: string, issues: readonly ValidationIssue[]): StepError {
  return StepError.permanent(new ValidationError(`${what} is invalid; fix the handler or the submitter`, issues.map(formatIssue)));
}

/** Result retention as the step runner applies it. */
export interface StagedRetention {
  readonly ms: number;
  readonly clock: TimedClock;
}

/** Stages the result record of step queue `q` (and its retention marker); an oversized record fails the job permanently instead of being dropped. */
function stageResultRecord(step: Step, q: string, record: JobResultRecord, retention: StagedRetention | undefined): void {
  const bytes = encodeJobResult(record);
  if (bytes.byteLength > MAX_KV_VALUE_SIZE) {
    throw StepError.permanent(
      new ValidationError(
        `the job's ${record.status === "succeeded" ? "output" : "error"} takes ${bytes.byteLength} bytes, more than the ${MAX_KV_VALUE_SIZE} a result record holds; return a reference (an object key) instead`,
      ),
    );
  }
  step.effects.put(jobResultKey(q, step.runId), bytes);
  if (retention !== undefined) addResultMarker(step.effects, q, step.runId, record.incarnation, retention.clock.now() + retention.ms);
}

/**
 * What a job handler reaches beyond its registry, bound once a `JobRunner`
 * exists over the runtime: `submit` for child jobs, result retention, and
 * the runtime's step queue, which scopes the job records.
 */
export interface JobBinding {
  readonly jobs: JobHost;
  readonly retention: StagedRetention | undefined;
  /** The step queue of the runtime the runner is over (its `queueName`). */
  readonly queueName: string;
}

/** The jobs of a dispatcher no `JobRunner` was attached to: every use says so. */
export const unboundJobs: JobHost = {
  submit: () => Promise.reject(new JobsNotAttachedError()),
  handle: () => {
    throw new JobsNotAttachedError();
  },
};

/**
 * @internal Runs job steps: the `StepRunner` of a job-only runtime, and the
 * job half of a `WorkflowDispatcher` that hosts jobs beside workflows.
 */
export class JobStepRunner implements StepRunner {
  #binding: JobBinding | undefined;

  constructor(
    private readonly registry: ReadonlyMap<string, Registration>,
    private readonly state: ReadonlyMap<StateKey<unknown>, unknown>,
  ) {}

  /** How many jobs are registered. */
  get size(): number {
    return this.registry.size;
  }

  /** The registered job names, sorted. */
  get names(): readonly string[] {
    return [...this.registry.keys()].sort();
  }

  /** The binding child submissions and result retention go through; set once, by the runner. */
  get binding(): JobBinding | undefined {
    return this.#binding;
  }

  /** The job host steps reach: the attached runner, else one that says none is attached. */
  get jobs(): JobHost {
    return this.#binding?.jobs ?? unboundJobs;
  }

  /** `ctx.submit` of a job handler, bound to whatever host is attached when the job runs. */
  get #jobs(): SubmitJob {
    const jobs = this.jobs;
    return (definition, input, options) => jobs.submit(definition, input, options);
  }

  /** Attaches the runner; a second, different runner throws `JobsAlreadyAttachedError`. */
  bind(binding: JobBinding): void {
    if (this.#binding !== undefined && this.#binding !== binding) throw new JobsAlreadyAttachedError();
    this.#binding = binding;
  }

  async runStep(step: Step): Promise<StepOutcome> {
    let env: { job: string; input: unknown };
    try {
      env = decodeJobPayload(step.payload);
    } catch (e) {
      throw StepError.permanent(e);
    }
    return this.runJob(step, env);
  }

  /** Runs the job step `env` (its payload, decoded). */
  async runJob(step: Step, env: { job: string; input: unknown }): Promise<StepOutcome> {
    const reg = this.registry.get(env.job);
    if (reg === undefined) throw StepError.permanent(new Error(`no handler is registered for job "${env.job}" on this runtime; register it before build()`));
    const def = reg.definition;
    const inputIssues = def.input.validate(env.input);
    if (inputIssues.length > 0) throw invalidValueError(`${def.input.name}`, inputIssues);
    // The result record is scoped by the runtime's step queue, which only an attached runner names. Until
    // one is attached (a worker started before `JobRunner.over`), retry rather than store it unscoped.
    const binding = this.#binding;
    if (binding === undefined) throw StepError.transient(new JobsNotAttachedError());
    const q = binding.queueName;
    // Ties the record to this pass of the run, as its terminal record names it (see `RunRecord.incarnation`);
    // a detached step has no run record, and its job id stands in.
    const incarnation = runIncarnationOf(step) ?? step.jobId;
    const retention = binding.retention;
    let output: unknown;
    try {
      output = await reg.handler.run(env.input, makeJobContext(step, this.state, this.#jobs) as never);
    } catch (e) {
      if (e instanceof JobFailure) {
        const errValidator = def.error;
        if (errValidator === undefined) {
          throw StepError.permanent(
            new ValidationError(`job "${def.name}" declares no error type, so it cannot fail with a typed error; declare one or throw instead`),
          );
        }
        const issues = errValidator.validate(e.error);
        if (issues.length > 0) throw invalidValueError(errValidator.name, issues);
        const error = canonicalJson(e.error);
        stageResultRecord(step, q, { incarnation, status: "failed", error, message: e.message }, retention);
        return StepOutcome.fail(error);
      }
      throw StepError.from(e);
    }
    const outIssues = def.output.validate(output);
    if (outIssues.length > 0) throw invalidValueError(def.output.name, outIssues);
    const json = canonicalJson(output);
    stageResultRecord(step, q, { incarnation, status: "succeeded", output: json }, retention);
    return StepOutcome.succeed(utf8(json));
  }
}
