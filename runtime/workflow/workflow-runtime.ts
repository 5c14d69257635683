/**
 * @module `WorkflowRuntime`: durable runs of a `StepRunner` over a queue.
 *
 * Everything a run is lives in the queue's store (run record, step pointer,
 * step jobs, terminal record, signals) or in the memo store, so every query
 * and command works after a restart and from any runtime over the same
 * queue. The runtime object itself holds only configuration and in-process
 * wake-ups.
 */
import type { Clock } from "../clock.js";
import type { ObjectStore } from "../store/object-store.js";
import { cancelRun } from "./cancel.js";
import type { StepRunner } from "./delivery.js";
import { MemoStore } from "./memo.js";
import { MemoSweeper } from "./memo-sweeper.js";
import type { WorkflowQueue } from "./queue-port.js";
import { reconcileAllDead, reconcileDeadJob } from "./reconcile.js";
import { RunId } from "./run-id.js";
import { KeyedLock } from "./run-events.js";
import { terminationOf } from "./records.js";
import type { RunEnd, RunOutcome, RunSpec, RunStatus, SignalOutcome, SubmitOutcome } from "./run-types.js";
import { runEventsFor, submitLockFor, type RuntimeCore } from "./runtime-core.js";
import { clearBufferedSignal, sendSignal } from "./signals.js";
import { runStepWorker, type WorkflowLogger } from "./step-worker.js";
import { submitRun } from "./submit.js";
import type { TerminalHook } from "./terminal-hook.js";
import { RunNotFoundError } from "./workflow-errors.js";
import { WorkflowView } from "./workflow-view.js";
import { ValidationError } from "../errors.js";

/** Handle of a spawned worker. */
export interface RunnerHandle {
  /** Stops claiming, lets in-flight steps finish, resolves when the worker stopped. */
  shutdown(): Promise<void>;
  /** Resolves when the worker stops (rejects if it failed). */
  readonly done: Promise<void>;
}

/** A shutdown trigger: a promise that resolves, or an abort signal. */
export type Shutdown = Promise<void> | AbortSignal;

const consoleLogger: WorkflowLogger = {
  error(obj, msg) {
    console.error(msg ?? "workflow error", obj);
  },
};

interface BuilderState {
  queueName: string;
  memoPrefix: string | undefined;
  maxConcurrentSteps: number;
  pollIntervalMs: number;
  stepOutputReplay: boolean;
  memoRetentionMs: number | undefined;
  groupRetentionMs: number | undefined;
  clock: Clock | undefined;
  leaseMs: number | undefined;
  logger: WorkflowLogger;
}

function positiveInt(name: string, n: number): number {
  if (!Number.isInteger(n) || n < 1) throw new ValidationError(`${name} must be an integer >= 1, got ${n}`);
  return n;
}

/**
 * Configures a {@link WorkflowRuntime}. Every setting has a default; call
 * `build()` when done.
 */
export class WorkflowRuntimeBuilder {
  readonly #deps: { queue: WorkflowQueue; store: ObjectStore; runner: StepRunner; hook: TerminalHook };
  readonly #s: BuilderState = {
    queueName: "workflow-steps",
    memoPrefix: undefined,
    maxConcurrentSteps: 16,
    pollIntervalMs: 250,
    stepOutputReplay: false,
    memoRetentionMs: undefined,
    groupRetentionMs: undefined,
    clock: undefined,
    leaseMs: undefined,
    logger: consoleLogger,
  };

  /** @internal Use `WorkflowRuntime.builder`. */
  constructor(queue: WorkflowQueue, store: ObjectStore, runner: StepRunner, hook: TerminalHook) {
    this.#deps = { queue, store, runner, hook };
  }

  /** The queue step jobs live in; per-queue settings (lease, attempts, backoff) are keyed on it. Default: `"workflow-steps"`. */
  queueName(name: string): this {
    if (typeof name !== "string" || name.length === 0) throw new ValidationError("queueName must be a non-empty string");
    this.#s.queueName = name;
    return this;
  }

  /** Object-key prefix of memo entries and replay records. Default: `"{queueName}-memo"`. */
  memoPrefix(prefix: string): this {
    if (typeof prefix !== "string" || prefix.length === 0 || prefix.endsWith("/")) throw new ValidationError("memoPrefix must be a non-empty prefix without a trailing '/'");
    this.#s.memoPrefix = prefix;
    return this;
  }

  /** Most steps processed at once by `run`. Default: 16. */
  maxConcurrentSteps(n: number): this {
    this.#s.maxConcurrentSteps = positiveInt("maxConcurrentSteps", n);
    return this;
  }

  /** Period of the memo sweep and of a wait's check for reconciled runs. Default: 250. */
  pollIntervalMs(ms: number): this {
    this.#s.pollIntervalMs = positiveInt("pollIntervalMs", ms);
    return this;
  }

  /** Record every runner outcome before settling it and replay it on redelivery. Default: off. */
  stepOutputReplay(on = true): this {
    this.#s.stepOutputReplay = on;
    return this;
  }

  /** Remove a terminated run's memo entries, replay records and terminal record this long after termination. Default: kept forever. */
  memoRetention(ms: number): this {
    this.#s.memoRetentionMs = positiveInt("memoRetention", ms);
    return this;
  }

  /** Retention of run groups after their results were consumed. Default: kept until forgotten. */
  groupRetention(ms: number): this {
    this.#s.groupRetentionMs = positiveInt("groupRetention", ms);
    return this;
  }

  /** The runtime's time source. Default: the queue's clock. */
  clock(clock: Clock): this {
    this.#s.clock = clock;
    return this;
  }

  /** Lease of each claimed step. Default: the step queue's `leaseMs`. */
  leaseMs(ms: number): this {
    this.#s.leaseMs = positiveInt("leaseMs", ms);
    return this;
  }

  /** Where worker errors are reported. Default: `console.error`. */
  logger(logger: WorkflowLogger): this {
    this.#s.logger = logger;
    return this;
  }

  build(): WorkflowRuntime {
    return new WorkflowRuntime(this.#deps, { ...this.#s });
  }
}

