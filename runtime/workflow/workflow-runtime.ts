/**
 * @module `WorkflowRuntime`: durable runs of a `StepRunner` over a queue.
 *
 * Everything a run is lives in the queue's store (run record, step pointer,
 * step jobs, terminal record, signals) or in the memo store, so every query
 * and command works after a restart and from any runtime over the same
 * queue and step queue (`queueName`, which scopes every record: see
 * `kv-keys`). The runtime object itself holds only configuration and
 * in-process wake-ups.
 */
import { ConstructionGate } from "../internal-construction.js";
import { cancellableCall, type CancellableCall, timedClock } from "../clock.js";
import type { ObjectStore } from "../store/object-store.js";
import type { AppliedMark } from "./records/applied-mark.js";
import { cancelRun } from "./runs/cancel.js";
import type { StepRunner } from "./steps/delivery.js";
import { MemoStore } from "./memo/memo.js";
import { memoSweeperFor, type MemoSweeper } from "./memo/memo-sweeper.js";
import { finishOwedMemoClears } from "./memo/memo-owed.js";
import { terminalMarkersFor } from "./runs/terminal.js";
import type { WorkflowQueue } from "./queue-port.js";
import { reconcileAllDead, reconcileDeadJob } from "./runs/reconcile.js";
import { RunId } from "./runs/run-id.js";
import { checkRoutesHere } from "./runs/shard-placement.js";
import { KeyedLock, type RunWait } from "./runs/run-events.js";
import { WaitPoll } from "./runs/wait-poll.js";
import type { RetryOutcome, RetryRunOptions, RunEnd, RunOutcome, RunSpec, RunStatus, SignalOutcome, SubmitOutcome } from "./runs/run-types.js";
import type { ListRunsOptions, RunPage } from "./runs/run-listing.js";
import type { RunHistory } from "./runs/run-history.js";
import type { GroupPage, ListGroupsOptions } from "./groups/group-listing.js";
import { runEventsFor, signalLockFor, submitLockFor, type RuntimeCore } from "./runtime-core.js";
import { clearBufferedSignal, sendSignal } from "./signals/signals.js";
import { runStepWorker } from "./steps/step-worker.js";
import type { FullLogger } from "../logger.js";
import { submitRun, submitUnderDrawnId } from "./runs/submit.js";
import { backfillRunIndex } from "./runs/backfill.js";
import { retryRun } from "./runs/redrive.js";
import { repairRun, type RepairOutcome, type RepairRunOptions } from "./runs/repair.js";
import type { SettlementEffects } from "../queue/effects.js";
import type { KvKeyRef } from "../queue/user-keys.js";
import type { TerminalHook } from "./terminal-hook/terminal-hook.js";
import { RunNotFoundError } from "./workflow-errors.js";
import { WorkflowView } from "./runs/workflow-view.js";
import { checkGroupMember } from "./limits.js";
import { backoffMs, isStoreFault, sleep, STORE_RETRY } from "./store-retry.js";
import { validateDelay } from "../time-bounds.js";
import { WorkflowRuntimeBuilder, type BuilderState } from "./runtime-builder.js";
import type { RunGroup } from "./groups/run-group.js";
import { RunGroups } from "./groups/run-groups.js";
import { closeTimeout, repeatEvery, spawnWorker, stopOn, WorkerSet, type CloseOptions, type RunnerHandle, type Shutdown } from "./worker-lifecycle.js";
import { ClosedError } from "../errors.js";
import { SCHEDULES_GATE, Schedules } from "./schedules/schedules.js";

export type { CloseOptions, RunnerHandle, Shutdown } from "./worker-lifecycle.js";

/**
 * How long a `wait` (or a job's `result()`) may wait, with no worker
 * running in this process over its step queue, before it logs a warning:
 * nothing in this process can end the run then.
 */
export const NO_WORKER_WARNING_MS = 10_000;

/** The abort reason that ends one round of a wait's timers; never seen by callers. */
const WAIT_ROUND_OVER = new Error("wait round over");

