/**
 * @module `TaqubaClient`: submit, signal, cancel, read and wait on runs
 * from any process, while one other process owns the store.
 *
 * The engine has one writer. A client never opens it: it writes each
 * command as a request object in the store's inbox (create-if-absent under
 * a fresh ULID, so a retried write lands once), and the owner
 * (`serveClients`) applies it and answers in the store (see
 * `inbox-server`). Reads go through a read-only view of the owner's
 * durable state (`QueueReader`), refreshed on every read.
 *
 * Bad input is refused here, before anything is written, with the same
 * checks and errors as the runtime's.
 */
import { ConstructionGate } from "../internal-construction.js";
import { setMaxListeners } from "node:events";
import { decodeTime } from "ulid";
import { ClosedError, PreconditionFailedError, StoreUnavailableError, TaqubaError, ValidationError } from "../errors.js";
import type { ShardPlacement } from "../workflow/runs/shard-placement.js";
import type { HeaderValues, JobDefinition, JobHandle, JobSubmitOptions } from "../contract/job-definition.js";
import { RunnerJobHandle, type JobReader } from "../jobs/job-handle.js";
import { readJobOutcome } from "../jobs/job-results.js";
import type { PreparedJob } from "../typed/job-runner.js";
import { preparePayload, prepareRunOptions, withFlow, type AnyDefinition } from "../jobs/job-submission.js";
import type { KvOp } from "../queue/effects.js";
import { validateQueueName, validateStoreName } from "../queue/names.js";
import { checkRecountOptions, type RecountStatsOptions, type StatsRecount } from "../queue/stats-recount.js";
import { PrefixedStore } from "../queue/prefixed-store.js";
import { QueueReader } from "../queue/reader.js";
import type { ObjectStore } from "../store/object-store.js";
import type { Clock } from "../clock.js";
import { openStore } from "../store/open-store.js";
import { bytesAtCall } from "../workflow/bytes-at-call.js";
import { MemoStore } from "../workflow/memo/memo.js";
import { RunId } from "../workflow/runs/run-id.js";
import { checkRepairOptions, setRepairOptions, type RepairOutcome, type RepairRunOptions } from "../workflow/runs/repair.js";
import type { RetryOutcome, RetryRunOptions, RunEnd, RunOutcome, RunSpec, RunStatus, SignalOutcome, SubmitOutcome } from "../workflow/runs/run-types.js";
import type { ListRunsOptions, RunPage } from "../workflow/runs/run-listing.js";
import type { RunHistory } from "../workflow/runs/run-history.js";
import type { GroupPage, ListGroupsOptions } from "../workflow/groups/group-listing.js";
import type { ListJobRunsOptions } from "../jobs/job-listing.js";
import { listJobRuns } from "../jobs/job-redrive.js";
import { checkRetryOptions } from "../workflow/runs/redrive.js";
import { checkListOptions } from "../workflow/runs/run-rows.js";
import { checkCorrelationKey } from "../workflow/limits.js";
import { checkEffects, checkRunOptions, checkUserHeaders, runInputAtCall } from "../workflow/runs/submit.js";
import { readRunSpec, refuseUnknownRunSpecFields } from "../workflow/runs/run-option-fields.js";
import { RunNotFoundError } from "../workflow/workflow-errors.js";
import { DEFAULT_STEP_QUEUE, WorkflowView } from "../workflow/runs/workflow-view.js";
import { TimeoutError } from "./client-errors.js";
import { answerPollIntervals, awaitAnswer } from "./answer-poll.js";
import { answerKey, answersPrefix, requestIds, requestKey } from "./inbox-layout.js";
import {
  decodeAnswer,
  encodeRequest,
  MalformedRequestError,
  rebuildError,
  type AnswerValue,
  type InboxAnswer,
  type InboxRequest,
  type ScheduleRequest,
} from "./request-codec.js";
import { watchPrefixes } from "./store-watch.js";
import { keyedJobRunId } from "../jobs/job-codec.js";
import { readShardLayout, shardOfRun, shardOfSchedule, shardOfSignal, shardStoreName, stableHash } from "./shard-route.js";
import { checkScheduleId } from "../workflow/schedules/schedule-record.js";
import type { ScheduleFire, ScheduleInfo } from "../workflow/schedules/schedule-types.js";
import { BACKFILL_PART_TICKS, type BackfillPart } from "../workflow/schedules/schedules.js";
import { validateDelay, validateInstant } from "../time-bounds.js";
import { checkMemoPrefix } from "../workflow/runtime-builder.js";
import { ClientGroup, ClientJobGroup, GROUP_GATE, JOB_GROUP_GATE, type GroupPort } from "./client-group.js";
import { mergeGroupPages, mergeRunPages } from "./shard-listing.js";
import { scanOf } from "../workflow/runs/list-runs.js";
import { DEFAULT_GROUP_LIMIT } from "../workflow/groups/group-index.js";
import { callerField, checkOptionalMs, describeValue, hasMethods, isOptionObject, NO_OPTIONS, optionFields, readExactOptions } from "../option-values.js";
import { checkStoreArg } from "../store/store-check.js";

/** Default time a command waits for the owner's answer. */
export const DEFAULT_CLIENT_TIMEOUT_MS = 30_000;
/** Default and lowest poll interval of reads and waits on a store without change notification (S3). */
export const DEFAULT_CLIENT_POLL_MS = 1000;
export const MIN_CLIENT_POLL_MS = 200;
/** Poll interval on a local directory, where `fs.watch` wakes waiters and polling only covers a missed event. */
const LOCAL_FALLBACK_POLL_MS = 1000;
const PUT_ATTEMPTS = 5;