/**
 * Durable runtime for workflow runs.
 *
 * @example
 * const runtime = WorkflowRuntime.builder(queue, store, runner, NoopTerminalHook).build();
 * const worker = runtime.spawn();
 * const { runId } = await runtime.submit({ input: new TextEncoder().encode("hello") });
 * const end = await runtime.wait(runId);
 * await worker.shutdown();
 */
export class WorkflowRuntime {
  readonly #core: RuntimeCore;
  readonly #view: WorkflowView;
  readonly #sweeper: MemoSweeper;
  readonly #logger: WorkflowLogger;
  readonly #reconcileLock = new KeyedLock();

  /** Starts configuring a runtime over `queue`, with memo entries in `store`. */
  static builder(queue: WorkflowQueue, store: ObjectStore, runner: StepRunner, hook: TerminalHook): WorkflowRuntimeBuilder {
    return new WorkflowRuntimeBuilder(queue, store, runner, hook);
  }

  /** @internal Use the builder. */
  constructor(deps: { queue: WorkflowQueue; store: ObjectStore; runner: StepRunner; hook: TerminalHook }, s: BuilderState) {
    const memos = new MemoStore(deps.store, s.memoPrefix ?? `${s.queueName}-memo`);
    const events = runEventsFor(deps.queue);
    let sweeper: MemoSweeper | undefined;
    this.#core = {
      queue: deps.queue,
      queueName: s.queueName,
      memos,
      runner: deps.runner,
      hook: deps.hook,
      clock: s.clock ?? deps.queue.clock,
      stepOutputReplay: s.stepOutputReplay,
      memoRetentionMs: s.memoRetentionMs,
      pollIntervalMs: s.pollIntervalMs,
      maxConcurrentSteps: s.maxConcurrentSteps,
      leaseMs: s.leaseMs,
      terminal: { queueName: s.queueName, hook: deps.hook, memoRetentionMs: s.memoRetentionMs },
      events,
      submitLock: submitLockFor(deps.queue),
      noteTerminated: (runId, at) => {
        if (s.memoRetentionMs !== undefined) sweeper?.noteMarker(at + s.memoRetentionMs);
        events.terminated(runId);
      },
    };
    sweeper = new MemoSweeper(this.#core);
    this.#sweeper = sweeper;
    this.#view = new WorkflowView({ kvGet: (k) => deps.queue.kvGet(k), job: (id) => deps.queue.view().job(id) }, memos);
    this.#logger = s.logger;
  }

  /** The step queue's name. */
  get queueName(): string {
    return this.#core.queueName;
  }

  /** The memo store the runtime writes to. */
  get memoStore(): MemoStore {
    return this.#core.memos;
  }

  /** Read-only queries over the queue and memo store this runtime writes to. */
  view(): WorkflowView {
    return this.#view;
  }

