/**
 * @module `WorkflowRuntimeBuilder`: the runtime's options, each with its
 * default, resolved once by `build()`.
 */
import { validateDelay } from "../time-bounds.js";
import { timedClock, type Clock } from "../clock.js";
import { describeValue, hasMethods } from "../option-values.js";
import { ValidationError } from "../errors.js";
import { validateQueueName } from "../queue/names.js";
import type { ObjectStore } from "../store/object-store.js";
import type { StepRunner } from "./steps/delivery.js";
import type { WorkflowQueue } from "./queue-port.js";
import { type FullLogger, fullLogger, type Logger, readLogger } from "../logger.js";
import type { TerminalHook } from "./terminal-hook/terminal-hook.js";
import { RUNTIME_GATE, WorkflowRuntime } from "./workflow-runtime.js";
import { DEFAULT_STEP_QUEUE } from "./runs/workflow-view.js";
import { DEFAULT_SCHEDULE_INPUT_TIMEOUT_MS } from "./schedules/schedules.js";
import { checkParentClose, type ParentClosePolicy } from "./records/records.js";
import { BUSIEST_KEY_PREFIXES } from "./records/kv-keys.js";

/** @internal The resolved options. */
export interface BuilderState {
  queueName: string;
  memoPrefix: string | undefined;
  maxConcurrentSteps: number;
  pollIntervalMs: number;
  stepOutputReplay: boolean;
  memoRetentionMs: number | undefined;
  groupRetentionMs: number | undefined;
  clock: Clock | undefined;
  leaseMs: number | undefined;
  logger: FullLogger;
  parentClose: ParentClosePolicy;
  scheduleInputTimeoutMs: number;
}

function positiveInt(name: string, n: number): number {
  if (!Number.isInteger(n) || n < 1) throw new ValidationError(`${name} must be an integer >= 1, got ${describeValue(n)}`);
  return n;
}

import { checkMemoPrefix, MAX_CONCURRENT_STEPS } from "./limits.js";
import { checkStoreArg } from "../store/store-check.js";

export { checkMemoPrefix, MAX_MEMO_PREFIX_BYTES } from "./limits.js";

/**
 * The parts a runtime is built over, checked by `build()`: a missing one
 * would otherwise fail only when first used, in the background.
 */
function checkDeps(queue: unknown, store: unknown, runner: unknown, hook: unknown): void {
  const problems: string[] = [];
  if (!hasMethods(queue, ["claimBatch", "ack", "kvGet"])) problems.push(`the queue must be a Queue (from Queue.open), got ${describeValue(queue)}`);
  if (!hasMethods(store, ["get", "put", "delete", "list"]))
    problems.push(`the store must be an ObjectStore (get, put, delete, list), got ${describeValue(store)}`);
  else {
    try {
      checkStoreArg("the store", store);
    } catch (e) {
      if (!(e instanceof ValidationError)) throw e;
      problems.push(e.message);
    }
  }
  if (!hasMethods(runner, ["runStep"])) problems.push(`the runner must be an object with a runStep(step) method, got ${describeValue(runner)}`);
  if (!hasMethods(hook, ["onTermination"])) {
    problems.push(`the terminal hook must be an object with an onTermination(outcome, effects) method (NoopTerminalHook for none), got ${describeValue(hook)}`);
  }
  if (problems.length > 0) throw new ValidationError("WorkflowRuntime.builder(queue, store, runner, hook) was given something else", problems);
}

/**
 * Declares the families every step reads or writes to the queue, so its
 * engine's memtable searches each family's keys alone. A speed-up only: a
 * closed queue refuses the runtime's first call with its own error, and an
 * engine whose key heads are all taken (the queue's `engineOptions.keyHeads`)
 * runs the workflow without them, saying so once.
 */
function declareBusiestKeys(queue: WorkflowQueue, log: FullLogger): void {
  if (queue.closed || queue.declareKeyHeads === undefined) return;
  try {
    queue.declareKeyHeads(BUSIEST_KEY_PREFIXES);
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    log.warn(
      { err },
      "the queue's engine has no room for the workflow's key heads (its engineOptions.keyHeads take them all): the workflow runs without them; declare fewer to let it use them",
    );
  }
}

/**
 * Configures a {@link WorkflowRuntime}. Every setting has a default; call
 * `build()` when done.
 */
