/**
 * @module Read-only queries over a runtime's durable records: status and
 * outcome of a run, answered the same after a restart and from any process.
 */
import type { JobInfo } from "../../queue/types.js";
import type { JobAttempt } from "../../queue/record.js";
import { listRuns } from "./list-runs.js";
import { inspectRun, inspectRunPage, type HistoryPage } from "./inspect-run.js";
import { listGroups } from "../groups/group-index.js";
import type { KvPage, KvScanOptions } from "../../queue/view.js";
import type { ListRunsOptions, RunPage } from "./run-listing.js";
import type { RunHistory } from "./run-history.js";
import type { GroupPage, ListGroupsOptions } from "../groups/group-listing.js";
import type { ShardPlacement } from "./shard-placement.js";
import { runKey, stepPointerKey, terminalRecordKey } from "../records/kv-keys.js";
import { type KeyRefOf, type RunKeysRead, ViewRunKeys } from "./view-run-keys.js";
import type { KvKeyRef } from "../../queue/user-keys.js";
import type { MemoStore } from "../memo/memo.js";
import {
  checkRunRecordShape,
  checkStepPointerShape,
  decodeRunRecord,
  decodeStepPointer,
  decodeTerminalRecord,
  terminalFieldsOnPrototype,
  outcomeRecordOfEnd,
  terminationOf,
  type RunRecord,
  type StepPointer,
  type TerminalRecord,
} from "../records/records.js";
import { RunId } from "./run-id.js";
import type { WrittenTerminal } from "./terminal.js";
import { outcomeOfEnd, outcomeOfTerminal, outcomeOfTermination } from "./inline-outcome.js";
import type { RunEnd, RunOutcome, RunStatus } from "./run-types.js";
import { validateQueueName } from "../../queue/names.js";
import { retryStore } from "../store-retry.js";
import { type BorrowedBytes, decodeBorrowed } from "../../queue/borrowed-bytes.js";
import { ValidationError } from "../../errors.js";
import { checkOptionalFunction, describeValue, hasMethods, readOptions } from "../../option-values.js";

/** The builder's default step queue name. */
export const DEFAULT_STEP_QUEUE = "workflow-steps";

/** The reads a view needs: `Queue.view()` and `QueueReader` provide them. */
export interface WorkflowReadSource {
  kvGet(key: string): Promise<Uint8Array | null>;
  job(jobId: string): Promise<JobInfo | null>;
  /** One page of KV entries under `prefix` (the run index and history are read this way). */
  kvScan(prefix: string, opts?: KvScanOptions): Promise<KvPage>;
  /** How each claim of a job ended so far (the current step's attempts in `inspectRun`); optional. */
  attemptHistory?(jobId: string): Promise<JobAttempt[]>;
  /**
   * For a source that reads commits before they are durable (a live
   * queue): resolves once everything read so far is durable. A source
   * that reads only durable state (a `QueueReader`) leaves it out.
   */
  durable?(): Promise<void>;
  /**
   * @internal A value lent for one decode in the caller's turn, without a
   * copy (`Queue.kvBorrowNow`): the runtime's own view over its live queue.
   */
  kvBorrowNow?(key: string | KvKeyRef): BorrowedBytes | null;
  /**
   * @internal With `kvBorrowNow`: a token for the value of `key` in the
   * caller's turn (`Queue.kvTokenNow`), compared with `===` only; equal
   * tokens mean equal bytes, undefined says nothing. A terminal record is
   * then decoded once per stored value, however often it is read.
   */
  kvTokenNow?(key: string | KvKeyRef): unknown;
  /**
   * @internal With `kvBorrowNow`: `key` checked once (`Queue.kvKeyRef`),
   * handed to the two reads above instead of the key, which they then do
   * not look up among the queue's kept keys. Made once per run a view
   * reads, and dropped with its keys (see `ViewRunKeys`).
   */
  kvKeyRef?(key: string): KvKeyRef;
}