function readAnswer(body: Uint8Array): InboxAnswer | undefined {
  try {
    return decodeAnswer(body);
  } catch (e) {
    if (e instanceof MalformedRequestError) return undefined;
    throw e;
  }
}

/** Options of {@link TaqubaClient.open}. */
export interface TaqubaClientOptions {
  /** The name the owner gave `Queue.open`. */
  readonly name: string;
  /** The owner runtime's step queue (`WorkflowRuntime.builder(...).queueName`). Default: "workflow-steps". */
  readonly queueName?: string;
  /** The owner runtime's memo prefix, when it set one. Default: `{queueName}-memo`. */
  readonly memoPrefix?: string;
  /** How long a command waits for the owner's answer before `TimeoutError`. Default: 30,000 ms. */
  readonly timeoutMs?: number;
  /**
   * Poll interval of `wait()` and of answers on a store without change
   * notification (S3): each poll is one LIST and a few GETs. Default and
   * minimum: 1,000 ms and 200 ms. On a local directory waits are woken by
   * `fs.watch` and this only bounds a missed event.
   */
  readonly pollIntervalMs?: number;
  /** The clock that tells whether a rate limit still holds a run's step back (`heldBy`). Default: the system clock; give the owner's `MockClock` in tests. */
  readonly clock?: Clock;
}

const CLIENT_OPTION_KEYS = optionFields<TaqubaClientOptions>({
  name: true,
  queueName: true,
  memoPrefix: true,
  timeoutMs: true,
  pollIntervalMs: true,
  clock: true,
});

/** A check whose message does not say which option it refused, prefixed with the option's name. */
function naming(path: string, check: () => void): void {
  try {
    check();
  } catch (err) {
    if (err instanceof ValidationError) throw new ValidationError(`${path}: ${err.message}`);
    throw err;
  }
}

/**
 * `TaqubaClient.open`'s options, each field read once (a getter or Proxy is
 * asked once, and one that throws is a `ValidationError` naming it) and
 * checked: what the client runs with is this copy, never the caller's object.
 */
function readClientOptions(given: unknown): TaqubaClientOptions {
  const o = readExactOptions(given, CLIENT_OPTION_KEYS, "TaqubaClientOptions");
  if (typeof o.name !== "string")
    throw new ValidationError(`TaqubaClientOptions.name must be the store name the owner gave Queue.open (a string), got ${describeValue(o.name)}`);
  naming("TaqubaClientOptions.name", () => validateStoreName(o.name));
  if (o.queueName !== undefined) naming("TaqubaClientOptions.queueName", () => validateQueueName(o.queueName));
  if (o.memoPrefix !== undefined) checkMemoPrefix("TaqubaClientOptions.memoPrefix", o.memoPrefix);
  checkOptionalMs("TaqubaClientOptions.timeoutMs", o.timeoutMs, 1, 24 * 3600 * 1000);
  checkOptionalMs("TaqubaClientOptions.pollIntervalMs", o.pollIntervalMs, MIN_CLIENT_POLL_MS, 3600 * 1000);
  if (o.clock !== undefined && !hasMethods(o.clock, ["now"]))
    throw new ValidationError(`TaqubaClientOptions.clock must be an object with a now() method (a Clock), got ${describeValue(o.clock)}`);
  return o as TaqubaClientOptions;
}

function isRetryable(err: unknown): boolean {
  return err instanceof StoreUnavailableError || (err instanceof TaqubaError && err.retryable);
}

/** `new TaqubaClient` is internal: use TaqubaClient.open(store, options) (see internal-construction.ts). */
const CLIENT_GATE = new ConstructionGate("TaqubaClient", "use TaqubaClient.open(store, options)");

/**
 * A client of a taquba store owned by another process; see the module
 * documentation. It satisfies what generated clients need (`WorkflowHost`,
 * `SignalSender`, `JobSubmitter`), so `orders.client(client)` works from
 * any process.
 *
 * @example
 * const client = await TaqubaClient.open("s3://bucket/prefix", { name: "app", queueName: "workflow-steps" });
 * const { runId } = await client.submit({ runId: "order-1", input });
 * const end = await client.wait(runId);
 * await client.close();
 */
export class TaqubaClient {
  readonly #store: ObjectStore;
  readonly #root: PrefixedStore;
  readonly #name: string;
  readonly #q: string;
  readonly #memos: MemoStore;
  readonly #timeoutMs: number;
  readonly #pollMs: number;
  readonly #clock: Clock | undefined;
  readonly #nextId = requestIds();
  readonly #closing = new AbortController();
  /** The close under way or done, shared by every call of `close()`. */
  #closed: Promise<void> | undefined;
  #reader: QueueReader | undefined;
  #opening: Promise<QueueReader | undefined> | undefined;
  #view: WorkflowView | undefined;
  /** Per request id, the command waiting for its answer, woken when it appears (local directories only). */
  readonly #answerWaiters = new Map<string, () => void>();
  /** Waiters woken by a commit of the owner (local directories only). */
  readonly #commitWaiters = new Set<() => void>();
  /** Wakes every `#sleep` in progress (close calls them). */
  readonly #sleepers = new Set<() => void>();
  readonly #unwatch: Array<() => void> = [];
  readonly #watched: boolean;
  /** On a sharded store: one client per shard, and this one only routes (see `shard-route`). */
  #shards: readonly TaqubaClient[] | undefined;

