/**
 * @module `JobRunner`: typed async functions run as single-step workflow
 * runs, with awaitable, durable results, on a runtime that may host typed
 * workflows too.
 *
 * One runtime, one step queue, one worker: a `WorkflowDispatcher` is the
 * runtime's only `StepRunner` and runs both job steps and workflow steps
 * (their payloads say which). The runner is the job half over that runtime:
 * submission, handles, groups, result retention, and the binding through
 * which job handlers submit child jobs and workflow steps reach `ctx.jobs`.
 * Build both at once with `JobRunner.builder(queue, store)`, or attach a
 * runner to a runtime built by hand with `JobRunner.over`.
 *
 * A job's id is its run id: a ULID, or, with an idempotency key, one derived
 * from the runner's queue, the job name and the key. The job result record
 * is committed with the run's terminating settlement (see
 * `job-step-runner.ts`), so `JobHandle.fetchResult` after a restart reads
 * exactly what the termination committed.
 */
import { ConstructionGate } from "../internal-construction.js";
import { timedClock, type Clock, type TimedClock } from "../clock.js";
import { ClosedError, ValidationError } from "../errors.js";
import { callerField, describeValue, hasMethods, isInstance, isOptionObject, optionFields, ownHeader, readExactOptions } from "../option-values.js";
import { SettlementEffects } from "../queue/effects.js";
import type { ObjectStore } from "../store/object-store.js";
import { runEventsFor } from "../workflow/runtime-core.js";
import type { RetryOutcome, RunEnd, RunOptions, RunOutcome, RunSpec, RunStatus, SignalOutcome, SubmitOutcome } from "../workflow/runs/run-types.js";
import type { RunPage } from "../workflow/runs/run-listing.js";
import type { ListJobRunsOptions } from "../jobs/job-listing.js";
import type { WorkflowHost } from "./workflow-client.js";
import type { WorkflowDispatcher } from "./workflow-dispatcher.js";
import { sha256Hex } from "../workflow/records/codec.js";
import type { WorkflowQueue } from "../workflow/queue-port.js";
import { KeyedLock } from "../workflow/runs/run-events.js";
import { RunId } from "../workflow/runs/run-id.js";
import { checkRoutesHere } from "../workflow/runs/shard-placement.js";
import { type FullLogger, fullLogger, type Logger, readLogger } from "../logger.js";
import { InputMismatchError } from "../workflow/workflow-errors.js";
import {
  closeTimeout,
  repeatEvery,
  spawnWorker,
  stopOn,
  WorkerSet,
  type CloseOptions,
  type RunnerHandle,
  type Shutdown,
} from "../workflow/worker-lifecycle.js";
import { WorkflowRuntime } from "../workflow/workflow-runtime.js";
import { decodeDedup, encodeDedup, jobDedupKey, jobResultKey, keyedJobRunId } from "../jobs/job-codec.js";
import type { JobHost } from "../jobs/job-context.js";
import type { HeaderValues, JobDefinition, JobSubmitOptions } from "../contract/job-definition.js";
import { JobGroup } from "../jobs/job-group.js";
import { RunnerJobHandle, type JobReader } from "../jobs/job-handle.js";
import { readJobOutcome } from "../jobs/job-results.js";
import { JobRunnerBuilder } from "./job-runner-builder.js";
import { JobWaits } from "../jobs/job-waits.js";
import { encodeJobNotice, JOB_NOTIFY_HEADER, jobNotice, noticeRunners } from "../jobs/job-notice.js";
import type { AppliedMark } from "../workflow/records/applied-mark.js";
import { sweepJobResults } from "../jobs/result-retention.js";
import { jobIdOfTermination } from "../workflow/runs/end-tokens.js";
import { listJobRuns, retryJobRun } from "../jobs/job-redrive.js";
import { checkDefinition, positiveInt, preparePayload, prepareRunOptions, withFlow, type AnyDefinition } from "../jobs/job-submission.js";

