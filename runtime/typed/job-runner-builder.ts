/**
 * @module `JobRunnerBuilder`: one builder for a runtime that hosts typed
 * jobs and typed workflows of any number of spec packages over one step
 * queue and one worker.
 *
 * `register` takes a job definition or a workflow definition, so generated
 * `register(builder, handlers)` (jobs) and `registerWorkflows(builder,
 * handlers)` (workflows) both accept it. `build()` makes a
 * `WorkflowDispatcher` of everything registered, a `WorkflowRuntime` whose
 * one `StepRunner` it is, and a `JobRunner` over both.
 */
import { validateDelay } from "../time-bounds.js";
import type { Clock } from "../clock.js";
import { ValidationError } from "../errors.js";
import type { ObjectStore } from "../store/object-store.js";
import type { StepRunner } from "../workflow/steps/delivery.js";
import type { WorkflowQueue } from "../workflow/queue-port.js";
import type { Logger } from "../logger.js";
import { NoopTerminalHook, type TerminalHook } from "../workflow/terminal-hook/terminal-hook.js";
import { WorkflowDispatcher, type WorkflowDispatcherBuilder, type WorkflowRegistrar } from "./workflow-dispatcher.js";
import type { WorkflowDefinition } from "../contract/workflow-definition.js";
import { WorkflowRuntime } from "../workflow/workflow-runtime.js";
import type { StateKey } from "../jobs/job-context.js";
import type { HeaderValues, JobDefinition, JobHandler, JobRegistrar } from "../contract/job-definition.js";
import { noticeRunners, withJobNotices } from "../jobs/job-notice.js";
import { JobRunner } from "./job-runner.js";
import { positiveInt } from "../jobs/job-submission.js";
import { checkParentClose, type ParentClosePolicy } from "../workflow/records/records.js";

interface Settings {
  queueName: string;
  concurrency: number;
  pollIntervalMs: number;
  groupRetentionMs: number | undefined;
  resultRetentionMs: number | undefined;
  clock: Clock | undefined;
  leaseMs: number | undefined;
  logger: Logger | undefined;
  hook: TerminalHook;
  parentClose: ParentClosePolicy | undefined;
  scheduleInputTimeoutMs: number | undefined;
}

/**
 * Configures a {@link JobRunner} and the runtime under it: register job and
 * workflow handlers and state, then `build()`.
 *
 * @example
 * const builder = JobRunner.builder(queue, store).queueName("app-steps");
 * billing.register(builder, { emailSend, invoiceRender }); // jobs of one package
 * media.register(builder, { imageThumbnail, imageScan }); // jobs of another
 * orders.registerWorkflows(builder, { orderFulfil }); // workflows of a third
 * const runner = builder.build();
 * const worker = runner.spawn(); // one worker over one step queue runs them all
 * await orders.client(runner.runtime).orderFulfil.submit(input, { headers });
 * await billing.client(runner).emailSend.submit(email, { headers });
 */