  private constructor(store: ObjectStore, opts: TaqubaClientOptions, routerOnly = false) {
    CLIENT_GATE.check();
    this.#store = store;
    this.#name = opts.name;
    this.#clock = opts.clock;
    this.#q = opts.queueName ?? DEFAULT_STEP_QUEUE;
    this.#root = new PrefixedStore(store, `${this.#name}/`);
    this.#memos = new MemoStore(store, opts.memoPrefix ?? `${this.#q}-memo`);
    this.#timeoutMs = opts.timeoutMs ?? DEFAULT_CLIENT_TIMEOUT_MS;
    // Every wait in flight listens for close (and stops listening when it ends): many concurrent waits are expected.
    setMaxListeners(0, this.#closing.signal);
    const wakeAll = (waiters: Iterable<() => void>) => {
      for (const w of [...waiters]) w();
    };
    if (!routerOnly) {
      // An answer wakes the command waiting for it (all, when the name is not known); a new
      // WAL object or manifest (every commit) wakes reads and waits.
      const answers = watchPrefixes(this.#root, [answersPrefix(this.#q)], (id) => {
        if (id === undefined) wakeAll(this.#answerWaiters.values());
        else this.#answerWaiters.get(id)?.();
      });
      const commits = watchPrefixes(this.#root, ["db/wal/", "db/manifest/"], () => wakeAll(this.#commitWaiters));
      for (const stop of [answers, commits]) if (stop !== undefined) this.#unwatch.push(stop);
    }
    this.#watched = this.#unwatch.length === 2;
    this.#pollMs = opts.pollIntervalMs ?? (this.#watched ? LOCAL_FALLBACK_POLL_MS : DEFAULT_CLIENT_POLL_MS);
  }

  /**
   * A client of the store `name` (the name the owner gave `Queue.open`) in
   * `store`, an `ObjectStore` or a URL (`s3://bucket/prefix`,
   * `file:///dir`; see `openStore`). Opening writes nothing and needs no
   * owner to be running. It reads whether the store is sharded (one GET);
   * on a sharded store every command and read goes to the run's shard
   * (see docs/cluster.md).
   */
  static async open(store: ObjectStore | string, given: TaqubaClientOptions): Promise<TaqubaClient> {
    const opts = readClientOptions(given);
    const s = typeof store === "string" ? openStore(store) : store;
    if (!hasMethods(s, ["get", "put", "list", "delete"]))
      throw new ValidationError(`TaqubaClient.open takes an ObjectStore (get, put, list, delete) or a store URL, got ${describeValue(store)}`);
    checkStoreArg("TaqubaClient.open's store", s);
    const layout = await readShardLayout(s, opts.name);
    if (layout === undefined) return CLIENT_GATE.build(() => new TaqubaClient(s, opts));
    const router = CLIENT_GATE.build(() => new TaqubaClient(s, opts, true));
    router.#shards = Array.from({ length: layout.shards }, (_, i) =>
      CLIENT_GATE.build(() => new TaqubaClient(s, { ...opts, name: shardStoreName(opts.name, i) })),
    );
    return router;
  }

  /** The client of the shard of run `runId`, on a sharded store. */
  #runShard(runId: string): TaqubaClient | undefined {
    return this.#shards?.[shardOfRun(runId, this.#shards.length)];
  }

  /** How many shards the store has: 1 for a store that is not sharded. */
  get shardCount(): number {
    return this.#shards?.length ?? 1;
  }

  /** The step queue whose runs this client reaches. */
  get queueName(): string {
    return this.#q;
  }

  // ---- commands: written to the inbox, answered by the owner ----------

  /**
   * Submits a run, with `WorkflowRuntime.submit`'s semantics: idempotent on
   * `(runId, input)` (a duplicate answers `newlySubmitted: false`, another
   * input rejects with `InputMismatchError`). A run id is drawn here when
   * absent, and the owner draws another should a run hold it (the answer's
   * `runId` names the run). `effects` may hold caller KV writes, not enqueues.
   */
  submit(spec: RunSpec): Promise<SubmitOutcome>;
  /** Submits a typed job (the owner must serve a `JobRunner`); the handle waits through this client. */
  submit<Name extends string, Input, Output, Err, Headers extends HeaderValues>(
    definition: JobDefinition<Name, Input, Output, Err, Headers>,
    input: Input,
    options?: JobSubmitOptions<Headers>,
  ): Promise<JobHandle<Output, Err>>;
  async submit(specOrDefinition: unknown, input?: unknown, options?: JobSubmitOptions<HeaderValues>): Promise<unknown> {
    if ((specOrDefinition as { kind?: unknown } | null)?.kind === "job") return this.#submitJob(specOrDefinition as AnyDefinition, input, options);
    return this.#submitRun(specOrDefinition as RunSpec, false);
  }

  /**
   * @internal A submission the owner applies only when it has no record of
   * the run, active or ended (a schedule's tick on another shard: a request
   * retried after the run ended must not start it again).
   */
  submitUnlessKnown(spec: RunSpec): Promise<SubmitOutcome> {
    return this.#submitRun(spec, true);
  }