  /**
   * Submits a run: enqueues step 0 with `spec.input`. Idempotent on
   * `(runId, input)`: a duplicate of an active run returns
   * `newlySubmitted: false`; a different input throws `InputMismatchError`.
   */
  submit(spec: RunSpec): Promise<SubmitOutcome> {
    return submitRun(this.#core, spec);
  }

  /** The run's status from its durable records; `null` for an unknown run. */
  status(runId: RunId | string): Promise<RunStatus | null> {
    return this.#view.status(runId);
  }

  /** The committed outcome of a terminated run, or `null`. */
  outcome(runId: RunId | string): Promise<RunOutcome | null> {
    return this.#view.outcome(runId);
  }

  /**
   * Waits until the run terminates and reports its end, following its
   * current step across steps. Throws `RunNotFoundError` for a run with no
   * record (never submitted, or terminated and swept).
   */
  async wait(runId: RunId | string): Promise<RunEnd> {
    return (await this.#wait(RunId.parse(runId), undefined))!;
  }

  /** {@link WorkflowRuntime.wait} bounded by `timeoutMs`; `null` when the timeout elapses first. */
  waitTimeout(runId: RunId | string, timeoutMs: number): Promise<RunEnd | null> {
    if (!Number.isFinite(timeoutMs) || timeoutMs < 0) throw new ValidationError(`waitTimeout takes a timeout >= 0 ms, got ${timeoutMs}`);
    return this.#wait(RunId.parse(runId), this.#core.clock.now() + timeoutMs);
  }

  async #wait(runId: RunId, deadline: number | undefined): Promise<RunEnd | null> {
    const core = this.#core;
    const stop = new AbortController();
    try {
      for (;;) {
        // Subscribe before reading, so a termination between the read and the wait is not missed.
        const sub = core.events.next(runId);
        try {
          const r = await this.#view.records(runId);
          if (r.kind === "terminated") return { termination: terminationOf(r.terminal), outcome: await this.#view.outcomeOf(r.terminal) };
          if (r.kind === "unknown") throw new RunNotFoundError(runId);
          const now = core.clock.now();
          if (deadline !== undefined && now >= deadline) return null;
          // Every termination in this process (worker, cancel, reconciliation, any runtime over
          // this queue) is announced; the poll interval only bounds how late a termination
          // committed without an announcement (another process's) is noticed.
          const slice = deadline === undefined ? core.pollIntervalMs : Math.min(core.pollIntervalMs, deadline - now);
          await Promise.race([sub.promise, core.clock.waitUntil(now + slice, stop.signal).catch(() => undefined)]);
        } finally {
          sub.dispose();
        }
      }
    } finally {
      stop.abort();
    }
  }

  /**
   * Requests cancellation of an active run. `true` once the request is
   * recorded; `false` for an unknown or terminated run, or one whose step
   * the queue dead-lettered outside the worker.
   */
  cancel(runId: RunId | string): Promise<boolean> {
    return cancelRun(this.#core, this.#view, runId);
  }

  /** Delivers a signal for `correlationKey`, or buffers it durably for the next waiter. */
  signal(correlationKey: string, payload: Uint8Array): Promise<SignalOutcome> {
    return sendSignal(this.#core, correlationKey, payload);
  }

  /** Discards the buffered signal of `correlationKey`; `true` when one was removed. */
  clearSignal(correlationKey: string): Promise<boolean> {
    return clearBufferedSignal(this.#core, correlationKey);
  }

  /** Runs one memo-retention sweep now; returns how many runs it swept. */
  sweepMemos(): Promise<number> {
    return this.#sweeper.sweep();
  }

  /** Terminates every run whose current step the queue dead-lettered outside the worker; returns how many. */
  reconcileDeadSteps(): Promise<number> {
    return this.#reconcileLock.run("all", () => reconcileAllDead(this.#core, this.#view, new AbortController().signal));
  }

  /**
   * Drives the step worker until `shutdown` resolves (or aborts): up to
   * `maxConcurrentSteps` step processors, dead-step reconciliation and,
   * with memo retention, the memo sweeper. In-flight steps finish before it
   * resolves.
   */
  async run(shutdown?: Shutdown): Promise<void> {
    const core = this.#core;
    const stop = new AbortController();
    if (shutdown instanceof AbortSignal) {
      if (shutdown.aborted) stop.abort();
      else shutdown.addEventListener("abort", () => stop.abort(), { once: true });
    } else if (shutdown !== undefined) {
      shutdown.then(
        () => stop.abort(),
        () => stop.abort(),
      );
    }
    const reconcile = (jobId: string) =>
      this.#reconcileLock
        .run("all", () => reconcileDeadJob(core, this.#view, jobId))
        .catch((e: unknown) => this.#logger.error({ err: e, jobId }, "dead-step reconciliation failed; it is retried at the next start"));
    const unsubscribe = core.queue.onDeadLettered((e) => {
      if (e.queueName === core.queueName) void reconcile(e.jobId);
    });
    const tasks: Promise<void>[] = [];
    tasks.push(
      this.reconcileDeadSteps().then(
        () => undefined,
        (e: unknown) => this.#logger.error({ err: e }, "dead-step reconciliation at start failed"),
      ),
    );
    if (core.memoRetentionMs !== undefined) tasks.push(this.#sweepLoop(stop.signal));
    try {
      await runStepWorker(core, stop.signal, this.#logger);
    } finally {
      stop.abort();
      unsubscribe();
      await Promise.allSettled(tasks);
    }
  }

  async #sweepLoop(signal: AbortSignal): Promise<void> {
    const core = this.#core;
    while (!signal.aborted && !core.queue.closed) {
      try {
        await this.#sweeper.sweep();
      } catch (e) {
        this.#logger.error({ err: e }, "memo retention sweep failed; retrying at the next poll interval");
      }
      try {
        await core.clock.waitUntil(core.clock.now() + core.pollIntervalMs, signal);
      } catch {
        return;
      }
    }
  }

  /** Runs {@link WorkflowRuntime.run} in the background and returns a handle for graceful shutdown. */
  spawn(shutdown?: Shutdown): RunnerHandle {
    const stop = new AbortController();
    if (shutdown instanceof AbortSignal) {
      if (shutdown.aborted) stop.abort();
      else shutdown.addEventListener("abort", () => stop.abort(), { once: true });
    } else if (shutdown !== undefined) {
      shutdown.then(
        () => stop.abort(),
        () => stop.abort(),
      );
    }
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