export class JobRunnerBuilder implements JobRegistrar, WorkflowRegistrar {
  readonly #queue: WorkflowQueue;
  readonly #store: ObjectStore;
  readonly #dispatcher: WorkflowDispatcherBuilder = WorkflowDispatcher.builder();
  readonly #s: Settings = {
    queueName: "jobs",
    concurrency: 16,
    pollIntervalMs: 100,
    groupRetentionMs: undefined,
    resultRetentionMs: undefined,
    clock: undefined,
    leaseMs: undefined,
    logger: undefined,
    hook: NoopTerminalHook,
    parentClose: undefined,
    scheduleInputTimeoutMs: undefined,
  };

  /** @internal Use `JobRunner.builder`. */
  constructor(queue: WorkflowQueue, store: ObjectStore) {
    this.#queue = queue;
    this.#store = store;
  }

  /** Registers the handler of one job; a second registration of the same name throws. */
  register<Name extends string, Input, Output, Err, Headers extends HeaderValues>(
    definition: JobDefinition<Name, Input, Output, Err, Headers>,
    handler: JobHandler<Input, Output, Err, Headers>,
  ): this;
  /** Registers the handler of one typed workflow (one method per step); a second registration of the same name throws. */
  register<Name extends string, Input, Result, Err, Headers extends HeaderValues, Handler>(
    definition: WorkflowDefinition<Name, Input, Result, Err, Headers, Handler>,
    handler: Handler,
  ): this;
  register(definition: unknown, handler: unknown): this {
    this.#dispatcher.register(definition as JobDefinition<string, unknown, unknown, unknown, never>, handler as JobHandler<unknown, unknown, unknown, never>);
    return this;
  }

  /** Registers state job handlers reach through `jobContext(ctx).state(key)`. */
  state<T>(key: StateKey<T>, value: T): this {
    this.#dispatcher.state(key, value);
    return this;
  }

  /** A hand-written runner for steps that are neither typed workflow steps nor registered jobs (untyped runs on the same queue). */
  fallback(runner: StepRunner): this {
    this.#dispatcher.fallback(runner);
    return this;
  }

  /** See `WorkflowDispatcherBuilder.allowContractDowngrade`: start although a newer contract already ran over the store. */
  allowContractDowngrade(allow = true): this {
    this.#dispatcher.allowContractDowngrade(allow);
    return this;
  }

  /**
   * Called with every run's termination, atomically with it (see
   * `TerminalHook`). The runner wraps it to send the completion signals of
   * jobs submitted with `notifySignal`. Default: none.
   */
  terminalHook(hook: TerminalHook): this {
    this.#s.hook = hook;
    return this;
  }

  /** The step queue jobs and workflow steps live in. Default: `"jobs"`. */
  queueName(name: string): this {
    if (typeof name !== "string" || name.length === 0) throw new ValidationError("queueName must be a non-empty string");
    this.#s.queueName = name;
    return this;
  }

  /** Most steps (jobs and workflow steps) run at once by `run`. Default: 16. */
  concurrency(n: number): this {
    this.#s.concurrency = positiveInt("concurrency", n);
    return this;
  }

  /** Period of the waits' shared fallback poll (a termination no announcement reached) and of retention sweeps. Default: 100. */
  pollIntervalMs(ms: number): this {
    this.#s.pollIntervalMs = validateDelay("pollIntervalMs", positiveInt("pollIntervalMs", ms));
    return this;
  }

  /** Removes a job group this long after a `results()`/`join()` consumer saw its last job end. Default: kept until forgotten. */
  groupRetention(ms: number): this {
    this.#s.groupRetentionMs = validateDelay("groupRetention", positiveInt("groupRetention", ms));
    return this;
  }

  /**
   * Removes a job's result, dedup and terminal records (and its memo
   * entries) this long after it ended; a later submission with the same
   * idempotency key then runs again. It is also the runtime's memo
   * retention, so workflow runs' terminal records and memos go after the
   * same window. Default: kept forever.
   */
  resultRetention(ms: number): this {
    this.#s.resultRetentionMs = validateDelay("resultRetention", positiveInt("resultRetention", ms));
    return this;
  }

  /** The parent-close policy of a child workflow whose start does not give one (see `WorkflowRuntimeBuilder.parentClose`). Default: `"cancel"`. */
  parentClose(policy: ParentClosePolicy): this {
    this.#s.parentClose = checkParentClose(policy);
    return this;
  }

  /** How long a schedule's input handler may take for one tick (see `WorkflowRuntimeBuilder.scheduleInputTimeout`). Default: 30,000 ms. */
  scheduleInputTimeout(ms: number): this {
    this.#s.scheduleInputTimeoutMs = validateDelay("scheduleInputTimeout", positiveInt("scheduleInputTimeout", ms));
    return this;
  }

  /** The runner's time source. Default: the queue's clock. */
  clock(clock: Clock): this {
    this.#s.clock = clock;
    return this;
  }

  /** Lease of each claimed step. Default: the queue's `leaseMs`. */
  leaseMs(ms: number): this {
    this.#s.leaseMs = validateDelay("leaseMs", positiveInt("leaseMs", ms));
    return this;
  }

  /**
   * Where the runner's and its runtime's log events go: any object with
   * pino-style `debug/info/warn/error(obj, msg)` methods. Default: `console`
   * at warn level. See docs/observability.md.
   */
  logger(logger: Logger): this {
    this.#s.logger = logger;
    return this;
  }

  build(): JobRunner {
    const s = { ...this.#s };
    const dispatcher = this.#dispatcher.build();
    let runner: JobRunner | undefined;
    const hook = withJobNotices(s.hook, () => (runner === undefined ? undefined : (jobId, key) => runner!.deliverNotice(jobId, key)));
    let b = WorkflowRuntime.builder(this.#queue, this.#store, dispatcher, hook)
      .queueName(s.queueName)
      .maxConcurrentSteps(s.concurrency)
      .pollIntervalMs(s.pollIntervalMs);
    if (s.groupRetentionMs !== undefined) b = b.groupRetention(s.groupRetentionMs);
    if (s.resultRetentionMs !== undefined) b = b.memoRetention(s.resultRetentionMs);
    if (s.clock !== undefined) b = b.clock(s.clock);
    if (s.leaseMs !== undefined) b = b.leaseMs(s.leaseMs);
    if (s.parentClose !== undefined) b = b.parentClose(s.parentClose);
    if (s.scheduleInputTimeoutMs !== undefined) b = b.scheduleInputTimeout(s.scheduleInputTimeoutMs);
    if (s.logger !== undefined) b = b.logger(s.logger);
    runner = JobRunner.over(this.#queue, b.build(), dispatcher, {
      pollIntervalMs: s.pollIntervalMs,
      ...(s.resultRetentionMs === undefined ? {} : { resultRetentionMs: s.resultRetentionMs }),
      ...(s.clock === undefined ? {} : { clock: s.clock }),
      ...(s.logger === undefined ? {} : { logger: s.logger }),
    });
    noticeRunners.add(runner);
    return runner;
  }
}
