/**
 * @module `JobRunner`: typed async functions run as single-step workflow
 * runs, with awaitable, durable results.
 *
 * A job's id is its run id: a ULID, or, with an idempotency key, one derived
 * from the runner's queue, the job name and the key. The job result record
 * is committed with the run's terminating settlement (see
 * `job-step-runner.ts`), so `JobHandle.fetchResult` after a restart reads
 * exactly what the termination committed.
 */
import type { Clock } from "../clock.js";
import { ValidationError } from "../errors.js";
import { SettlementEffects } from "../queue/effects.js";
import type { ObjectStore } from "../store/object-store.js";
import { sha256Hex } from "../workflow/codec.js";
import type { WorkflowQueue } from "../workflow/queue-port.js";
import { KeyedLock } from "../workflow/run-events.js";
import { RunId } from "../workflow/run-id.js";
import type { WorkflowLogger } from "../workflow/step-worker.js";
import { NoopTerminalHook } from "../workflow/terminal-hook.js";
import { InputMismatchError } from "../workflow/workflow-errors.js";
import { WorkflowRuntime, type RunnerHandle, type Shutdown } from "../workflow/workflow-runtime.js";
import { decodeDedup, encodeDedup, jobDedupKey, jobResultKey, keyedJobRunId } from "./job-codec.js";
import type { StateKey } from "./job-context.js";
import type { HeaderValues, JobDefinition, JobHandler, JobRegistrar, JobSubmitOptions, JobSubmitter } from "./job-definition.js";
import { JobGroup } from "./job-group.js";
import { RunnerJobHandle, type JobReader } from "./job-handle.js";
import { readJobOutcome } from "./job-results.js";
import { JobStepRunner, type Registration } from "./job-step-runner.js";
import { sweepJobResults } from "./result-retention.js";
import { checkDefinition, positiveInt, preparePayload, prepareRunOptions, type AnyDefinition } from "./job-submission.js";

interface Settings {
  queueName: string;
  concurrency: number;
  pollIntervalMs: number;
  groupRetentionMs: number | undefined;
  resultRetentionMs: number | undefined;
  clock: Clock | undefined;
  leaseMs: number | undefined;
  logger: WorkflowLogger | undefined;
}

/** An abort signal for a shutdown trigger (never aborted when there is none). */
function abortOn(shutdown: Shutdown | undefined): AbortSignal {
  if (shutdown instanceof AbortSignal) return shutdown;
  const c = new AbortController();
  shutdown?.then(
    () => c.abort(),
    () => c.abort(),
  );
  return c.signal;
}

/** Configures a {@link JobRunner}: register handlers and state, then `build()`. */
export class JobRunnerBuilder implements JobRegistrar {
  readonly #queue: WorkflowQueue;
  readonly #store: ObjectStore;
  readonly #registry = new Map<string, Registration>();
  readonly #state = new Map<StateKey<unknown>, unknown>();
  readonly #s: Settings = { queueName: "jobs", concurrency: 16, pollIntervalMs: 100, groupRetentionMs: undefined, resultRetentionMs: undefined, clock: undefined, leaseMs: undefined, logger: undefined };

  /** @internal Use `JobRunner.builder`. */
  constructor(queue: WorkflowQueue, store: ObjectStore) {
    this.#queue = queue;
    this.#store = store;
  }