  /** `drawn`: the shard's client is handed the id this client drew (see the request's `drawn`). */
  async #submitRun(given: RunSpec, unlessKnown: boolean, drawn = false): Promise<SubmitOutcome> {
    // Each field read once: the spec checked is the spec sent.
    const spec = readRunSpec(given) as RunSpec;
    if (spec === null || typeof spec !== "object" || !(spec.input instanceof Uint8Array)) {
      throw new ValidationError("submit takes a RunSpec whose input is a Uint8Array");
    }
    refuseUnknownRunSpecFields(spec);
    // A drawn id is sent as drawn: the owner draws another (routed to its shard) should a record hold it.
    const isDrawn = drawn || spec.runId === undefined;
    const runId = spec.runId === undefined ? RunId.generate() : RunId.parse(spec.runId);
    const shard = this.#runShard(runId);
    if (shard !== undefined) return shard.#submitRun({ ...spec, runId }, unlessKnown, isDrawn);
    const o: NonNullable<RunSpec["options"]> = spec.options ?? NO_OPTIONS;
    const headers = checkUserHeaders(o.headers);
    checkRunOptions(o);
    const effects = checkEffects(spec.effects);
    if (effects !== undefined && effects.enqueues.length > 0) {
      throw new ValidationError("a TaqubaClient submission carries caller KV effects only; enqueue follow-up jobs from a step instead");
    }
    const kvOps: KvOp[] = [...(effects?.kvOps ?? [])];
    const runOptions = {
      headers,
      ...(o.priority === undefined ? {} : { priority: o.priority }),
      ...(o.maxAttemptsPerStep === undefined ? {} : { maxAttemptsPerStep: o.maxAttemptsPerStep }),
      ...(o.runAt === undefined ? {} : { runAt: o.runAt }),
      ...(o.flow === undefined ? {} : { flow: { ...o.flow } }),
      ...(o.debounce === undefined ? {} : { debounce: { key: o.debounce.key, periodMs: o.debounce.periodMs } }),
    };
    // The input as it is now, as a run submitted in the owner's process takes it: a view whose bytes are gone would be sent as empty input.
    const input = runInputAtCall(runId, spec.input);
    const request: InboxRequest = {
      op: "submit",
      runId,
      input,
      options: runOptions,
      kvOps,
      ...(unlessKnown ? { unlessKnown } : {}),
      ...(isDrawn ? { drawn: true } : {}),
    };
    return (await this.#request(request, `submission of run "${runId}"`)) as SubmitOutcome;
  }