/** `new WorkflowRuntime` is internal: use WorkflowRuntime.builder(queue, store, runner, hook).build() (see internal-construction.ts). */
export const RUNTIME_GATE = new ConstructionGate("WorkflowRuntime", "use WorkflowRuntime.builder(queue, store, runner, hook).build()");

/** @internal See `WorkflowRuntime.marked`. */
export interface MarkedCommands {
  submit(spec: RunSpec, mark: AppliedMark<SubmitOutcome>): Promise<SubmitOutcome>;
  /** A submission under a run id its submitter drew (see `submitUnderDrawnId`). */
  submitDrawn(spec: RunSpec, mark: AppliedMark<SubmitOutcome> | undefined): Promise<SubmitOutcome>;
  signal(correlationKey: string, payload: Uint8Array, mark: AppliedMark<SignalOutcome>): Promise<SignalOutcome>;
  clearSignal(correlationKey: string, mark: AppliedMark<boolean>): Promise<boolean>;
  cancel(runId: RunId | string, mark: AppliedMark<boolean>): Promise<boolean>;
  retry(runId: RunId | string, opts: RetryRunOptions, mark: AppliedMark<RetryOutcome> | undefined, extra?: SettlementEffects): Promise<RetryOutcome>;
  repair(runId: RunId | string, opts: RepairRunOptions, mark: AppliedMark<RepairOutcome>): Promise<RepairOutcome>;
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
  /** The one poll timer of this runtime's waits without a deadline. */
  readonly #poll: WaitPoll;
  readonly #sweeper: MemoSweeper;
  readonly #logger: FullLogger;
  readonly #reconcileLock = new KeyedLock();
  readonly #groups: RunGroups;
  readonly #workers = new WorkerSet();
  readonly #schedules: Schedules;
  #closing: Promise<void> | undefined;
  #warnedNoWorker = false;

  /** Starts configuring a runtime over `queue`, with memo entries in `store`. */
  static builder(queue: WorkflowQueue, store: ObjectStore, runner: StepRunner, hook: TerminalHook): WorkflowRuntimeBuilder {
    return new WorkflowRuntimeBuilder(queue, store, runner, hook);
  }