  /** Registers the handler of one job; a second registration of the same name throws. */
  register<Name extends string, Input, Output, Err, Headers extends HeaderValues>(
    definition: JobDefinition<Name, Input, Output, Err, Headers>,
    handler: JobHandler<Input, Output, Err, Headers>,
  ): this {
    checkDefinition(definition);
    if (handler === null || typeof handler !== "object" || typeof handler.run !== "function") throw new ValidationError(`the handler of job "${definition.name}" must have a run(input, ctx) method`);
    if (this.#registry.has(definition.name)) throw new ValidationError(`job "${definition.name}" is registered twice; register each job once`);
    this.#registry.set(definition.name, { definition: definition as unknown as AnyDefinition, handler: handler as unknown as Registration["handler"] });
    return this;
  }

  /** Registers state handlers reach through `jobContext(ctx).state(key)`. */
  state<T>(key: StateKey<T>, value: T): this {
    this.#state.set(key as StateKey<unknown>, value);
    return this;
  }

  /** The queue job runs live in. Default: `"jobs"`. */
  queueName(name: string): this {
    if (typeof name !== "string" || name.length === 0) throw new ValidationError("queueName must be a non-empty string");
    this.#s.queueName = name;
    return this;
  }

  /** Most jobs run at once by `run`. Default: 16. */
  concurrency(n: number): this {
    this.#s.concurrency = positiveInt("concurrency", n);
    return this;
  }

  /** How late a termination committed by another process is noticed by waiters. Default: 100. */
  pollIntervalMs(ms: number): this {
    this.#s.pollIntervalMs = positiveInt("pollIntervalMs", ms);
    return this;
  }

  /** Removes a job group this long after a `results()`/`join()` consumer saw its last job end. Default: kept until forgotten. */
  groupRetention(ms: number): this {
    this.#s.groupRetentionMs = positiveInt("groupRetention", ms);
    return this;
  }

  /**
   * Removes a job's result, dedup and terminal records (and its memo
   * entries) this long after it ended; a later submission with the same
   * idempotency key then runs again. Default: kept forever.
   */
  resultRetention(ms: number): this {
    this.#s.resultRetentionMs = positiveInt("resultRetention", ms);
    return this;
  }

  /** The runner's time source. Default: the queue's clock. */
  clock(clock: Clock): this {
    this.#s.clock = clock;
    return this;
  }

  /** Lease of each claimed job. Default: the queue's `leaseMs`. */
  leaseMs(ms: number): this {
    this.#s.leaseMs = positiveInt("leaseMs", ms);
    return this;
  }

  /** Where worker errors are reported. Default: `console.error`. */
  logger(logger: WorkflowLogger): this {
    this.#s.logger = logger;
    return this;
  }

  build(): JobRunner {
    return new JobRunner(this.#queue, this.#store, new Map(this.#registry), new Map(this.#state), { ...this.#s });
  }
}

/**
 * Runs typed jobs and returns their results to awaiting callers.
 *
 * @example
 * const runner = JobRunner.builder(queue, store).register(emailSendJob, new EmailSend()).build();
 * const worker = runner.spawn();
 * const handle = await runner.submit(emailSendJob, { to: "a@b.co" });
 * const messageId = await handle.output();
 * await worker.shutdown();
 */
export class JobRunner implements JobSubmitter {
  readonly #queue: WorkflowQueue;
  readonly #runtime: WorkflowRuntime;
  readonly #lock = new KeyedLock();
  readonly #reader: JobReader;
  readonly #resultRetentionMs: number | undefined;
  readonly #pollIntervalMs: number;
  readonly #clock: Clock;
  readonly #logger: WorkflowLogger;

  /** Starts configuring a runner over `queue`, keeping its group manifests in `store`. */
  static builder(queue: WorkflowQueue, store: ObjectStore): JobRunnerBuilder {
    return new JobRunnerBuilder(queue, store);
  }

  /** @internal Use the builder. */
  constructor(queue: WorkflowQueue, store: ObjectStore, registry: Map<string, Registration>, state: Map<StateKey<unknown>, unknown>, s: Settings) {
    this.#queue = queue;
    this.#resultRetentionMs = s.resultRetentionMs;
    this.#pollIntervalMs = s.pollIntervalMs;
    this.#logger = s.logger ?? { error: (obj, msg) => console.error(msg ?? "job runner error", obj) };
    const clock = s.clock ?? queue.clock;
    this.#clock = clock;
    const retention = s.resultRetentionMs === undefined ? undefined : { ms: s.resultRetentionMs, clock };
    const steps = new JobStepRunner(registry, state, (def, input, opts) => this.submit(def, input, opts), retention);
    let b = WorkflowRuntime.builder(queue, store, steps, NoopTerminalHook).queueName(s.queueName).maxConcurrentSteps(s.concurrency).pollIntervalMs(s.pollIntervalMs);
    if (s.groupRetentionMs !== undefined) b = b.groupRetention(s.groupRetentionMs);
    if (s.resultRetentionMs !== undefined) b = b.memoRetention(s.resultRetentionMs);
    if (s.clock !== undefined) b = b.clock(s.clock);
    if (s.leaseMs !== undefined) b = b.leaseMs(s.leaseMs);
    if (s.logger !== undefined) b = b.logger(s.logger);
    this.#runtime = b.build();
    this.#runtime.runGroups.addMemberCleanup((runId) => queue.kvDelete(jobResultKey(runId)));
    const runtime = this.#runtime;
    this.#reader = {
      outcome: (jobId) => readJobOutcome(runtime.view(), queue, jobId),
      wait: async (jobId) => void (await runtime.wait(jobId)),
      status: (jobId) => runtime.status(jobId),
      cancel: (jobId) => runtime.cancel(jobId),
    };
  }

  /** The workflow runtime job runs execute on. */
  get runtime(): WorkflowRuntime {
    return this.#runtime;
  }

  /**
   * Submits a job. The input, headers and options are validated before
   * anything is enqueued. With an idempotency key (the option, else the
   * definition's template) duplicates collapse, before and after the job
   * ends; the same key with a different input throws `InputMismatchError`.
   */
  async submit<Name extends string, Input, Output, Err, Headers extends HeaderValues>(
    definition: JobDefinition<Name, Input, Output, Err, Headers>,
    input: Input,
    options?: JobSubmitOptions<Headers>,
  ): Promise<RunnerJobHandle<Output, Err>> {
    const def = definition as unknown as AnyDefinition;
    const runOptions = prepareRunOptions(def, options as JobSubmitOptions<HeaderValues> | undefined);
    const payload = preparePayload(def, input);
    const key = options?.idempotencyKey ?? def.idempotencyKey?.(input as never);
    if (key === undefined) {
      const out = await this.#runtime.submit({ input: payload, options: runOptions });
      return new RunnerJobHandle(this.#reader, out.runId, true);
    }
    const runId = keyedJobRunId(this.#runtime.queueName, def.name, key);
    const inputSha256 = sha256Hex(payload);
    return this.#lock.run(runId, async () => {
      const found = await this.#queue.kvGet(jobDedupKey(runId));
      // A dedup record whose run has no records left outlived result retention: it collapses nothing.
      if (found !== null && (await this.#runtime.view().records(runId)).kind !== "unknown") {
        if (decodeDedup(found, jobDedupKey(runId)) !== inputSha256) throw new InputMismatchError(runId);
        return new RunnerJobHandle<Output, Err>(this.#reader, runId, false);
      }
      // The dedup record commits with the enqueue and outlives the run, so a late duplicate finds it.
      const effects = new SettlementEffects().kvPut(jobDedupKey(runId), encodeDedup(inputSha256));
      const out = await this.#runtime.submit({ runId, input: payload, options: runOptions, effects });
      return new RunnerJobHandle<Output, Err>(this.#reader, runId, out.newlySubmitted);
    });
  }

  /** A handle on an existing job by id, typed by its definition (after a restart, for instance). */
  handle<Name extends string, Input, Output, Err, Headers extends HeaderValues>(
    _definition: JobDefinition<Name, Input, Output, Err, Headers>,
    jobId: string,
  ): RunnerJobHandle<Output, Err> {
    return new RunnerJobHandle<Output, Err>(this.#reader, RunId.parse(jobId), false);
  }

  /** The job group `id` of jobs of `definition` (see `JobGroup`). Naming a group writes nothing. */
  group<Name extends string, Input, Output, Err, Headers extends HeaderValues>(
    id: string,
    definition: JobDefinition<Name, Input, Output, Err, Headers>,
  ): JobGroup<Input, Output, Err, Headers> {
    checkDefinition(definition as unknown);
    return new JobGroup(this.#runtime.group(id), definition, this.#reader);
  }

  /** Requests cancellation of a job; false when it already ended or is unknown. */
  cancel(jobId: string): Promise<boolean> {
    return this.#runtime.cancel(jobId);
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
  async run(shutdown?: Shutdown): Promise<void> {
    const stop = abortOn(shutdown);
    const tasks = [this.#runtime.run(stop)];
    if (this.#resultRetentionMs !== undefined) tasks.push(this.#sweepLoop(stop));
    await Promise.all(tasks);
  }

  async #sweepLoop(signal: AbortSignal): Promise<void> {
    const clock = this.#clock;
    while (!signal.aborted && !this.#queue.closed) {
      try {
        await sweepJobResults(this.#queue, this.#runtime.view(), this.#lock, clock.now());
      } catch (e) {
        this.#logger.error({ err: e }, "job result retention sweep failed; retrying at the next poll interval");
      }
      try {
        await clock.waitUntil(clock.now() + this.#pollIntervalMs, signal);
      } catch {
        return;
      }
    }
  }

  /** Runs jobs in the background; `await handle.shutdown()` stops claiming and waits for in-flight jobs. */
  spawn(shutdown?: Shutdown): RunnerHandle {
    const stop = new AbortController();
    const outer = abortOn(shutdown);
    if (outer.aborted) stop.abort();
    else outer.addEventListener("abort", () => stop.abort(), { once: true });
    const done = this.run(stop.signal);
    done.catch(() => undefined);
    return {
      done,
      shutdown: async () => {
        stop.abort();
        await done;
      },
    };
  }
}