/** A run as its records describe it at one moment. */
export type RunRecords =
  | { kind: "active"; run: RunRecord; pointer: StepPointer; runBytes: Uint8Array }
  | { kind: "terminated"; terminal: TerminalRecord }
  | { kind: "unknown" };

/** A run as its records describe it, decoded only (`WorkflowView.state`): no bytes kept. */
export type RunState = { kind: "active"; run: RunRecord; pointer: StepPointer } | Exclude<RunRecords, { kind: "active" }>;

/** A run as a wait needs it (`WorkflowView.phaseNow`): an active run's records are not decoded. */
export type RunPhase = { kind: "active" } | Exclude<RunRecords, { kind: "active" }>;

const ACTIVE: RunPhase = { kind: "active" };

/** What tells the token a key's value has while it holds bytes a commit put (`Queue.kvTokenOfPut`). */
export interface TokenOfPut {
  kvTokenOfPut?(key: string | KvKeyRef, value: Uint8Array): unknown;
}

/** The source's lent read (`kvBorrowNow`), bound to it. */
type Borrow = (key: string | KvKeyRef) => BorrowedBytes | null;

/**
 * Status and outcome queries over the queue's KV namespace and the memo
 * store. A process without a runtime builds one from a queue reader, a
 * `MemoStore` at the runtime's memo prefix and the runtime's step queue
 * name (runs are scoped by it; default `"workflow-steps"`).
 *
 * @example
 * const view = new WorkflowView(queue.view(), new MemoStore(store, "workflow-steps-memo"), "workflow-steps");
 * const status = await view.status(RunId.parse("order-1"));
 */
export class WorkflowView {
  readonly #src: WorkflowReadSource;
  readonly #memos: MemoStore;
  readonly #queueName: string;
  readonly #borrow: Borrow | undefined;
  readonly #token: ((key: string | KvKeyRef) => unknown) | undefined;
  /** The keys of the runs read last in this turn (`#stateNow`), built once per run. */
  readonly #runKeys: ViewRunKeys;