  /** @internal Use the builder. */
  constructor(deps: { queue: WorkflowQueue; store: ObjectStore; runner: StepRunner; hook: TerminalHook }, s: BuilderState) {
    RUNTIME_GATE.check();
    const memos = new MemoStore(deps.store, s.memoPrefix ?? `${s.queueName}-memo`);
    const events = runEventsFor(deps.queue);
    let sweeper: MemoSweeper | undefined;
    this.#core = {
      queue: deps.queue,
      queueName: s.queueName,
      memos,
      runner: deps.runner,
      hook: deps.hook,
      clock: s.clock === undefined ? deps.queue.clock : timedClock(s.clock),
      stepOutputReplay: s.stepOutputReplay,
      memoRetentionMs: s.memoRetentionMs,
      parentClose: s.parentClose,
      pollIntervalMs: s.pollIntervalMs,
      maxConcurrentSteps: s.maxConcurrentSteps,
      leaseMs: s.leaseMs,
      terminal: {
        queueName: s.queueName,
        hook: deps.hook,
        memoRetentionMs: s.memoRetentionMs,
        markers: terminalMarkersFor(s.queueName),
        commits: deps.queue,
      },
      events,
      log: s.logger,
      sensitiveHeaders: new Set((deps.runner.sensitiveHeaders ?? []).map((h) => h.toLowerCase())),
      submitLock: submitLockFor(deps.queue),
      signalLock: signalLockFor(deps.queue),
      // Set just below, once the view over this core's queue exists.
      view: undefined as unknown as WorkflowView,
      placement: deps.queue.shard,
      stepKv: { get: (key) => deps.queue.kvGet(key) },
      noteTerminated: (runId, at) => {
        if (s.memoRetentionMs !== undefined) sweeper?.noteMarker(at + s.memoRetentionMs);
        events.terminated(runId);
      },
    };
    sweeper = memoSweeperFor(this.#core);
    this.#sweeper = sweeper;
    this.#poll = new WaitPoll(this.#core.clock, s.pollIntervalMs);
    this.#view = new WorkflowView(
      {
        kvGet: (k) => deps.queue.kvGet(k),
        ...(deps.queue.kvBorrowNow === undefined ? {} : { kvBorrowNow: (k: string | KvKeyRef) => deps.queue.kvBorrowNow!(k) }),
        ...(deps.queue.kvTokenNow === undefined ? {} : { kvTokenNow: (k: string | KvKeyRef) => deps.queue.kvTokenNow!(k) }),
        ...(deps.queue.kvKeyRef === undefined ? {} : { kvKeyRef: (k: string) => deps.queue.kvKeyRef!(k) }),
        job: (id) => deps.queue.view().job(id),
        kvScan: (prefix, opts) => deps.queue.kvScan(prefix, opts),
        attemptHistory: (id) => deps.queue.view().attemptHistory(id),
        durable: () => deps.queue.flush(),
      },
      memos,
      s.queueName,
    );
    (this.#core as { view: WorkflowView }).view = this.#view;
    this.#logger = s.logger;
    this.#groups = new RunGroups({
      queue: deps.queue,
      queueName: s.queueName,
      memos,
      clock: this.#core.clock,
      events,
      view: this.#view,
      pollIntervalMs: s.pollIntervalMs,
      retentionMs: s.groupRetentionMs,
      placement: deps.queue.shard,
      submitMember: (tag, key, spec, groupId) => this.submitGroupMember(tag, key, spec, groupId),
      cancel: (runId) => this.cancel(runId),
    });
    const view = this.#view;
    this.#schedules = SCHEDULES_GATE.build(
      () =>
        new Schedules({
          core: this.#core,
          submit: (spec, effects) => submitRun(this.#core, spec, undefined, undefined, undefined, effects),
          isActive: async (runId) => {
            const st = await view.status(runId);
            return st !== null && st.state !== "terminated";
          },
          isKnown: async (runId) => (await view.status(runId)) !== null,
          inputTimeoutMs: s.scheduleInputTimeoutMs,
        }),
    );
  }

  /**
   * The cron schedules of this runtime's step queue (see docs/schedules.md):
   * `upsert`, `list`, `pause`, `resume`, `trigger`, `backfill`, `remove`.
   * Ticks are decided by a running worker (`run` / `spawn`).
   */
  get schedules(): Schedules {
    return this.#schedules;
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
   * On a shard of a sharded store, a run id of another shard is a
   * `ValidationError` (submit it through a `TaqubaClient`), and a
   * generated id routes to this shard.
   */
  async submit(spec: RunSpec): Promise<SubmitOutcome> {
    return submitRun(this.#core, this.#onThisShard(spec));
  }

  /**
   * On a shard, a run submitted here must be one clients route here: a
   * caller-chosen id of another shard is refused, and a generated id is
   * suffixed to route here (as a child run's is).
   */
  #onThisShard(spec: RunSpec): RunSpec {
    const placement = this.#core.placement;
    if (placement === undefined || placement.shards <= 1 || spec === null || typeof spec !== "object") return spec;
    // A drawn id is drawn by the submission, routed here, and drawn again should a record hold it.
    if (spec.runId === undefined) return spec;
    const runId = RunId.parse(spec.runId);
    checkRoutesHere(runId, placement, `run "${runId}"`);
    return spec;
  }

  /**
   * @internal For run groups: submits `spec` as member `key` of group
   * `groupId`. The member record `workflow/groups/{groupId}/{key}` is written
   * with the step-0 enqueue and rewritten (status, error) by whichever
   * settlement terminates the run. Idempotent like `submit`.
   */
  async submitGroupMember(groupId: string, key: string, spec: RunSpec, displayId?: string): Promise<SubmitOutcome> {
    checkGroupMember(groupId, key, displayId);
    return await submitRun(this.#core, spec, { id: groupId, key }, undefined, displayId);
  }

  /** The run group `id`: a durable set of runs (see `RunGroup`). Naming a group writes nothing. */
  group(id: string): RunGroup {
    return this.#groups.group(id);
  }

  /** A run group with a fresh ULID id. */
  newGroup(): RunGroup {
    return this.#groups.newGroup();
  }

  /** Runs one group-retention sweep now; returns how many groups it removed. */
  sweepGroups(): Promise<number> {
    return this.#groups.sweep();
  }

  /** @internal The runtime's run groups, for layers that keep per-member state (typed jobs). */
  get runGroups(): RunGroups {
    return this.#groups;
  }

  /**
   * The run's status from its durable records; `null` for an unknown run.
   * Answers only with what is durable: when a commit the read saw (a
   * termination, say) is still being written, it waits for that write, so a
   * crash cannot undo a reported state. Runs are those of this runtime's
   * step queue (`queueName`).
   */
  status(runId: RunId | string): Promise<RunStatus | null> {
    return this.#view.status(runId);
  }

  /**
   * The committed outcome of a terminated run, durable like
   * {@link WorkflowRuntime.status}: for every ended run, including one
   * ended without a worker (a cancel of a waiting step, a dead-lettered
   * step, a debounce), whose outcome is its termination. `null` while the
   * run is active, for an unknown run, and when its worker's result record
   * was removed.
   */
  outcome(runId: RunId | string): Promise<RunOutcome | null> {
    return this.#view.outcome(runId);
  }

  /**
   * Waits until the run terminates and reports its end, following its
   * current step across steps. Throws `RunNotFoundError` for a run with no
   * record (never submitted, or terminated and swept). Reports a
   * termination only once it is durable.
   */
  wait(runId: RunId | string): Promise<RunEnd> {
    // The wait's own promise, not an async frame around it; a bad id still rejects rather than throws.
    try {
      return this.#wait(RunId.parse(runId), undefined) as Promise<RunEnd>;
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** {@link WorkflowRuntime.wait} bounded by `timeoutMs`; `null` when the timeout elapses first. */
  async waitTimeout(runId: RunId | string, timeoutMs: number): Promise<RunEnd | null> {
    // Async: a bad argument rejects the promise, as every other call does, instead of throwing at the call.
    validateDelay("waitTimeout's timeout", timeoutMs);
    return this.#wait(RunId.parse(runId), this.#core.clock.now() + timeoutMs);
  }

  async #wait(runId: RunId, deadline: number | undefined): Promise<RunEnd | null> {
    const core = this.#core;
    let faults = 0;
    const started = core.clock.now();
    // The first round reads only whether the run's records are records; every later round decodes
    // them, so a field damaged inside a well-formed record ends the wait with the error instead of a
    // wait for ever (a poll round every poll interval: its decode costs nothing that matters).
    let firstRound = true;
    for (;;) {
      // The round's subscription to the run's end: a round whose read in this turn finds the run ended makes none.
      let sub: RunWait | undefined;
      // Made only when this round waits: most waits find the run terminated on the first read.
      // A wait without a deadline joins the runtime's one poll instead of arming a timer of its own.
      let tick: CancellableCall | undefined;
      let faultTick: AbortController | undefined;
      try {
        // Reads retry store faults in place; one that still fails is waited out like an
        // active run (a wait has no reason to give up while the store is away), until the deadline.
        let fault: unknown;
        try {
          // Read in this turn when the view can: no promise and no turn per round, and on the first
          // round an active run's records not decoded (a wait reads nothing of them). Such a read
          // subscribes after it, in the same turn, so no termination is announced between the two
          // (and the round after a wake, which most often finds the run ended, subscribes not at
          // all); a read that is awaited subscribes before it, so a termination announced while it
          // reads is not missed.
          let r = firstRound ? this.#view.phaseNow(runId) : this.#view.stateNow(runId);
          firstRound = false;
          if (r === undefined) {
            sub = core.events.next(runId);
            r = await this.#view.state(runId);
          }
          // Answer only from what is durable: a termination still in flight is not reported yet.
          if (r.kind !== "active") {
            const durable = this.#view.durableAfter(runId, r);
            if (durable !== undefined) await durable;
          }
          if (r.kind === "terminated") {
            this.#view.readDurable(runId, r.terminal);
            return this.#view.endNow(r.terminal) ?? (await this.#view.endOf(r.terminal));
          }
          if (r.kind === "unknown") throw new RunNotFoundError(runId);
        } catch (e) {
          fault = this.#waitedFault(e, runId);
        }
        const now = core.clock.now();
        if (deadline !== undefined && now >= deadline) {
          if (fault !== undefined) throw fault;
          return null;
        }
        // Nothing more terminates once the queue closed or its engine failed: settle with why.
        const closed = core.events.closedError;
        if (closed !== undefined) throw closed;
        if (now - started >= NO_WORKER_WARNING_MS) this.warnIfNoWorker(`waiting for run "${runId}"`);
        // Every termination in this process (worker, cancel, reconciliation, any runtime over
        // this queue) is announced; the poll interval only bounds how late a termination
        // committed without an announcement (by another process) is noticed.
        // After a read in this turn that found the run active, still in that turn: nothing was announced
        // since. After a fault the read is made again within the fault's backoff.
        sub ??= core.events.next(runId);
        // The poll's timer wakes the same promise a termination does: one promise per round, nothing raced.
        if (deadline === undefined) this.#poll.join(sub);
        else tick = cancellableCall(core.clock, now + Math.min(core.pollIntervalMs, deadline - now), sub.wake);
        // After a fault, read again within about a second of real time, whatever clock the runtime runs on.
        if (fault !== undefined) faultTick = faultRetry(sub, ++faults);
        await sub.promise;
      } finally {
        if (sub !== undefined) {
          sub.dispose();
          this.#poll.leave(sub);
        }
        // Drop this round's timers at once rather than letting them run out (with a
        // shared reason: a default one is a DOMException, with a stack, per round).
        tick?.cancel();
        faultTick?.abort(WAIT_ROUND_OVER);
      }
    }
  }

  /** `e`, a wait's read failure, when it is a store fault the wait waits out (logged); thrown otherwise. */
  #waitedFault(e: unknown, runId: RunId): unknown {
    if (!isStoreFault(e) || e instanceof RunNotFoundError) throw e;
    this.#logger.error({ err: e, runId }, "wait could not read the run (store fault); reading again at the next poll");
    return e;
  }

  /**
   * @internal Logs, once per runtime, that `what` has waited
   * {@link NO_WORKER_WARNING_MS} with no worker running over the step queue
   * in this process, so a wait that cannot end says so instead of hanging
   * silently.
   */
  warnIfNoWorker(what: string): void {
    const core = this.#core;
    if (this.#warnedNoWorker || core.events.hasWorker(core.queueName)) return;
    this.#warnedNoWorker = true;
    const msg =
      `${what} for ${NO_WORKER_WARNING_MS / 1000} s, but no worker runs over step queue "${core.queueName}" in this process: ` +
      "start one with runtime.spawn() (or runner.spawn()), or the run waits until another process owning the store runs it";
    if (this.#logger.warn) this.#logger.warn({ queueName: core.queueName }, msg);
    else console.warn(msg);
  }

  /**
   * Requests cancellation of an active run. `true` once the request is
   * recorded; `false` for an unknown or terminated run, or one whose step
   * the queue dead-lettered outside the worker.
   */
  cancel(runId: RunId | string): Promise<boolean> {
    return cancelRun(this.#core, this.#view, runId);
  }

  /** One page of this step queue's runs, newest first (see {@link WorkflowView.listRuns}). */
  listRuns(opts?: ListRunsOptions): Promise<RunPage> {
    return this.#view.listRuns(opts);
  }

  /** The run's history step by step, or `null` for an unknown run (see {@link WorkflowView.inspectRun}). */
  inspectRun(runId: RunId | string): Promise<RunHistory | null> {
    return this.#view.inspectRun(runId);
  }

  /** One page of this step queue's run groups with member counts (see {@link WorkflowView.listGroups}). */
  listGroups(opts?: ListGroupsOptions): Promise<GroupPage> {
    return this.#view.listGroups(opts, this.#core.placement);
  }

  /**
   * Re-opens a failed or cancelled run at the step it ended at (or
   * `opts.fromStep`), with the payload that step last ran with, keeping its
   * memo. Throws `RunNotRetryableError` for an active or succeeded run, or
   * a step whose payload is not kept, and `RunNotFoundError` for an unknown
   * run; nothing changes then.
   */
  retryRun(runId: RunId | string, opts: RetryRunOptions = {}): Promise<RetryOutcome> {
    return retryRun(this.#core, this.#view, runId, opts);
  }

  /**
   * Mends a run whose records are damaged (see `runs/repair`): an active
   * run ends failed with an error saying it was repaired, an ended run's
   * unreadable end record is rewritten as failed, a listing entry is
   * rewritten. `dryRun` says what it would do and writes nothing. Throws
   * `RunNotDamagedError` for a run whose records read (cancel or retry it)
   * and `RunNotFoundError` for a run with no records.
   */
  repairRun(runId: RunId | string, opts: RepairRunOptions = {}): Promise<RepairOutcome> {
    return repairRun(this.#core, runId, opts);
  }

  /** Delivers a signal for `correlationKey`, or buffers it durably for the next waiter. */
  signal(correlationKey: string, payload: Uint8Array): Promise<SignalOutcome> {
    return sendSignal(this.#core, correlationKey, payload);
  }

  /**
   * @internal The commands with an applied mark (see `applied-mark`): the
   * commit that decides each answer also writes the mark, for the client
   * inbox, which applies each request exactly once across crashes.
   */
  get marked(): MarkedCommands {
    const core = this.#core;
    return {
      submit: (spec, mark) => submitRun(core, spec, undefined, mark),
      submitDrawn: (spec, mark) => submitUnderDrawnId(core, spec, mark),
      signal: (key, payload, mark) => sendSignal(core, key, payload, mark),
      clearSignal: (key, mark) => clearBufferedSignal(core, key, mark),
      cancel: (runId, mark) => cancelRun(core, this.#view, runId, mark),
      retry: (runId, opts, mark, extra) => retryRun(core, this.#view, runId, opts, mark, extra),
      repair: (runId, opts, mark) => repairRun(core, runId, opts, mark),
    };
  }

  /** Discards the buffered signal of `correlationKey`; `true` when one was removed. */
  clearSignal(correlationKey: string): Promise<boolean> {
    return clearBufferedSignal(this.#core, correlationKey);
  }

  /**
   * Runs one memo-retention sweep now (after one in progress); returns how
   * many runs it swept: every run whose end committed before the call and
   * whose retention ran out.
   */
  sweepMemos(): Promise<number> {
    return this.#sweeper.sweepAll();
  }

  /** Terminates every run whose current step the queue dead-lettered outside the worker; returns how many. */
  reconcileDeadSteps(): Promise<number> {
    return this.#reconcileLock.run("all", () => reconcileAllDead(this.#core, this.#view, new AbortController().signal));
  }

  /**
   * Drives the step worker until `shutdown` resolves (or aborts): up to
   * `maxConcurrentSteps` step processors, dead-step reconciliation and,
   * with memo retention, the memo sweeper. In-flight steps finish before it
   * resolves. Rejects before claiming anything when the runner's
   * `beforeStart` does (`ContractTooOldError` from a generated dispatcher).
   */
  run(shutdown?: Shutdown): Promise<void> {
    if (this.#workers.closing) return Promise.reject(new ClosedError("this workflow runtime"));
    return this.#workers.track(shutdown, (signal) => this.#core.events.withWorker(this.#core.queueName, () => this.#run(signal)));
  }

  async #run(shutdown: AbortSignal): Promise<void> {
    const core = this.#core;
    const stop = stopOn(shutdown);
    // The runner may refuse to start (a worker older than the store's contracts): nothing runs then.
    await core.runner.beforeStart?.({ queue: core.queue, queueName: core.queueName });
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
    tasks.push(
      backfillRunIndex(core, stop.signal).then(
        () => undefined,
        (e: unknown) => this.#logger.error({ err: e }, "run index backfill failed; it goes on at the next start"),
      ),
    );
    tasks.push(
      finishOwedMemoClears(core, stop.signal).then(
        () => undefined,
        (e: unknown) => this.#logger.error({ err: e }, "the memo clears owed by removals failed; they go on at the next start"),
      ),
    );
    if (core.memoRetentionMs !== undefined) tasks.push(this.#sweepLoop(stop.signal));
    tasks.push(
      this.#schedules.run(stop.signal).catch((e: unknown) => {
        this.#logger.error({ err: e }, "the scheduler stopped on an error; schedules tick again at the next start");
      }),
    );
    if (this.#groups.retains) {
      tasks.push(
        this.#groups.sweepLoop(stop.signal, (e) => this.#logger.error({ err: e }, "group retention sweep failed; retrying at the next poll interval")),
      );
    }
    const where = { queue: core.queueName, maxConcurrentSteps: core.maxConcurrentSteps };
    this.#logger.info(where, "workflow worker started");
    try {
      await runStepWorker(core, stop.signal, this.#logger);
    } finally {
      stop.abort();
      unsubscribe();
      await Promise.allSettled(tasks);
      this.#logger.info(where, "workflow worker stopped");
    }
  }

  #sweepLoop(signal: AbortSignal): Promise<void> {
    const core = this.#core;
    return repeatEvery(
      { clock: core.clock, intervalMs: core.pollIntervalMs, queue: core.queue },
      signal,
      () => this.#sweeper.sweep(signal),
      (e) => this.#logger.error({ err: e }, "memo retention sweep failed; retrying at the next poll interval"),
    );
  }

  /** Runs {@link WorkflowRuntime.run} in the background and returns a handle for graceful shutdown. */
  spawn(shutdown?: Shutdown): RunnerHandle {
    return spawnWorker((signal) => this.run(signal), shutdown);
  }

  /**
   * The one way to stop: stops every worker this runtime started and lets
   * in-flight steps finish (at most `timeoutMs`, default 10 s), then closes
   * the queue. Every pending `wait`, job `result()` and group `results()`
   * then rejects with `ClosedError`, and no timer of the runtime or queue
   * keeps the process alive. Idempotent; `await using` calls it too.
   */
  close(opts?: CloseOptions): Promise<void> {
    const timeoutMs = closeTimeout(opts);
    this.#closing ??= (async () => {
      const drained = await this.#workers.stopAll(timeoutMs);
      if (!drained) {
        this.#logger.error(
          { queueName: this.#core.queueName, timeoutMs },
          `in-flight steps did not finish within ${timeoutMs} ms of close(); closing the queue anyway: their claims are recovered at the next open`,
        );
      }
      await this.#core.queue.close();
    })();
    return this.#closing;
  }

  /** `await using runtime = ...` closes the runtime (see {@link WorkflowRuntime.close}). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** Wakes wait round `sub` after the backoff of its `faults`-th store fault in a row (real time, whatever the runtime's clock); abort the controller to drop it. */
function faultRetry(sub: RunWait, faults: number): AbortController {
  const faultTick = new AbortController();
  sleep(backoffMs(STORE_RETRY, faults), faultTick.signal).then(sub.wake, () => undefined);
  return faultTick;
}