export { JobRunnerBuilder };

/** Options of {@link JobRunner.over}. */
export interface JobRunnerOptions {
  /** Period of the waits' shared fallback poll and of result retention sweeps. Default: 100. */
  readonly pollIntervalMs?: number;
  /**
   * Removes a job's result and dedup records this long after it ended (see
   * `JobRunnerBuilder.resultRetention`); give the runtime the same
   * `memoRetention`, which removes the terminal records. Default: kept.
   */
  readonly resultRetentionMs?: number;
  /** Default: the queue's clock. */
  readonly clock?: Clock;
  /** Pino-style logger (see docs/observability.md). Default: `console` at warn level. */
  readonly logger?: Logger;
}

const JOB_RUNNER_KEYS = optionFields<JobRunnerOptions>({ pollIntervalMs: true, resultRetentionMs: true, clock: true, logger: true });

/** A job submission validated and encoded by `preparePayload` and `prepareRunOptions`. */
export interface PreparedJob {
  readonly name: string;
  readonly payload: Uint8Array;
  readonly runOptions: RunOptions;
  readonly idempotencyKey?: string;
  /** The run id of a job without an idempotency key; a fresh ULID when absent. */
  readonly runId?: string;
}

/** An abort signal for a shutdown trigger (never aborted when there is none). */
/**
 * Runs typed jobs and returns their results to awaiting callers, on a
 * runtime whose dispatcher may run typed workflows too.
 *
 * Waiting handles wake on the runtime's in-process termination
 * announcements; one shared poll per runner (see `JobWaits`) is the
 * fallback for a termination no announcement reached.
 *
 * @example
 * const runner = JobRunner.builder(queue, store).register(emailSendJob, new EmailSend()).build();
 * const worker = runner.spawn();
 * const handle = await runner.submit(emailSendJob, { to: "a@b.co" });
 * const messageId = await handle.output();
 * await worker.shutdown();
 */
/** The arguments of `JobRunner.over`, checked before any is used: a wrong one is a `ValidationError` naming it. */
function checkOverArgs(queue: unknown, runtime: unknown, dispatcher: unknown): void {
  const problems: string[] = [];
  if (!hasMethods(queue, ["claimBatch", "ack", "kvGet"])) problems.push(`queue must be the runtime's Queue (from Queue.open), got ${describeValue(queue)}`);
  if (!isInstance(runtime, WorkflowRuntime)) problems.push(`runtime must be a WorkflowRuntime (from WorkflowRuntime.builder), got ${describeValue(runtime)}`);
  if (!hasMethods(dispatcher, ["attachJobs", "runStep"]))
    problems.push(`dispatcher must be the runtime's WorkflowDispatcher (from WorkflowDispatcher.builder().build()), got ${describeValue(dispatcher)}`);
  if (problems.length > 0) throw new ValidationError("JobRunner.over was given arguments it cannot use", problems);
}

/** `new JobRunner` is internal: use JobRunner.builder(queue, store) or JobRunner.over(queue, runtime, dispatcher) (see internal-construction.ts). */
const RUNNER_GATE = new ConstructionGate("JobRunner", "use JobRunner.builder(queue, store) or JobRunner.over(queue, runtime, dispatcher)");

export class JobRunner implements JobHost, WorkflowHost {
  readonly #queue: WorkflowQueue;
  readonly #runtime: WorkflowRuntime;
  readonly #lock = new KeyedLock();
  readonly #reader: JobReader;
  readonly #waits: JobWaits;
  readonly #resultRetentionMs: number | undefined;
  readonly #pollIntervalMs: number;
  readonly #clock: TimedClock;
  readonly #logger: FullLogger;
  readonly #workers = new WorkerSet();
  #closing: Promise<void> | undefined;

  /**
   * Starts configuring a runner over `queue`, with a runtime of its own
   * (memo entries and group manifests in `store`). Its builder registers
   * jobs and typed workflows alike.
   */
  static builder(queue: WorkflowQueue, store: ObjectStore): JobRunnerBuilder {
    return new JobRunnerBuilder(queue, store);
  }