export class WorkflowRuntimeBuilder {
  readonly #deps: { queue: WorkflowQueue; store: ObjectStore; runner: StepRunner; hook: TerminalHook };
  readonly #s: BuilderState = {
    queueName: DEFAULT_STEP_QUEUE,
    memoPrefix: undefined,
    maxConcurrentSteps: 16,
    pollIntervalMs: 250,
    stepOutputReplay: false,
    memoRetentionMs: undefined,
    groupRetentionMs: undefined,
    parentClose: "cancel",
    scheduleInputTimeoutMs: DEFAULT_SCHEDULE_INPUT_TIMEOUT_MS,
    clock: undefined,
    leaseMs: undefined,
    logger: fullLogger(undefined),
  };

  /** @internal Use `WorkflowRuntime.builder`. */
  constructor(queue: WorkflowQueue, store: ObjectStore, runner: StepRunner, hook: TerminalHook) {
    this.#deps = { queue, store, runner, hook };
  }

  /**
   * The queue step jobs live in; per-queue settings (lease, attempts,
   * backoff) are keyed on it. Default: `"workflow-steps"`.
   *
   * It is also the namespace of the runtime's runs: run records, step
   * pointers, terminal records, signal keys and run groups are all scoped
   * by it, so runtimes over one `Queue` with different step queues never
   * share a run id or a signal key, and runtimes with the same step queue
   * (in this process or another) see the same runs, each run's memo under
   * the prefix it was submitted with. Give runtimes of different step
   * queues different memo prefixes too (the default is derived from this
   * name).
   */
  queueName(name: string): this {
    validateQueueName(name);
    this.#s.queueName = name;
    return this;
  }

  /**
   * Object-key prefix of the memo entries, replay records and result
   * records of the runs this runtime submits. Default: `"{queueName}-memo"`.
   * A run records the prefix it was submitted with, and every runtime of
   * the step queue works and reads it there (in its own object store), so
   * runtimes of one step queue may differ in prefix; runtimes of different
   * step queues sharing an object store must not share one.
   */
  memoPrefix(prefix: string): this {
    checkMemoPrefix("memoPrefix", prefix);
    this.#s.memoPrefix = prefix;
    return this;
  }

  /** Most steps processed at once by `run`: 1 to {@link MAX_CONCURRENT_STEPS}. Default: 16. */
  maxConcurrentSteps(n: number): this {
    positiveInt("maxConcurrentSteps", n);
    // Each free slot is a job the worker may claim and hold in memory at once.
    if (n > MAX_CONCURRENT_STEPS) {
      throw new ValidationError(`maxConcurrentSteps must be at most ${MAX_CONCURRENT_STEPS} (each slot may hold a claimed step in memory), got ${n}`);
    }
    this.#s.maxConcurrentSteps = n;
    return this;
  }

  /** Period of the memo sweep and of a wait's check for reconciled runs. Default: 250. */
  pollIntervalMs(ms: number): this {
    this.#s.pollIntervalMs = validateDelay("pollIntervalMs", positiveInt("pollIntervalMs", ms));
    return this;
  }

  /** Record every runner outcome before settling it and replay it on redelivery. Default: off. */
  stepOutputReplay(on = true): this {
    // A string "false" is truthy: a switch read from configuration text would turn replay on.
    if (typeof on !== "boolean") throw new ValidationError(`stepOutputReplay takes true or false, got ${describeValue(on)}`);
    this.#s.stepOutputReplay = on;
    return this;
  }

  /** Remove a terminated run's memo entries, replay records and terminal record this long after termination. Default: kept forever. */
  memoRetention(ms: number): this {
    this.#s.memoRetentionMs = validateDelay("memoRetention", positiveInt("memoRetention", ms));
    return this;
  }

  /**
   * What happens to the running children of a parent that fails or is
   * cancelled, when a child's start does not say: `"cancel"` them or
   * `"abandon"` them (they keep running). Default: `"cancel"`.
   */
  parentClose(policy: ParentClosePolicy): this {
    this.#s.parentClose = checkParentClose(policy);
    return this;
  }

  /**
   * How long a schedule's input handler (`run.input` as a function) may take
   * for one tick. A tick whose handler has not answered by then starts no
   * run and is recorded in the schedule's `lastFailure`, like a handler that
   * threw, and the scheduler goes on with the other schedules. Default:
   * 30,000 ms.
   */
  scheduleInputTimeout(ms: number): this {
    this.#s.scheduleInputTimeoutMs = validateDelay("scheduleInputTimeout", positiveInt("scheduleInputTimeout", ms));
    return this;
  }

  /** Retention of run groups after their results were consumed. Default: kept until forgotten. */
  groupRetention(ms: number): this {
    this.#s.groupRetentionMs = validateDelay("groupRetention", positiveInt("groupRetention", ms));
    return this;
  }

  /** The runtime's time source. Default: the queue's clock. */
  clock(clock: Clock): this {
    // A clock that reads no time would fail every step's settlement later, and the runs would never end.
    if (!hasMethods(clock, ["now"])) throw new ValidationError(`clock must be an object with a now() method, got ${describeValue(clock)}`);
    timedClock(clock).now();
    this.#s.clock = clock;
    return this;
  }

  /** Lease of each claimed step. Default: the step queue's `leaseMs`. */
  leaseMs(ms: number): this {
    // Bounded here, not first at the worker's claim, where a refusal would leave every run pending.
    this.#s.leaseMs = validateDelay("leaseMs", positiveInt("leaseMs", ms));
    return this;
  }

  /**
   * Where the runtime's log events go: any object with pino-style
   * `debug/info/warn/error(obj, msg)` methods (levels it lacks are not
   * logged). Default: `console` at warn level. See docs/observability.md.
   */
  logger(logger: Logger): this {
    const read = readLogger("logger", logger);
    if (read === undefined)
      throw new ValidationError("logger must be an object with debug/info/warn/error(obj, msg) methods (a pino logger is one), got undefined");
    this.#s.logger = read;
    return this;
  }

  build(): WorkflowRuntime {
    const { queue, store, runner, hook } = this.#deps;
    checkDeps(queue, store, runner, hook);
    const rules = runner.flowRules?.();
    if (rules !== undefined && Object.keys(rules).length > 0) {
      if (queue.defineFlowRules === undefined) {
        throw new ValidationError("the runner declares flow rules (concurrency or rate limits), but this queue cannot enforce them; use a Queue");
      }
      queue.defineFlowRules(this.#s.queueName, rules);
    }
    declareBusiestKeys(queue, this.#s.logger);
    return RUNTIME_GATE.build(() => new WorkflowRuntime(this.#deps, { ...this.#s }));
  }
}