  constructor(source: WorkflowReadSource, memos: MemoStore, queueName: string = DEFAULT_STEP_QUEUE) {
    validateQueueName(queueName);
    if (!hasMethods(source, ["kvGet", "job", "kvScan"]))
      throw new ValidationError(`a WorkflowView reads a queue's view or a QueueReader (kvGet, job, kvScan), got ${describeValue(source)}`);
    if (!hasMethods(memos, ["withPrefix", "readOutcomeRecord"]))
      throw new ValidationError(`a WorkflowView reads run results through a MemoStore, got ${describeValue(memos)}`);
    // The optional reads, each asked for once: one whose getter throws is refused by name.
    const { attemptHistory, durable, kvBorrowNow, kvTokenNow, kvKeyRef } = readOptions(
      source,
      ["attemptHistory", "durable", "kvBorrowNow", "kvTokenNow", "kvKeyRef"],
      "source",
      "a WorkflowReadSource",
    );
    checkOptionalFunction("source.attemptHistory", attemptHistory);
    checkOptionalFunction("source.durable", durable);
    checkOptionalFunction("source.kvBorrowNow", kvBorrowNow);
    checkOptionalFunction("source.kvTokenNow", kvTokenNow);
    checkOptionalFunction("source.kvKeyRef", kvKeyRef);
    this.#borrow = kvBorrowNow === undefined ? undefined : (kvBorrowNow as NonNullable<WorkflowReadSource["kvBorrowNow"]>).bind(source);
    this.#token = kvTokenNow === undefined ? undefined : (kvTokenNow as NonNullable<WorkflowReadSource["kvTokenNow"]>).bind(source);
    // References only for the lent reads, the ones that take them.
    const keyRef = kvKeyRef === undefined || kvBorrowNow === undefined ? undefined : (kvKeyRef as KeyRefOf).bind(source);
    this.#runKeys = new ViewRunKeys(queueName, undefined, keyRef);
    // Reads retry store faults (a reader's source reads the bucket), so one failed read never fails a query.
    this.#src = {
      kvGet: (k) => retryStore(() => source.kvGet(k)),
      job: (id) => retryStore(() => source.job(id)),
      kvScan: (prefix, opts) => retryStore(() => source.kvScan(prefix, opts)),
      ...(attemptHistory === undefined
        ? {}
        : { attemptHistory: (id: string) => retryStore(() => (attemptHistory as NonNullable<WorkflowReadSource["attemptHistory"]>).call(source, id)) }),
      ...(durable === undefined ? {} : { durable: () => (durable as NonNullable<WorkflowReadSource["durable"]>).call(source) }),
    };
    this.#memos = memos;
    this.#queueName = queueName;
  }

  /** The step queue whose runs this view reads. */
  get queueName(): string {
    return this.#queueName;
  }

  /** @internal The run's records, read consistently (retried across a concurrent step transition). */
  async records(runId: string): Promise<RunRecords> {
    for (let i = 0; i < 8; i++) {
      const runBytes = await this.#src.kvGet(runKey(this.#queueName, runId));
      if (runBytes !== null) {
        const ptr = await this.#src.kvGet(stepPointerKey(this.#queueName, runId));
        // The pointer is written and removed with the record; absent means the run terminated in between.
        if (ptr === null) continue;
        return {
          kind: "active",
          run: decodeRunRecord(runBytes, runKey(this.#queueName, runId)),
          pointer: decodeStepPointer(ptr, stepPointerKey(this.#queueName, runId)),
          runBytes,
        };
      }
      const t = await this.#src.kvGet(terminalRecordKey(this.#queueName, runId));
      if (t !== null) return { kind: "terminated", terminal: decodeTerminalRecord(t, terminalRecordKey(this.#queueName, runId)) };
      // A submission may be committing between the two reads; re-read once more before answering.
      if ((await this.#src.kvGet(runKey(this.#queueName, runId))) === null) return { kind: "unknown" };
    }
    return { kind: "unknown" };
  }

  /**
   * @internal `records` without the run record's bytes, for a caller that
   * needs only the decoded records (a status, an outcome, a wait). Over a
   * source that lends its values (the runtime's own view) it reads them in
   * this turn, without copies: one read sees one commit, so nothing to retry.
   * A terminated run's record may be the one an earlier read answered with
   * (see `ViewRunKeys`): callers read it and never change it.
   */
  state(runId: string): Promise<RunState> {
    const borrow = this.#borrow;
    if (borrow === undefined) return this.records(runId);
    try {
      return Promise.resolve(this.#stateNow(runId, borrow));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * @internal `state` answered in the caller's turn, or undefined when the
   * source cannot lend its values (then await `state`): a caller that
   * reads in a loop (a wait) takes no promise and no turn per read. Throws
   * what `state` rejects with.
   */
  stateNow(runId: string): RunState | undefined {
    const borrow = this.#borrow;
    return borrow === undefined ? undefined : this.#stateNow(runId, borrow);
  }

  /**
   * @internal `stateNow` for a caller that needs only to know whether the
   * run is active (a wait): an active run's records are checked to be
   * records (MessagePack maps), not decoded, as a wait reads nothing of
   * them; undefined when the source cannot lend its values (then await
   * `state`). A terminated run's record is decoded as `stateNow` does.
   */
  phaseNow(runId: string): RunPhase | undefined {
    const borrow = this.#borrow;
    if (borrow === undefined) return undefined;
    const k = this.#runKeys.of(runId);
    const run = borrow(k.runRef);
    if (run === null) return this.#endedNow(k, borrow);
    const ptr = borrow(k.pointerRef);
    // The pointer is written and removed with the record in one commit: both or neither.
    if (ptr === null) return { kind: "unknown" };
    decodeBorrowed(run, k.run, checkRunRecordShape);
    decodeBorrowed(ptr, k.pointer, checkStepPointerShape);
    return ACTIVE;
  }

  #stateNow(runId: string, borrow: Borrow): RunState {
    const k = this.#runKeys.of(runId);
    const run = borrow(k.runRef);
    if (run !== null) {
      const ptr = borrow(k.pointerRef);
      // The pointer is written and removed with the record in one commit: both or neither.
      if (ptr === null) return { kind: "unknown" };
      return { kind: "active", run: decodeBorrowed(run, k.run, decodeRunRecord), pointer: decodeBorrowed(ptr, k.pointer, decodeStepPointer) };
    }
    return this.#endedNow(k, borrow);
  }

  /** A run with no run record, read in the caller's turn: terminated, or unknown. */
  #endedNow(k: RunKeysRead, borrow: Borrow): Exclude<RunState, { kind: "active" }> {
    // The wait's end and the outcome read find the same terminal record: decoded once while its token holds.
    const token = this.#token?.(k.terminalRef);
    if (token !== undefined && token === k.terminalToken) return { kind: "terminated", terminal: k.terminalRecord! };
    const t = borrow(k.terminalRef);
    if (t === null) return { kind: "unknown" };
    const terminal = decodeBorrowed(t, k.terminal, decodeTerminalRecord);
    if (token !== undefined) {
      k.terminalToken = token;
      k.terminalRecord = terminal;
      k.terminalDurable = false;
    }
    return { kind: "terminated", terminal };
  }

  /**
   * The run's status: pending, running or cancelling with its current step,
   * terminated with its termination, or `null` when the run is unknown
   * (never submitted, or swept).
   */
  async status(runId: RunId | string): Promise<RunStatus | null> {
    const id = RunId.parse(runId);
    const r = await this.state(id);
    let status: RunStatus | null;
    if (r.kind === "unknown") status = null;
    else if (r.kind === "terminated") status = { ...terminationOf(r.terminal), state: "terminated", step: r.terminal.finalStep };
    else if (r.run.cancelRequested === true) status = { runId: id, state: "cancelling", step: r.pointer.step };
    else {
      const job = await this.#src.job(r.pointer.jobId);
      status = { runId: id, state: job?.state === "pending" || job?.state === "scheduled" ? "pending" : "running", step: r.pointer.step };
    }
    await this.durable();
    return status;
  }

  /**
   * @internal Notes that `terminal`, as run `runId`'s terminal record was
   * read in this view, is durable: the caller read it and then awaited
   * `durable()`. A later read that finds the same stored value (its token
   * unchanged) then answers without waiting for durability again. The
   * caller (a wait) answers the run's end with it: the run's keys move to
   * the view's ended runs (`ViewRunKeys.ended`).
   */
  readDurable(runId: string, terminal: TerminalRecord): void {
    if (this.#borrow === undefined) return;
    const k = this.#runKeys.of(runId);
    if (k.terminalRecord === terminal) k.terminalDurable = true;
    // The wait's end: the run's keys are kept a little longer, for the outcome read after it (see `ViewRunKeys`).
    this.#runKeys.ended(runId);
  }

  /**
   * @internal Notes that this process committed `written.record` as run
   * `runId`'s terminal record, staged as `written.bytes` into a commit of
   * `target` (a termination's, just acknowledged): a later read that finds
   * those bytes stored (their token, `kvTokenOfPut`) answers with the
   * record instead of decoding them. Only for a run a reader read lately
   * (a wait): nothing is kept for the others. Not durable until a reader
   * waits for it (`durableAfter`), as a record decoded anew. A read that
   * finds other bytes (another process ended the run, a redrive since)
   * decodes them as before.
   */
  endCommitted(runId: string, written: WrittenTerminal, target: TokenOfPut): void {
    const { record, bytes } = written;
    if (this.#borrow === undefined || this.#token === undefined || record === undefined || bytes === undefined || target.kvTokenOfPut === undefined) return;
    const k = this.#runKeys.kept(runId);
    // Under a polluted prototype a decoding owns every optional field, which the record made here lacks.
    if (k === undefined || terminalFieldsOnPrototype()) return;
    const token = target.kvTokenOfPut(k.terminalRef, bytes as unknown as Uint8Array);
    // The same stored value read already: its record stays, durable if it was known so.
    if (token === undefined || token === k.terminalToken) return;
    k.terminalToken = token;
    k.terminalRecord = record;
    k.terminalDurable = false;
  }

  /**
   * @internal `durable()`, or nothing to wait for when `r` is a terminal
   * record known durable (see `readDurable`) and the read that found it
   * read nothing else: the wait's end then costs no second flush for the
   * outcome read after it.
   */
  durableAfter(runId: string, r: RunState | RunPhase): Promise<void> | undefined {
    if (r.kind === "terminated" && this.#borrow !== undefined) {
      const k = this.#runKeys.of(runId);
      if (k.terminalDurable && k.terminalRecord === r.terminal) return undefined;
    }
    return this.durable();
  }

  /**
   * @internal Resolves once everything this view read so far is durable, so
   * an answer never reports a commit (a termination, say) that a crash
   * could still undo. Free when no commit is in flight.
   */
  durable(): Promise<void> {
    // The source's own promise, not an async frame that only awaits it.
    try {
      return this.#src.durable?.() ?? Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * The committed outcome of a terminated run, as the worker that ended it
   * recorded it: in the terminal record (a small one), else in the run
   * result record it wrote before the terminating settlement. A run that
   * terminated without a worker (a cancel of a waiting step, a step
   * dead-lettered outside the worker, a debounce replacing it) has its
   * termination as its outcome: status, error and error kind as `status`
   * reports them, and its headers (in a result record past 1 KiB). `null` while the
   * run is active, when it is unknown, and for a run whose worker's result
   * record was removed (`wait` says why).
   */
  async outcome(runId: RunId | string): Promise<RunOutcome | null> {
    const id = RunId.parse(runId);
    const r = this.stateNow(id) ?? (await this.state(id));
    const durable = this.durableAfter(id, r);
    if (durable !== undefined) await durable;
    if (r.kind !== "terminated") return null;
    if (this.#borrow !== undefined) this.#runKeys.ended(id);
    // An outcome kept in the record is returned as it is: a promise returned from here would cost two more turns.
    return outcomeOfTerminal(r.terminal) ?? this.outcomeOf(r.terminal);
  }

  /**
   * @internal The end `wait` reports for `terminal`: its termination and
   * result record, and for a succeeded run whose record cannot be read,
   * why (its worker wrote one before the end).
   */
  async endOf(terminal: TerminalRecord): Promise<RunEnd> {
    const termination = terminationOf(terminal);
    const outcome = await this.outcomeOf(terminal);
    if (outcome !== null || terminal.status !== "succeeded") return { termination, outcome };
    const memos = this.#memos.withPrefix(terminal.memoPrefix ?? this.#memos.prefix);
    const stored = await memos.hasOutcomeRecord(terminal.runId, terminal.token);
    return { termination, outcome: null, resultUnavailable: stored ? "damaged" : "removed" };
  }

  /**
   * @internal `endOf` answered in the caller's turn when the outcome is kept
   * in the record (most runs'), else undefined (then await `endOf`, which
   * reads the result record).
   */
  endNow(terminal: TerminalRecord): RunEnd | undefined {
    const inline = outcomeOfTerminal(terminal);
    return inline === null ? undefined : { termination: terminationOf(terminal), outcome: inline };
  }

  /** @internal The outcome recorded for `terminal`: kept in it (or its termination, for an end without a worker), else its run result record, if one was written. */
  async outcomeOf(terminal: TerminalRecord): Promise<RunOutcome | null> {
    const inline = outcomeOfTerminal(terminal);
    if (inline !== null) return inline;
    const memos = this.#memos.withPrefix(terminal.memoPrefix ?? this.#memos.prefix);
    let rec = await memos.readOutcomeRecord(terminal.runId, terminal.token);
    // Kept from an earlier end under the same token (a redrive since, or an earlier pass whose step had the
    // same job id, ended in this process while another one ended this pass): the store's, read again, is this end's.
    if (rec !== null && !(outcomeRecordOfEnd(rec, terminal) && outcomeOfEnd(rec.outcome, terminal))) {
      rec = await memos.readOutcomeRecord(terminal.runId, terminal.token);
    }
    // Read first even for an end without a worker: its token tells it from a worker's only by its form.
    return rec !== null && outcomeRecordOfEnd(rec, terminal) ? rec.outcome : outcomeOfTermination(terminal);
  }

  /**
   * One page of the step queue's runs, newest submission first, filtered by
   * state, workflow name and submission time (see `ListRunsOptions`). Reads
   * the run index, never the whole state; throws `ValidationError` for a
   * malformed option or a cursor this listing did not hand out.
   */
  async listRuns(opts: ListRunsOptions = {}): Promise<RunPage> {
    const page = await listRuns(this.#reads(), opts);
    await this.durable();
    return page;
  }

  /** @internal A listing restricted to typed jobs or workflows (`listJobs`). */
  async listRunsOf(kind: "job" | "workflow", opts: ListRunsOptions, what: string): Promise<RunPage> {
    const page = await listRuns(this.#reads(), opts, what, { kind });
    await this.durable();
    return page;
  }

  #reads() {
    const src = this.#src;
    return {
      queueName: this.#queueName,
      records: (id: string) => this.records(id),
      job: (id: string) => src.job(id),
      kvGet: (k: string) => src.kvGet(k),
      kvScan: (p: string, o?: KvScanOptions) => src.kvScan(p, o),
      ...(src.attemptHistory === undefined ? {} : { attemptHistory: (id: string) => src.attemptHistory!(id) }),
    };
  }

  /** The run's history step by step (see `RunHistory`), or `null` for an unknown run. */
  async inspectRun(runId: RunId | string): Promise<RunHistory | null> {
    const history = await inspectRun(this.#reads(), RunId.parse(runId));
    await this.durable();
    return history;
  }

  /**
   * @internal `inspectRun` with one page of the history entries (one read;
   * see `HistoryPage`), those after step `after`: the run page's and
   * `taquba runs show`'s read.
   */
  async inspectRunPage(runId: RunId | string, after?: number): Promise<(RunHistory & { readonly historyPage: HistoryPage }) | null> {
    if (after !== undefined && !(Number.isSafeInteger(after) && after >= 0))
      throw new ValidationError(`inspectRunPage takes a step number to read after, got ${describeValue(after)}`);
    const history = await inspectRunPage(this.#reads(), RunId.parse(runId), after);
    await this.durable();
    return history;
  }

  /**
   * One page of the step queue's run groups with their member counts,
   * newest first. `placement`: on a sharded store, the shard this view
   * reads (a shard's runtime and a sharded client pass it), so a damaged
   * member record that names no run is named by its routed id.
   */
  async listGroups(opts: ListGroupsOptions = {}, placement?: ShardPlacement): Promise<GroupPage> {
    if (placement !== undefined && !isPlacement(placement))
      throw new ValidationError(`listGroups' placement must be { shard, shards } with 0 <= shard < shards, got ${describeValue(placement)}`);
    const page = await listGroups({ queueName: this.#queueName, kvScan: (p, o) => this.#src.kvScan(p, o), placement }, opts);
    await this.durable();
    return page;
  }
}

/** Whether `p` is a shard placement: integer `shards` of at least 1 and `shard` below it. */
function isPlacement(p: unknown): p is ShardPlacement {
  if (p === null || typeof p !== "object") return false;
  const { shard, shards } = p as Record<string, unknown>;
  return (
    Number.isSafeInteger(shards) && (shards as number) >= 1 && Number.isSafeInteger(shard) && (shard as number) >= 0 && (shard as number) < (shards as number)
  );
}