  /**
   * A runner over a runtime built by hand whose `StepRunner` is
   * `dispatcher` (register jobs on the dispatcher's builder): job steps then
   * run on that runtime's step queue and worker, beside its workflows, and
   * its workflow steps submit jobs through `ctx.jobs`. `queue` is the
   * runtime's queue. One runner per dispatcher (a second throws
   * `JobsAlreadyAttachedError`); attach it before the worker starts. Run the
   * worker once: `runner.spawn()` (which also sweeps job results when
   * retention is set) or `runtime.spawn()`.
   *
   * @example
   * const dispatcher = billing.register(orders.registerWorkflows(WorkflowDispatcher.builder(), flows), jobs).build();
   * const runtime = WorkflowRuntime.builder(queue, store, dispatcher, hook).build();
   * const runner = JobRunner.over(queue, runtime, dispatcher);
   */
  static over(queue: WorkflowQueue, runtime: WorkflowRuntime, dispatcher: WorkflowDispatcher, options: JobRunnerOptions = {}): JobRunner {
    checkOverArgs(queue, runtime, dispatcher);
    return RUNNER_GATE.build(() => new JobRunner(queue, runtime, dispatcher, options));
  }

  /** @internal Use `JobRunner.builder` or `JobRunner.over`. */
  constructor(queue: WorkflowQueue, runtime: WorkflowRuntime, dispatcher: WorkflowDispatcher, given: JobRunnerOptions) {
    RUNNER_GATE.check();
    // Each field read once (see readOptions): what is checked is what runs.
    const options = readExactOptions(given, JOB_RUNNER_KEYS, "JobRunnerOptions") as JobRunnerOptions;
    if (options.clock !== undefined && !hasMethods(options.clock, ["now"]))
      throw new ValidationError(`JobRunnerOptions.clock must be an object with a now() method (a Clock), got ${describeValue(options.clock)}`);
    const logger = readLogger("JobRunnerOptions.logger", options.logger);
    this.#queue = queue;
    this.#runtime = runtime;
    this.#resultRetentionMs = options.resultRetentionMs === undefined ? undefined : positiveInt("resultRetentionMs", options.resultRetentionMs);
    this.#pollIntervalMs = positiveInt("pollIntervalMs", options.pollIntervalMs ?? 100);
    this.#logger = logger ?? fullLogger(undefined);
    const clock = options.clock === undefined ? queue.clock : timedClock(options.clock);
    this.#clock = clock;
    const retention = this.#resultRetentionMs === undefined ? undefined : { ms: this.#resultRetentionMs, clock };
    const q = runtime.queueName;
    dispatcher.attachJobs({ jobs: this, retention, queueName: q });
    runtime.runGroups.addMemberCleanup((runId) => queue.kvDelete(jobResultKey(q, runId)));
    const view = runtime.view();
    this.#waits = new JobWaits(
      runEventsFor(queue),
      clock,
      this.#pollIntervalMs,
      async (runId) => (await view.records(runId)).kind === "active",
      () => runtime.warnIfNoWorker("waiting for a job's result"),
    );
    const waits = this.#waits;
    this.#reader = {
      outcome: (jobId) => readJobOutcome(view, queue, jobId),
      register: (jobId) => waits.register(jobId),
      status: (jobId) => runtime.status(jobId),
      cancel: (jobId) => runtime.cancel(jobId),
    };
  }

  /** @internal The runner's shared waits (fallback poll counters, for tests and benchmarks). */
  get waits(): JobWaits {
    return this.#waits;
  }

  /** @internal Sends the completion signal of job `jobId` (the notice hook calls this). */
  async deliverNotice(jobId: string, key: string): Promise<void> {
    const r = await readJobOutcome(this.#runtime.view(), this.#queue, jobId);
    // The hook runs after the termination committed, so the job has ended; records swept meanwhile say so.
    const resolved =
      r === "active" || r === "unknown"
        ? { outcome: { status: "failed" as const, error: undefined, message: "the job's records were removed" }, kind: undefined }
        : r;
    await this.#runtime.signal(key, encodeJobNotice(jobNotice(jobId, resolved)));
  }

  /**
   * Delivers a signal to a waiting workflow step of this runtime, or buffers
   * it (see `WorkflowRuntime.signal`); generated clients over the runner
   * then carry their package's typed signal senders.
   */
  signal(correlationKey: string, payload: Uint8Array): Promise<SignalOutcome> {
    return this.#runtime.signal(correlationKey, payload);
  }

  /**
   * The workflow runtime job runs execute on; typed workflows registered on
   * the same builder run here too. The runner itself is a `WorkflowHost`
   * and a `SignalSender`, so `orders.client(runner)` and
   * `orders.client(runner.runtime)` are the same client.
   */
  get runtime(): WorkflowRuntime {
    return this.#runtime;
  }

  /**
   * Submits a job. The input, headers and options are validated before
   * anything is enqueued. With an idempotency key (the option, else the
   * definition's template) duplicates collapse, before and after the job
   * ends; the same key with a different input throws `InputMismatchError`.
   */
  submit<Name extends string, Input, Output, Err, Headers extends HeaderValues>(
    definition: JobDefinition<Name, Input, Output, Err, Headers>,
    input: Input,
    options?: JobSubmitOptions<Headers>,
  ): Promise<RunnerJobHandle<Output, Err>>;
  /**
   * Submits a run of the runtime's step runner: `WorkflowRuntime.submit`,
   * so generated workflow clients accept the runner as their host.
   */
  submit(spec: RunSpec): Promise<SubmitOutcome>;
  submit(definitionOrSpec: unknown, input?: unknown, options?: JobSubmitOptions<HeaderValues>): Promise<unknown> {
    if ((definitionOrSpec as { kind?: unknown } | null)?.kind === "job") return this.#submitJob(definitionOrSpec as AnyDefinition, input, options);
    return this.#runtime.submit(definitionOrSpec as RunSpec);
  }

  async #submitJob<Output, Err>(
    def: AnyDefinition,
    input: unknown,
    options: JobSubmitOptions<HeaderValues> | undefined,
  ): Promise<RunnerJobHandle<Output, Err>> {
    const payload = preparePayload(def, input);
    const runOptions = withFlow(def, input, prepareRunOptions(def, options));
    // A key set on Object.prototype is none (see `isBaseField`).
    const key =
      (isOptionObject(options) ? (callerField(options, "idempotencyKey", "JobSubmitOptions.idempotencyKey") as string | undefined) : undefined) ??
      def.idempotencyKey?.(input as never);
    const out = await this.submitPrepared({ name: def.name, payload, runOptions, ...(key === undefined ? {} : { idempotencyKey: key }) });
    return new RunnerJobHandle<Output, Err>(this.#reader, out.runId, out.newlySubmitted);
  }

  /**
   * @internal Submits a job whose input and options were validated and
   * encoded already (by `preparePayload` / `prepareRunOptions`, in this
   * process or in a client's). `mark` commits with a new submission (see
   * `applied-mark`).
   */
  async submitPrepared(job: PreparedJob, mark?: AppliedMark<SubmitOutcome>): Promise<SubmitOutcome> {
    if (job.runOptions.headers !== undefined && ownHeader(job.runOptions.headers, JOB_NOTIFY_HEADER) !== undefined && !noticeRunners.has(this)) {
      throw new ValidationError(
        "notifySignal needs the runner's terminal hook, which only JobRunner.builder(...) installs; build the runtime that way, or wait on the handle instead",
      );
    }
    const submit = (spec: RunSpec) => (mark === undefined ? this.#runtime.submit(spec) : this.#runtime.marked.submit(spec, mark));
    if (job.idempotencyKey === undefined) {
      if (job.runId === undefined) return submit({ input: job.payload, options: job.runOptions });
      // The client drew the id (it routes by it): a record holding it makes the owner draw another, as for a fresh id.
      return this.#runtime.marked.submitDrawn({ runId: RunId.parse(job.runId), input: job.payload, options: job.runOptions }, mark);
    }
    const runId = keyedJobRunId(this.#runtime.queueName, job.name, job.idempotencyKey);
    // The key names one run wherever it is submitted: on a shard, only the key's own shard may create it.
    checkRoutesHere(runId, this.#queue.shard, `job "${job.name}" with idempotency key ${JSON.stringify(job.idempotencyKey)} (run "${runId}")`);
    const inputSha256 = sha256Hex(job.payload);
    return this.#lock.run(runId, async () => {
      const dedupKey = jobDedupKey(this.#runtime.queueName, runId);
      const found = await this.#queue.kvGet(dedupKey);
      // A dedup record whose run has no records left outlived result retention: it collapses nothing.
      const records = found === null ? undefined : await this.#runtime.view().records(runId);
      if (found !== null && records !== undefined && records.kind !== "unknown") {
        if (decodeDedup(found, dedupKey) !== inputSha256) throw new InputMismatchError(runId);
        const jobId = records.kind === "active" ? records.pointer.jobId : jobIdOfTermination(records.terminal);
        return { runId, jobId, newlySubmitted: false };
      }
      // The dedup record commits with the enqueue and outlives the run, so a late duplicate finds it.
      const effects = new SettlementEffects().kvPut(dedupKey, encodeDedup(inputSha256));
      return submit({ runId, input: job.payload, options: job.runOptions, effects });
    });
  }

  /** A handle on an existing job by id, typed by its definition (after a restart, for instance). */
  handle<Name extends string, Input, Output, Err, Headers extends HeaderValues>(
    _definition: JobDefinition<Name, Input, Output, Err, Headers>,
    jobId: string,
  ): RunnerJobHandle<Output, Err> {
    return new RunnerJobHandle<Output, Err>(this.#reader, RunId.parse(jobId), false);
  }

  /**
   * The job group `id` of jobs of `definition` (see `JobGroup`). Naming a
   * group writes nothing. Without a definition the group is untyped: it
   * reports, resumes, counts, cancels and forgets an existing group (after
   * a restart, say), and `submit` asks for the definition, which is what
   * types and validates the jobs' inputs.
   */
  group<Name extends string, Input, Output, Err, Headers extends HeaderValues>(
    id: string,
    definition: JobDefinition<Name, Input, Output, Err, Headers>,
  ): JobGroup<Input, Output, Err, Headers>;
  group(id: string): JobGroup<unknown, unknown, unknown, HeaderValues>;
  group<Name extends string, Input, Output, Err, Headers extends HeaderValues>(
    id: string,
    definition?: JobDefinition<Name, Input, Output, Err, Headers>,
  ): JobGroup<Input, Output, Err, Headers> {
    if (definition !== undefined) checkDefinition(definition as unknown);
    return new JobGroup(this.#runtime.group(id), definition, this.#reader);
  }

  /** Requests cancellation of a job or run; false when it already ended or is unknown. */
  cancel(jobId: RunId | string): Promise<boolean> {
    return this.#runtime.cancel(jobId);
  }

  /** One page of this runner's jobs, newest first, by job name and state (see `WorkflowRuntime.listRuns`). */
  async listJobs(opts: ListJobRunsOptions = {}): Promise<RunPage> {
    return listJobRuns(this.#runtime.view(), opts);
  }

  /**
   * Runs a failed or cancelled job again, with its input, under the same
   * job id; its stored result is replaced when the new attempt ends. Throws
   * `RunNotRetryableError` for a job that is active or succeeded, and
   * `JobNotFoundError` for an unknown one.
   */
  retryJob(jobId: RunId | string): Promise<RetryOutcome> {
    return retryJobRun(this.#runtime.view(), this.#runtime.marked, jobId);
  }

  /** @internal `retryJob` with an applied mark, for the client inbox. */
  retryJobMarked(jobId: RunId | string, mark: AppliedMark<RetryOutcome>): Promise<RetryOutcome> {
    return retryJobRun(this.#runtime.view(), this.#runtime.marked, jobId, mark);
  }

  /** A job's or run's status (see `WorkflowRuntime.status`); null for an unknown id. */
  status(runId: RunId | string): Promise<RunStatus | null> {
    return this.#runtime.status(runId);
  }

  /** The committed outcome of a terminated run, or null (see `WorkflowRuntime.outcome`). */
  outcome(runId: RunId | string): Promise<RunOutcome | null> {
    return this.#runtime.outcome(runId);
  }

  /** Waits for a run to end (see `WorkflowRuntime.wait`); job handles wait through `result()` instead. */
  wait(runId: RunId | string): Promise<RunEnd> {
    return this.#runtime.wait(runId);
  }

  /** {@link JobRunner.wait} bounded by `timeoutMs`; null when it elapses first. */
  waitTimeout(runId: RunId | string, timeoutMs: number): Promise<RunEnd | null> {
    return this.#runtime.waitTimeout(runId, timeoutMs);
  }

  /**
   * Runs one result-retention pass now (the workflow's memo sweep, then the
   * job records); returns how many job results it removed. `run` does this
   * at every poll interval when result retention is set.
   */
  async sweepResults(): Promise<number> {
    await this.#runtime.sweepMemos();
    return sweepJobResults(this.#queue, this.#runtime.view(), this.#lock, this.#clock.now());
  }

  /**
   * Runs jobs until `shutdown` resolves or aborts: the worker, group
   * retention and, when set, result retention. In-flight jobs finish first.
   */
  run(shutdown?: Shutdown): Promise<void> {
    if (this.#workers.closing) return Promise.reject(new ClosedError("this job runner"));
    return this.#workers.track(shutdown, (signal) => this.#run(signal));
  }

  async #run(shutdown: AbortSignal): Promise<void> {
    const stop = stopOn(shutdown).signal;
    const tasks = [this.#runtime.run(stop)];
    if (this.#resultRetentionMs !== undefined) tasks.push(this.#sweepLoop(stop));
    await Promise.all(tasks);
  }

  #sweepLoop(signal: AbortSignal): Promise<void> {
    const clock = this.#clock;
    return repeatEvery(
      { clock, intervalMs: this.#pollIntervalMs, queue: this.#queue },
      signal,
      () => sweepJobResults(this.#queue, this.#runtime.view(), this.#lock, clock.now()),
      (e) => this.#logger.error({ err: e }, "job result retention sweep failed; retrying at the next poll interval"),
    );
  }

  /** Runs jobs in the background; `await handle.shutdown()` stops claiming and waits for in-flight jobs. */
  spawn(shutdown?: Shutdown): RunnerHandle {
    return spawnWorker((signal) => this.run(signal), shutdown);
  }

  /**
   * The one way to stop: stops the workers this runner (or its runtime)
   * started, lets in-flight jobs finish (at most `timeoutMs`, default 10 s),
   * then closes the queue. Pending `result()`, `wait()` and group
   * `results()` calls then reject with `ClosedError`, and nothing keeps the
   * process alive. Idempotent; `await using` calls it too.
   */
  close(opts?: CloseOptions): Promise<void> {
    const timeoutMs = closeTimeout(opts);
    this.#closing ??= (async () => {
      const started = Date.now();
      await this.#workers.stopAll(timeoutMs);
      await this.#runtime.close({ timeoutMs: Math.max(0, timeoutMs - (Date.now() - started)) });
    })();
    return this.#closing;
  }

  /** `await using runner = ...` closes the runner (see {@link JobRunner.close}). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