  async #submitJob(def: AnyDefinition, input: unknown, options: JobSubmitOptions<HeaderValues> | undefined): Promise<JobHandle<unknown, unknown>> {
    const payload = preparePayload(def, input);
    const runOptions = withFlow(def, input, prepareRunOptions(def, options));
    // A key set on Object.prototype is none (see `isBaseField`).
    const key =
      (isOptionObject(options) ? (callerField(options, "idempotencyKey", "JobSubmitOptions.idempotencyKey") as string | undefined) : undefined) ??
      def.idempotencyKey?.(input as never);
    const job: PreparedJob = { name: def.name, payload, runOptions, ...(key === undefined ? { runId: RunId.generate() } : { idempotencyKey: key }) };
    // On a sharded store the job goes to the shard of the run id its owner will use.
    const shard = this.#runShard(job.runId ?? keyedJobRunId(this.#q, def.name, key!));
    const target = shard ?? this;
    const out = (await target.#request({ op: "job", job }, `submission of job "${def.name}"`)) as SubmitOutcome;
    return new RunnerJobHandle(target.#jobReader(), out.runId, out.newlySubmitted);
  }

  /** Delivers a signal to the step waiting on `correlationKey`, or buffers it: `"delivered"` or `"buffered"`, as the owner answers. */
  async signal(correlationKey: string, payload: Uint8Array): Promise<SignalOutcome> {
    checkCorrelationKey(correlationKey);
    if (!(payload instanceof Uint8Array)) throw new ValidationError("a signal payload must be a Uint8Array");
    // A shard's client takes the bytes itself.
    if (this.#shards !== undefined) return this.#shards[shardOfSignal(correlationKey, this.#shards.length)]!.signal(correlationKey, payload);
    // The request is written after awaits: take the bytes as the call saw them.
    payload = bytesAtCall(`the payload of signal "${correlationKey}"`, payload);
    return (await this.#request({ op: "signal", key: correlationKey, payload }, `signal "${correlationKey}"`)) as SignalOutcome;
  }

  /** Discards the buffered signal of `correlationKey`; `true` when one was removed. */
  async clearSignal(correlationKey: string): Promise<boolean> {
    checkCorrelationKey(correlationKey);
    if (this.#shards !== undefined) return this.#shards[shardOfSignal(correlationKey, this.#shards.length)]!.clearSignal(correlationKey);
    return (await this.#request({ op: "clearSignal", key: correlationKey }, `clearing of signal "${correlationKey}"`)) as boolean;
  }

  /** Requests cancellation of a run: `true` once recorded, `false` for an unknown or ended run. */
  async cancel(runId: RunId | string): Promise<boolean> {
    const id = RunId.parse(runId);
    const shard = this.#runShard(id);
    if (shard !== undefined) return shard.cancel(id);
    return (await this.#request({ op: "cancel", runId: id }, `cancellation of run "${id}"`)) as boolean;
  }

  /**
   * Re-opens a failed or cancelled run (see `WorkflowRuntime.retryRun`),
   * through the owner's inbox; the owner's `RunNotRetryableError` or
   * `RunNotFoundError` is rethrown here.
   */
  async retryRun(runId: RunId | string, opts: RetryRunOptions = {}): Promise<RetryOutcome> {
    const id = RunId.parse(runId);
    const fromStep = checkRetryOptions(opts);
    const shard = this.#runShard(id);
    if (shard !== undefined) return shard.retryRun(id, opts);
    const request: InboxRequest = { op: "retry", runId: id, ...(fromStep === undefined ? {} : { fromStep }) };
    return (await this.#request(request, `retry of run "${id}"`)) as RetryOutcome;
  }

  /**
   * Mends a run whose records are damaged (see `WorkflowRuntime.repairRun`),
   * through the owner's inbox: an active run ends failed with an error
   * saying it was repaired, an ended run's unreadable end record is
   * rewritten as failed, a listing entry is rewritten. `dryRun` says what it
   * would do and writes nothing; `scanIndex` looks for a listing entry no
   * record places through the whole run listing; `remove` removes the
   * run's records instead (`endActive` to end and remove an active run
   * whose records read). The owner's `RunNotDamagedError` (the run's
   * records read: cancel or retry it) or `RunNotFoundError` is rethrown here.
   */
  async repairRun(runId: RunId | string, opts: RepairRunOptions = {}): Promise<RepairOutcome> {
    const id = RunId.parse(runId);
    const set = setRepairOptions(checkRepairOptions(opts));
    const shard = this.#runShard(id);
    if (shard !== undefined) return shard.repairRun(id, set);
    const request: InboxRequest = { op: "repair", runId: id, ...set };
    return (await this.#request(request, `repair of run "${id}"`)) as RepairOutcome;
  }

  /** Runs a failed or cancelled job again (see `JobRunner.retryJob`), through the owner's inbox. */
  async retryJob(jobId: RunId | string): Promise<RetryOutcome> {
    const id = RunId.parse(jobId);
    const shard = this.#runShard(id);
    if (shard !== undefined) return shard.retryJob(id);
    return (await this.#request({ op: "retry", runId: id, job: true }, `retry of job "${id}"`)) as RetryOutcome;
  }

  /**
   * Puts a dead job of any queue back to pending with fresh attempts (see
   * `Queue.requeueDead`), through the owner's inbox. `false` when no such
   * job is dead. For a workflow step, prefer `retryRun`, which re-opens its
   * run. On a sharded store each shard is asked in turn until one requeues it.
   */
  async requeueDead(jobId: string): Promise<boolean> {
    if (typeof jobId !== "string" || jobId.length === 0) throw new ValidationError("requeueDead takes a job id (a non-empty string)");
    if (this.#shards !== undefined) {
      for (const shard of this.#shards) if (await shard.requeueDead(jobId)) return true;
      return false;
    }
    return (await this.#request({ op: "requeueDead", jobId }, `requeue of dead job "${jobId}"`)) as boolean;
  }

  /**
   * Counts the stats record of queue `queueName` again from its indexes
   * (see `Queue.recountStats`), through the owner's inbox: the mend of a
   * damaged stats record, which every move of the queue refuses. `dryRun`
   * says what would be written; `plan` (a dry run's token) has it refused
   * with `StatsPlanChangedError`, nothing written, when the queue changed
   * since. On a sharded store each shard keeps its own stats: `shard`
   * names the one (0 to the shard count less one), and is required; a
   * shard with no stats record and no job of the queue is refused with
   * `ValidationError`, nothing written.
   */
  async recountStats(queueName: string, opts: RecountStatsOptions = {}, shard?: number): Promise<StatsRecount> {
    validateQueueName(queueName);
    const o = checkRecountOptions(opts);
    if (this.#shards !== undefined) {
      if (shard === undefined || !Number.isSafeInteger(shard) || shard < 0 || shard >= this.#shards.length) {
        throw new ValidationError(
          `each of the ${this.#shards.length} shards keeps its own stats of queue ${JSON.stringify(queueName)}: name the shard to recount, a whole number from 0 to ${this.#shards.length - 1}, got ${describeValue(shard)}`,
        );
      }
      const answer = await this.#shards[shard]!.recountStats(queueName, opts);
      // No record and no job there: the operator named a shard the queue's jobs never went to.
      if (answer.stored === undefined && answer.damage === undefined && !answer.changed) {
        throw new ValidationError(
          `shard ${shard} holds no queue ${JSON.stringify(queueName)} (no stats record and no job of it), so there is nothing to recount there and nothing was written; name a shard that holds it (\`taquba queue stats\` lists each shard's queues)`,
        );
      }
      return answer;
    }
    if (shard !== undefined) throw new ValidationError("this store is not split into shards: leave out the shard");
    const request: InboxRequest = {
      op: "recountStats",
      queueName,
      ...(o.dryRun ? { dryRun: true } : {}),
      ...(o.plan === undefined ? {} : { plan: o.plan }),
    };
    return (await this.#request(request, `recount of the stats of queue "${queueName}"`)) as StatsRecount;
  }

  // ---- schedules: applied by the owner of the schedule's home shard ------

  /** Pauses schedule `scheduleId` (see `Schedules.pause`); `ScheduleNotFoundError` when there is none. */
  async pauseSchedule(scheduleId: string): Promise<ScheduleInfo> {
    return (await this.#scheduleRequest({ op: "schedule", action: "pause", scheduleId: checkScheduleId(scheduleId) })) as ScheduleInfo;
  }

  /** Resumes schedule `scheduleId` from now on (see `Schedules.resume`). */
  async resumeSchedule(scheduleId: string): Promise<ScheduleInfo> {
    return (await this.#scheduleRequest({ op: "schedule", action: "resume", scheduleId: checkScheduleId(scheduleId) })) as ScheduleInfo;
  }

  /**
   * Removes schedule `scheduleId` (see `Schedules.remove`): true when there
   * was one. Its record is deleted without being read, so this is also the
   * way out for a schedule whose record is damaged.
   */
  async removeSchedule(scheduleId: string): Promise<boolean> {
    return (await this.#scheduleRequest({ op: "schedule", action: "remove", scheduleId: checkScheduleId(scheduleId) })) as boolean;
  }

  /** Starts one run of schedule `scheduleId` now (see `Schedules.trigger`); a retried request starts it once. */
  async triggerSchedule(scheduleId: string): Promise<ScheduleFire> {
    return (await this.#scheduleRequest({ op: "schedule", action: "trigger", scheduleId: checkScheduleId(scheduleId) })) as ScheduleFire;
  }

  /**
   * Starts the run of every tick of schedule `scheduleId` in `[fromMs, toMs]`
   * (see `Schedules.backfill`). Sent as a series of requests of at most
   * {@link BACKFILL_PART_TICKS} ticks each (and about 10 s of the owner's
   * time), each answered before the next is sent, so no request holds the
   * owner's inbox long or outlasts the client's timeout. A backfill
   * interrupted (a timeout, a crash) can be sent again: ticks whose runs
   * started are not started twice.
   */
  async backfillSchedule(scheduleId: string, fromMs: number, toMs: number): Promise<readonly ScheduleFire[]> {
    checkScheduleId(scheduleId);
    validateInstant("backfill's fromMs", fromMs);
    validateInstant("backfill's toMs", toMs);
    if (toMs < fromMs) throw new ValidationError(`backfill's toMs (${toMs}) is before its fromMs (${fromMs})`);
    const fires: ScheduleFire[] = [];
    for (let from: number | null = fromMs; from !== null; ) {
      const answer = await this.#scheduleRequest({ op: "schedule", action: "backfill", scheduleId, fromMs: from, toMs, maxTicks: BACKFILL_PART_TICKS });
      // An owner of an earlier version applies the whole range and answers its fires.
      if (Array.isArray(answer)) return [...fires, ...(answer as readonly ScheduleFire[])];
      const part = answer as BackfillPart;
      // Each part starts at least one tick, so the next starts later; anything else is not an answer this client can follow.
      if (part.nextFromMs !== null && part.nextFromMs <= from)
        throw new MalformedRequestError(`the answer to a backfill part of schedule "${scheduleId}" does not move past ${from}`);
      fires.push(...part.fires);
      from = part.nextFromMs;
    }
    return fires;
  }

  #scheduleRequest(request: ScheduleRequest): Promise<AnswerValue> {
    const target = this.#shards === undefined ? this : this.#shards[shardOfSchedule(request.scheduleId, this.#shards.length)]!;
    return target.#request(request, `${request.action} of schedule "${request.scheduleId}"`);
  }

  /**
   * Writes `request` into the inbox and returns its id; the owner applies it
   * whenever it runs. With `onceId` (see `onceRequestId`), a request of that
   * id still in the inbox stands for this one: nothing is written.
   */
  async #post(request: InboxRequest, onceId?: string): Promise<string> {
    this.#checkOpen();
    const id = onceId ?? this.#nextId(Date.now());
    await this.#put(requestKey(this.#q, id), encodeRequest(request));
    return id;
  }

  async #request(request: InboxRequest, what: string): Promise<AnswerValue> {
    const id = await this.#post(request);
    const deadline = decodeTime(id) + this.#timeoutMs;
    const answer = await awaitAnswer(
      {
        read: async () => {
          const obj = await this.#root.get(answerKey(this.#q, id));
          // A store without atomic puts (some S3-compatible servers) can show an answer half written;
          // the owner rewrites an answer it did not finish, so read again rather than fail.
          return obj === null ? undefined : readAnswer(obj.body);
        },
        notified: () => this.#nextAnswer(id),
        sleep: (ms, early) => this.#sleep(ms, early),
        now: Date.now,
      },
      answerPollIntervals(this.#watched, this.#pollMs),
      deadline,
      () => new TimeoutError(id, what, this.#timeoutMs, this.#name),
    );
    // The answer is ours alone; the owner sweeps any a client leaves behind.
    await this.#root.delete(answerKey(this.#q, id)).catch(() => {});
    if (answer.ok) return answer.value;
    throw rebuildError(answer.error);
  }

  /** Creates the request object once: a retry after an ambiguous failure finds its own object. */
  async #put(key: string, body: Uint8Array): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#root.put(key, body, { ifNoneMatch: "*" });
        return;
      } catch (err) {
        // The name is fresh: an existing object is this request, written by an attempt whose answer was lost.
        if (err instanceof PreconditionFailedError) return;
        if (!isRetryable(err) || attempt >= PUT_ATTEMPTS) throw err;
        await this.#sleep(50 * 2 ** attempt, new Promise(() => {}));
      }
    }
  }

  // ---- reads: a read-only view of the owner's durable state -----------

  /** The run's status as of the owner's last durable commit; null for an unknown run. */
  async status(runId: RunId | string): Promise<RunStatus | null> {
    const id = RunId.parse(runId);
    const shard = this.#runShard(id);
    if (shard !== undefined) return shard.status(id);
    const view = await this.#refreshed();
    return view === undefined ? null : view.status(id);
  }

  /** The committed outcome of a terminated run (see `WorkflowRuntime.outcome`: every ended run has one), or null while it is active or unknown. */
  async outcome(runId: RunId | string): Promise<RunOutcome | null> {
    const id = RunId.parse(runId);
    const shard = this.#runShard(id);
    if (shard !== undefined) return shard.outcome(id);
    const view = await this.#refreshed();
    return view === undefined ? null : view.outcome(id);
  }

  /**
   * One page of the step queue's runs, newest first, as of the owner's last
   * durable commit (see `WorkflowView.listRuns`). On a sharded store the
   * page merges every shard's, and its cursor continues all of them.
   */
  async listRuns(opts: ListRunsOptions = {}): Promise<RunPage> {
    const checked = checkListOptions(opts);
    if (this.#shards !== undefined) {
      const shards = this.#shards;
      return mergeRunPages(shards.length, checked.limit, checked.cursor, scanOf(checked), (i, cursor) =>
        shards[i]!.listRuns({ ...opts, ...(cursor === undefined ? {} : { cursor }) }),
      );
    }
    const view = await this.#refreshed();
    return view === undefined ? { runs: [] } : view.listRuns(opts);
  }

  /** One page of the step queue's typed jobs, newest first (see `JobRunner.listJobs`); merged over the shards of a sharded store. */
  async listJobs(opts: ListJobRunsOptions = {}): Promise<RunPage> {
    if (this.#shards !== undefined) {
      if (opts === null || typeof opts !== "object" || Array.isArray(opts)) throw new ValidationError("listJobs takes an options object");
      const { job, ...rest } = opts;
      const checked = checkListOptions({ ...rest, ...(job === undefined ? {} : { workflow: job }) }, "listJobs");
      const shards = this.#shards;
      return mergeRunPages(shards.length, checked.limit, checked.cursor, scanOf(checked), (i, cursor) =>
        shards[i]!.listJobs({ ...opts, ...(cursor === undefined ? {} : { cursor }) }),
      );
    }
    const view = await this.#refreshed();
    return view === undefined ? { runs: [] } : listJobRuns(view, opts);
  }

  /** The run's history step by step, or null for an unknown run (see `WorkflowView.inspectRun`); read on the run's shard. */
  async inspectRun(runId: RunId | string): Promise<RunHistory | null> {
    const id = RunId.parse(runId);
    const shard = this.#runShard(id);
    if (shard !== undefined) return shard.inspectRun(id);
    const view = await this.#refreshed();
    return view === undefined ? null : view.inspectRun(id);
  }

  /**
   * One page of the step queue's run groups with member counts (see
   * `WorkflowView.listGroups`). On a sharded store a group with members on
   * several shards is one row with the counts of all of them.
   */
  async listGroups(opts: ListGroupsOptions = {}): Promise<GroupPage> {
    if (this.#shards !== undefined) {
      if (opts === null || typeof opts !== "object" || Array.isArray(opts)) throw new ValidationError("listGroups takes an options object");
      const shards = this.#shards;
      const limit = opts.limit ?? DEFAULT_GROUP_LIMIT;
      // The first shard checks the limit as an unsharded listing does.
      // Each shard's page names a damaged member's derived run id routed to that shard.
      return mergeGroupPages(shards.length, limit, opts.cursor, (i, cursor) =>
        shards[i]!.#listGroupsOn({ ...opts, ...(cursor === undefined ? {} : { cursor }) }, { shard: i, shards: shards.length }),
      );
    }
    return this.#listGroupsOn(opts, undefined);
  }

  /** One page of this client's (a shard's) groups; `placement`: the shard it is, on a sharded store. */
  async #listGroupsOn(opts: ListGroupsOptions, placement: ShardPlacement | undefined): Promise<GroupPage> {
    const view = await this.#refreshed();
    return view === undefined ? { groups: [] } : view.listGroups(opts, placement);
  }

  // ---- groups: members on every shard ----------------------------------

  /**
   * The run group `id`, reached through the owners (see `ClientGroup`). On
   * a sharded store its members run on every shard; its manifest is kept
   * by the owner of the group's home shard. Naming a group writes nothing.
   */
  group(id: string): ClientGroup {
    return GROUP_GATE.build(() => new ClientGroup(this.#groupPort(), id));
  }

  /** The job group `id` of jobs of `definition` (see `ClientJobGroup`); the owners must serve a `JobRunner`. */
  jobGroup<Name extends string, Input, Output, Err, Headers extends HeaderValues>(
    id: string,
    definition: JobDefinition<Name, Input, Output, Err, Headers>,
  ): ClientJobGroup<Input, Output, Err, Headers> {
    return JOB_GROUP_GATE.build(() => new ClientJobGroup(this.#groupPort(), id, definition));
  }

  #groupPort(): GroupPort {
    const parts: readonly TaqubaClient[] = this.#shards ?? [this];
    const n = parts.length;
    return {
      shards: n,
      queueName: this.#q,
      memos: this.#memos,
      pollMs: this.#pollMs,
      shardOfRun: (runId) => (n === 1 ? 0 : shardOfRun(runId, n)),
      homeOf: (groupId) => stableHash(groupId) % n,
      request: (i, request, what) => parts[i]!.#request(request, what),
      post: (i, request) => parts[i]!.#post(request),
      postOnce: (i, request, onceId) => parts[i]!.#post(request, onceId),
      scan: async (i, prefix) => {
        const c = parts[i]!;
        const view = await c.#refreshed();
        if (view === undefined) return [];
        const out: Array<{ key: string; value: Uint8Array }> = [];
        for (let after: string | undefined; ; ) {
          const page = await c.#reader!.kvScan(prefix, { limit: 1000, ...(after === undefined ? {} : { after }) });
          out.push(...page.entries);
          if (page.nextCursor === undefined) return out;
          after = page.nextCursor;
        }
      },
      // Reads after a scan of the same shard: its view is as fresh as the scan, so no refresh per member.
      status: async (runId) => (await (this.#runShard(runId as RunId) ?? this).#current())?.status(runId) ?? null,
      outcome: async (runId) => (await (this.#runShard(runId as RunId) ?? this).#current())?.outcome(runId) ?? null,
      jobOutcome: async (runId) => {
        const c = this.#runShard(runId as RunId) ?? this;
        const view = await c.#current();
        return view === undefined ? "unknown" : readJobOutcome(view, c.#reader!, runId);
      },
      cancel: (runId) => this.cancel(runId),
      pause: async (ms) => {
        const changes = parts.map((c) => c.#nextChange());
        try {
          await this.#sleep(ms, Promise.race(changes.map((c) => c.promise)));
        } finally {
          for (const c of changes) c.dispose();
        }
      },
      checkOpen: () => this.#checkOpen(),
    };
  }

  /** Waits until the run terminates. Throws `RunNotFoundError` for a run with no record. */
  async wait(runId: RunId | string): Promise<RunEnd> {
    const id = RunId.parse(runId);
    return (await (this.#runShard(id) ?? this).#wait(id, undefined))!;
  }

  /** {@link TaqubaClient.wait} bounded by `timeoutMs`; null when the run has not ended by then. */
  async waitTimeout(runId: RunId | string, timeoutMs: number): Promise<RunEnd | null> {
    // Async, as the runtime's: a bad argument rejects the promise instead of throwing at the call.
    validateDelay("waitTimeout's timeout", timeoutMs);
    const id = RunId.parse(runId);
    return (this.#runShard(id) ?? this).#wait(id, Date.now() + timeoutMs);
  }

  async #wait(runId: RunId, deadline: number | undefined): Promise<RunEnd | null> {
    for (;;) {
      this.#checkOpen();
      const changed = this.#nextChange();
      try {
        const view = await this.#refreshed();
        const r = view === undefined ? { kind: "unknown" as const } : await view.records(runId);
        if (r.kind === "terminated") return await view!.endOf(r.terminal);
        if (r.kind === "unknown") throw new RunNotFoundError(runId);
        const now = Date.now();
        if (deadline !== undefined && now >= deadline) return null;
        await this.#sleep(deadline === undefined ? this.#pollMs : Math.min(this.#pollMs, deadline - now), changed.promise);
      } finally {
        changed.dispose();
      }
    }
  }

  #jobReader(): JobReader {
    return {
      outcome: async (jobId) => {
        const view = await this.#refreshed();
        if (view === undefined) return "unknown";
        return readJobOutcome(view, this.#reader!, jobId);
      },
      register: () => {
        const changed = this.#nextChange();
        const stop = new AbortController();
        const timer = this.#sleep(this.#pollMs, changed.promise, stop.signal);
        const closing = this.#closing.signal;
        return {
          promise: timer,
          dispose: () => {
            stop.abort();
            changed.dispose();
          },
          // A closed client reads nothing more: its job waits settle with why.
          get closedError() {
            return closing.aborted ? new ClosedError("this TaqubaClient") : undefined;
          },
        };
      },
      status: (jobId) => this.status(jobId),
      cancel: (jobId) => this.cancel(jobId),
    };
  }

  /** The view as last refreshed (opened when it never was); undefined while the owner has never written the store. */
  async #current(): Promise<WorkflowView | undefined> {
    return this.#reader === undefined ? this.#refreshed() : this.#view;
  }

  /** The view after a refresh of the reader; undefined while the owner has never written the store. */
  async #refreshed(): Promise<WorkflowView | undefined> {
    this.#checkOpen();
    if (this.#reader === undefined) {
      const joined = this.#opening !== undefined;
      this.#opening ??= this.#openReader().finally(() => {
        this.#opening = undefined;
      });
      await this.#opening;
      if (!joined) return this.#view;
      // The open this call joined may have read the store before a commit this caller
      // already knows of (its own submission's answer): read again, with a refresh (or
      // an open) that starts after this call.
      return this.#refreshed();
    }
    // A refresh never hands out one that started before this call (see EngineReader.refresh),
    // so the view includes every commit this caller already knows of.
    await this.#reader.refresh();
    return this.#view;
  }

  async #openReader(): Promise<QueueReader | undefined> {
    // A store no owner has opened yet has no manifest: nothing to read, no run known.
    let any = false;
    for await (const _ of this.#root.list("db/manifest/")) {
      any = true;
      break;
    }
    if (!any) return undefined;
    const reader = await QueueReader.open(this.#store, this.#name, this.#clock === undefined ? {} : { clock: this.#clock });
    if (this.#closing.signal.aborted) {
      await reader.close();
      return undefined;
    }
    this.#reader = reader;
    this.#view = new WorkflowView(reader, this.#memos, this.#q);
    return reader;
  }

  // ---- waiting ---------------------------------------------------------

  /** A promise settled by the next commit notification (never, without one); dispose it after use. */
  #nextChange(): { promise: Promise<void>; dispose(): void } {
    let wake!: () => void;
    const promise = new Promise<void>((resolve) => (wake = resolve));
    this.#commitWaiters.add(wake);
    return { promise, dispose: () => this.#commitWaiters.delete(wake) };
  }

  /** A promise settled when the answer to request `id` may have appeared (never, without notification); dispose it after use. */
  #nextAnswer(id: string): { promise: Promise<void>; dispose(): void } {
    let wake!: () => void;
    const promise = new Promise<void>((resolve) => (wake = resolve));
    this.#answerWaiters.set(id, wake);
    return { promise, dispose: () => this.#answerWaiters.delete(id) };
  }

  /**
   * Resolves after `ms`, on `early`, on close, or on `signal`. Close wakes
   * the sleepers through one set, not a listener each on the close signal:
   * many concurrent calls would otherwise pile listeners on one signal.
   */
  #sleep(ms: number, early: Promise<void>, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.#closing.signal.aborted || signal?.aborted === true) {
        resolve();
        return;
      }
      const done = () => {
        clearTimeout(timer);
        this.#sleepers.delete(done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      this.#sleepers.add(done);
      signal?.addEventListener("abort", done);
      void early.then(done);
    });
  }

  #checkOpen(): void {
    if (this.#closing.signal.aborted) throw new ClosedError("this TaqubaClient");
  }

  /** Stops watching and drops the read view. Requests already written stay in the inbox and are applied. */
  /** A second call waits for the first: a caller may remove the store's directory once it resolves. */
  close(): Promise<void> {
    this.#closed ??= this.#close();
    return this.#closed;
  }

  async #close(): Promise<void> {
    this.#closing.abort();
    for (const wake of [...this.#sleepers]) wake();
    await Promise.all((this.#shards ?? []).map((c) => c.close()));
    for (const u of this.#unwatch) u();
    await this.#opening?.catch(() => undefined);
    await this.#reader?.close();
  }
}
