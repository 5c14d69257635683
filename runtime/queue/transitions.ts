/**
 * @module Job state transitions as functions over a `Txn`: each keeps the
 * record, its state index, the dedup index and the stats in step. No IO and
 * no clock reads here; callers pass `now`.
 */
import type { ResolvedQueueConfig } from "./config.js";
import { backoffDelay } from "./config.js";
import { StoreCorruptedError } from "../errors.js";
import { DuplicateJobIdError } from "./errors.js";
import * as K from "./keys.js";
import { boundText, errorFields, MAX_MESSAGE_CHARS } from "../logger.js";
import { cutText } from "../option-values.js";
import {
  copyJob,
  decodeCarriedDone,
  decodeHistory,
  decodeJob,
  encodeHistory,
  encodeJob,
  encodeSuperseded,
  type AttemptOutcome,
  type JobAttempt,
  type JobRecord,
} from "./record.js";
import { textBytes } from "./record-pack.js";
import { boundedHistory } from "./attempt-history.js";
import { encodeInsertedJob } from "./inserted-record.js";
import type { CarriedDone, Txn } from "./txn.js";
import { ownedBytes } from "./owned-bytes.js";
import type { EnqueueOptions, EnqueueOutcome } from "./types.js";

const EMPTY = new Uint8Array(0);
const decoder = new TextDecoder();

/** What a transition needs besides the transaction. */
export interface TransitionContext {
  now: number;
  config(queue: string): ResolvedQueueConfig;
  /** A fresh monotonic ULID. */
  newId(): string;
  /**
   * Whether a job may already hold `id`, just drawn by `newId` (see
   * `CallerIdBound`: only a caller's own ULID-shaped id can); absent, every
   * drawn id is looked up. Ids asked about must grow, as draws do.
   */
  mayHoldDrawn?(id: string): boolean;
  /**
   * Whether an enqueue still under way (its payload being written, its
   * commit not built) names `id` as its job's: a drawn id passes over it,
   * or that caller would find its own id taken. Asked only of ids
   * `mayHoldDrawn` allows.
   */
  callerIdInFlight?(id: string): boolean;
  /**
   * Whether a job may hold `id`, drawn earlier by this queue for a job
   * named with it (see `PreparedEnqueue.jobIdDrawn`): only a caller's id
   * noted since the draw can. Absent, such an id is looked up.
   */
  mayHoldEarlierDraw?(id: string): boolean;
  /**
   * The ids the callers name for the jobs this transaction inserts (see
   * `callerIdsOfCommit`), undefined when none can meet a draw: a drawn id
   * passes over them, since a later item's is not written yet.
   */
  readonly callerIdsInCommit?: ReadonlySet<string> | undefined;
  /** The high-water mark to store with a new job's `seq`, or undefined when one an applied commit stored covers it (see `SeqHighWater`). */
  seqHighWater(seq: string): string | undefined;
  /**
   * False while the store holds no superseded mark (`v/` key) and no
   * transaction wrote one since the queue opened; set true before a mark
   * is written. A caller id then needs no lookup of a stale mark to drop.
   */
  readonly superseded: { marks: boolean };
}

/** An enqueue whose payload may already be offloaded. */
export interface PreparedEnqueue {
  queueName: string;
  /** The full payload (also when offloaded; only its size is recorded then). */
  payload: Uint8Array;
  payloadRef?: string;
  opts: EnqueueOptions;
  /** Whether `opts.jobId` is counted in flight (`CallerIdBound.note`) until `QueueCore.discardUnused` ends that; `prepare` always sets it. */
  callerIdInFlight?: boolean;
  /**
   * Whether `opts.jobId` was drawn by this queue's `nextJobId`, not chosen
   * by a caller (`DrawnIdEnqueueOptions`): not counted in flight, and looked
   * up only when a caller's job may have taken it since the draw. A taken
   * one is refused all the same (`DuplicateJobIdError`): the records the
   * caller built name it, so the caller draws again.
   */
  jobIdDrawn?: boolean;
  /**
   * Whether `payload` is an array made for this job alone, exactly its
   * bytes (`payloadOwnedBy`): a chained claim of the job hands it out as
   * it is, without the copy that keeps a view of a shared buffer from
   * being held. A copy replacing `payload` (`holdPrepared`) is one too.
   */
  payloadOwned?: boolean;
}

/**
 * The engine keys of a claimed job as the insert that claimed it wrote
 * them: its record key and its `c/` index key. The settlement of that claim
 * hands them back, so one job's reads and writes across its insert and its
 * settlement use the same strings: a key built afresh is a new
 * concatenation that the engine's memtable flattens on its first
 * comparison (a copy per use). `carried`: the done count of its queue the
 * claimed entry holds (see `Txn.finish`), set by the commit that wrote it.
 */
export interface JobKeys extends CarriedDone {
  readonly job: string;
  readonly claimed: string;
}

/**
 * Whether the claimed index entry of `r` may carry a done count: only the
 * insert of a job already claimed writes one (attempt 1, claimed when
 * enqueued), and the entry goes with that claim, so a job claimed from
 * pending, or claimed again, has an empty entry and is not looked up.
 */
function mayCarry(r: JobRecord): boolean {
  return r.attempts === 1 && r.claimedAt === r.enqueuedAt;
}

/**
 * Deletes the claimed index entry `key` of `r` (claimed), adding the done
 * count it carries to the queue's stats. `claim`: what the claim that wrote
 * the entry remembers of it, when the caller has it.
 */
function dropClaimedEntry(txn: Txn, r: JobRecord, key: string, claim?: CarriedDone): void {
  let carried = claim?.carried;
  if (carried === undefined && mayCarry(r)) carried = decodeCarriedDone(key, txn.get(key));
  if (carried !== undefined && carried > 0) txn.bumpDone(r.queue, carried);
  txn.delete(key);
}

/** Deletes a claimed index entry whose job record is gone (see `recoverClaims`), keeping the done count it carries. */
export function dropOrphanClaimedEntry(txn: Txn, key: string): void {
  const carried = decodeCarriedDone(key, txn.get(key));
  if (carried > 0) txn.bumpDone(K.queueOfClaimedKey(key), carried);
  txn.delete(key);
}

/** The stored record of job `id`, or undefined when there is none. */
export function readJob(txn: Pick<Txn, "get">, id: string): JobRecord | undefined {
  const key = K.jobKey(id);
  const bytes = txn.get(key);
  return bytes === undefined ? undefined : decodeJobOf(key, bytes, id);
}

/** The record of job `id` decoded from `bytes`, stored at `key`; `StoreCorruptedError` when it cannot be read or names another job. */
export function decodeJobOf(key: string, bytes: Uint8Array, id: string): JobRecord {
  const r = decodeJob(key, bytes);
  // A record naming another job (copied in from another key, or its id damaged) is not this job's: handled as
  // another job it changed that job's indexes and stats, not this one's.
  if (r.id !== id) throw new StoreCorruptedError(key, `a job record naming job ${JSON.stringify(r.id)}, not job ${id} it is stored as`);
  return r;
}

/** The index key a record in its current state lives under, if any. */
export function indexKey(r: JobRecord): string | undefined {
  switch (r.state) {
    case "pending":
      return K.pendingKey(r.queue, r.priority, r.seq);
    case "scheduled":
      return K.scheduledKey(r.runAt ?? 0, r.queue, r.id);
    case "claimed":
      return K.claimedKey(r.queue, r.id);
    case "done":
      return r.completedAt === undefined ? undefined : K.doneKey(r.queue, r.completedAt, r.id);
    case "dead":
      return K.deadKey(r.queue, r.id);
  }
}

function indexValue(r: JobRecord): Uint8Array {
  return r.state === "pending" ? textBytes(r.id) : EMPTY;
}

/**
 * Writes `r` and its index entries; `prev` is the stored copy being
 * replaced, if any. `jobKey`: `r`'s record key, when the caller has it;
 * `bytes`: `r` encoded, when the caller wrote it itself; `claim`: see
 * `dropClaimedEntry`. Returns the index key written.
 */
export function writeJob(
  txn: Txn,
  r: JobRecord,
  prev: JobRecord | undefined,
  jobKey = K.jobKey(r.id),
  bytes: Uint8Array = encodeJob(r, txn.valuesCopied),
  claim?: CarriedDone,
): string | undefined {
  const key = indexKey(r);
  // A claimed job written again claimed (a cancel's flag) keeps its entry, and what it carries, as it is.
  const entryKept = prev?.state === "claimed" && r.state === "claimed";
  if (prev !== undefined) {
    const old = indexKey(prev);
    if (old !== undefined && old !== key) {
      if (prev.state === "claimed") dropClaimedEntry(txn, prev, old, claim);
      else txn.delete(old);
    }
    if (prev.retainUntil !== undefined && prev.retainUntil !== r.retainUntil) txn.delete(K.retentionKey(prev.retainUntil, prev.id));
  }
  txn.put(jobKey, ownedBytes(bytes));
  if (key !== undefined && !entryKept) txn.put(key, ownedBytes(indexValue(r)));
  if (r.retainUntil !== undefined) txn.put(K.retentionKey(r.retainUntil, r.id), ownedBytes(EMPTY));
  txn.move(r.queue, prev?.state ?? null, r.state);
  return key;
}

/**
 * Removes a job entirely: record, index, dedup and debounce entries and
 * history. `historyless`: the caller knows the job has no attempt history
 * (see `ClaimTicket.historyless`), so its key is not looked up. `keys`: the
 * keys of `r`, claimed, as its claim wrote them (see `JobKeys`).
 */
export function deleteJob(txn: Txn, r: JobRecord, historyless = false, keys?: JobKeys): void {
  const key = keys !== undefined && r.state === "claimed" ? keys.claimed : indexKey(r);
  if (key !== undefined && r.state === "claimed") dropClaimedEntry(txn, r, key, keys);
  else if (key !== undefined) txn.delete(key);
  if (r.retainUntil !== undefined) txn.delete(K.retentionKey(r.retainUntil, r.id));
  releaseDedup(txn, r);
  releaseDebounce(txn, r);
  txn.delete(keys?.job ?? K.jobKey(r.id));
  // Most jobs have no attempt history: a blind delete would cost an index update and WAL bytes per job.
  if (!historyless && txn.has(K.historyKey(r.id))) txn.delete(K.historyKey(r.id));
  if (r.payloadRef !== undefined) txn.delete(K.payloadRefKey(r.payloadRef));
  txn.move(r.queue, r.state, null);
}

/** Drops the dedup index entry while it still points at this job. */
export function releaseDedup(txn: Txn, r: JobRecord): void {
  if (r.dedupKey === undefined) return;
  const key = K.dedupKey(r.queue, r.dedupKey);
  const held = txn.get(key);
  if (held !== undefined && decoder.decode(held) === r.id) txn.delete(key);
}

/** Drops the debounce index entry while it still points at this job. */
export function releaseDebounce(txn: Txn, r: JobRecord): void {
  if (r.debounceKey === undefined) return;
  const key = K.debounceKey(r.queue, r.debounceKey);
  const held = txn.get(key);
  if (held !== undefined && decoder.decode(held) === r.id) txn.delete(key);
}

/** How long the mark of a superseded job is kept, so a late `waitForCompletion` still learns what became of it: 7 days. */
export const SUPERSEDED_RETENTION_MS = 7 * 24 * 3600 * 1000;

/**
 * The debounce window an enqueue joins: the job waiting in the open window
 * of its key (to supersede) and the window's end. Undefined without debounce.
 */
function debounceOf(txn: Txn, ctx: TransitionContext, item: PreparedEnqueue): { key: string; until: number; holder: JobRecord | undefined } | undefined {
  const { queueName: queue, opts } = item;
  const cfg = ctx.config(queue).debounce;
  const d = opts.debounce ?? (cfg === undefined ? undefined : { key: cfg.keyOf(opts.headers), periodMs: cfg.periodMs });
  if (d === undefined) return undefined;
  const holder = openWindowHolder(txn, queue, d.key, ctx.now);
  return holder === undefined ? { key: d.key, until: ctx.now + d.periodMs, holder: undefined } : { key: d.key, until: holder.runAt!, holder };
}

/** The job waiting in the open debounce window `key` of `queue` at `now`, which an enqueue with the key would supersede. */
export function openWindowHolder(src: Pick<Txn, "get">, queue: string, key: string, now: number): JobRecord | undefined {
  const held = src.get(K.debounceKey(queue, key));
  const holder = held === undefined ? undefined : readJob(src, decoder.decode(held));
  // The window is open while its job waits for it to end; a job already due, pending or claimed started a window that closed.
  const open = holder !== undefined && holder.state === "scheduled" && holder.debounceKey === key && holder.runAt !== undefined && now < holder.runAt;
  return open ? holder : undefined;
}

/** Appends `entry` to the attempt history of job `id`, which keeps its latest entries (see attempt-history.ts). */
export function appendHistory(txn: Txn, id: string, entry: JobAttempt): void {
  const key = K.historyKey(id);
  const list = historyOrFresh(key, txn.get(key));
  list.push(entry);
  txn.put(key, ownedBytes(encodeHistory(boundedHistory(list))));
}

/**
 * The stored attempt history at `key`, or none when it cannot be read: the
 * history only tells of past attempts, and a damaged one must not stop the
 * job's own settlement (every nack and dead letter would throw, leaving
 * the job claimed for ever). It starts afresh with the entry being added.
 */
function historyOrFresh(key: string, bytes: Uint8Array | undefined): JobAttempt[] {
  try {
    return decodeHistory(key, bytes);
  } catch (e) {
    if (e instanceof StoreCorruptedError) return [];
    throw e;
  }
}

/** Records how the current claim of `r` ended, in its attempt history. */
export function recordAttempt(txn: Txn, r: JobRecord, now: number, outcome: AttemptOutcome, error?: string, cause?: unknown): void {
  const entry: JobAttempt = {
    attempt: r.attempts,
    claimedAt: r.claimedAt,
    recordedAt: now,
    outcome,
    error: error === undefined ? undefined : boundText(error, MAX_MESSAGE_CHARS),
  };
  if (cause !== undefined) {
    const f = errorFields(cause);
    entry.errorName = f.name;
    if (f.stack !== undefined) entry.errorStack = f.stack;
  }
  appendHistory(txn, r.id, entry);
}

/**
 * Inserts one job, or reports the job holding its dedup key. Throws
 * `DuplicateJobIdError` for a caller id that is in use (the caller then
 * discards the whole transaction); a generated id in use (a caller took
 * it) is replaced by the next one drawn.
 */
export function insertJob(txn: Txn, ctx: TransitionContext, item: PreparedEnqueue): EnqueueOutcome {
  return insertJobRecord(txn, ctx, item, false).outcome;
}

/**
 * Whether a job holds the drawn id `id` (record key `key`), an item of the
 * same commit names it, or an enqueue in flight does; the transaction
 * asked only when a caller's job may hold it.
 */
function drawnTaken(txn: Txn, ctx: TransitionContext, id: string, key: string): boolean {
  if (ctx.callerIdsInCommit?.has(id) === true) return true;
  if (ctx.mayHoldDrawn?.(id) === false) return false;
  return ctx.callerIdInFlight?.(id) === true || txn.has(key);
}

/**
 * Whether a job holds the id `id` that `item` names (record key `key`).
 * One this queue drew for it is looked up only when a caller's job may
 * have taken it since the draw: a step's next job otherwise costs no
 * search of the keys.
 */
function namedTaken(txn: Txn, ctx: TransitionContext, item: PreparedEnqueue, id: string, key: string): boolean {
  if (item.jobIdDrawn === true && ctx.mayHoldEarlierDraw?.(id) === false) return false;
  return txn.has(key);
}

/** What `insertJobRecord` did: `record` is the record it wrote (undefined for a dedup hit), `keys` its engine keys when written claimed. */
export interface InsertedJob {
  outcome: EnqueueOutcome;
  record: JobRecord | undefined;
  keys?: JobKeys;
}

/**
 * `insertJob`, returning the record it wrote. With `claimed`, a job due now
 * is written as it would be after `claimJob` in the same transaction
 * (attempt 1, claimed at `ctx.now`, its dedup key released), without the
 * pending index and dedup entries in between; a future job stays scheduled.
 * `keys`: the engine keys of a job written claimed.
 */
export function insertJobRecord(txn: Txn, ctx: TransitionContext, item: PreparedEnqueue, claimed: boolean): InsertedJob {
  const { queueName: queue, opts } = item;
  if (opts.dedupKey !== undefined) {
    const held = txn.get(K.dedupKey(queue, opts.dedupKey));
    if (held !== undefined) return { outcome: { jobId: decoder.decode(held), newlyEnqueued: false }, record: undefined };
  }
  let seq = ctx.newId();
  let id = opts.jobId ?? seq;
  // Built once: the existence check, the write and (claimed) the settlement of the claim use this one string.
  let jobKey = K.jobKey(id);
  // A drawn id no caller's job can hold is not looked up: a fill's new key missed in the transaction and every key run.
  if (opts.jobId === undefined ? drawnTaken(txn, ctx, seq, jobKey) : namedTaken(txn, ctx, item, id, jobKey)) {
    if (opts.jobId !== undefined) throw new DuplicateJobIdError(id);
    // A generated id a caller took (ids drawn in one millisecond count up by one): the next one is drawn
    // instead, so an enqueue without an id never fails on one. Ends: callers hold finitely many ids.
    do {
      seq = ctx.newId();
      jobKey = K.jobKey(seq);
    } while (drawnTaken(txn, ctx, seq, jobKey));
    id = seq;
  }
  const mark = ctx.seqHighWater(seq);
  // A mark this transaction stores already covers `seq`: a batch of inserts stores one mark, not one per job.
  if (mark !== undefined && !(txn.seqHighWater !== undefined && seq <= txn.seqHighWater)) {
    txn.put(K.SEQ_HIGH_WATER, ownedBytes(textBytes(mark)));
    txn.seqHighWater = mark;
  }
  const cfg = ctx.config(queue);
  const debounce = debounceOf(txn, ctx, item);
  const runAt = debounce?.until ?? opts.runAt;
  const scheduled = runAt !== undefined && runAt > ctx.now;
  const claim = claimed && !scheduled;
  // The frozen copy the enqueue's check made (validateEnqueueOptions), taken as it is: a record never
  // changes its headers (a claim freezes them), so the records made from one staged item may share it.
  const headers = opts.headers;
  const r: JobRecord = {
    id,
    queue,
    state: claim ? "claimed" : scheduled ? "scheduled" : "pending",
    seq,
    priority: opts.priority ?? cfg.defaultPriority,
    payload: item.payloadRef === undefined ? item.payload : EMPTY,
    payloadRef: item.payloadRef,
    payloadSize: item.payloadRef === undefined ? undefined : item.payload.byteLength,
    headers,
    attempts: claim ? 1 : 0,
    maxAttempts: opts.maxAttempts ?? cfg.maxAttempts,
    enqueuedAt: ctx.now,
    runAt: scheduled ? runAt : undefined,
    // A claim releases the dedup and debounce keys (as `claimJob` does), so a claimed insert never takes them.
    dedupKey: claim ? undefined : opts.dedupKey,
    debounceKey: claim ? undefined : debounce?.key,
    // In the literal, undefined when not claimed: assigned after it, the field took a property array of its own
    // (about 32 B a chained step). Not spread in (a slow path in V8). The literal's keys and their order,
    // `claimedAt` last, are what `encodeInsertedJob` writes: change them together.
    claimedAt: claim ? ctx.now : undefined,
  };
  let superseded: string | undefined;
  if (debounce?.holder !== undefined) {
    // The earlier job of the window goes in this commit; its mark says by whom, for its waiters.
    const old = debounce.holder;
    deleteJob(txn, old);
    const retainUntil = ctx.now + SUPERSEDED_RETENTION_MS;
    ctx.superseded.marks = true;
    txn.put(K.supersededKey(old.id), ownedBytes(encodeSuperseded({ by: id, queue, at: ctx.now, retainUntil })));
    txn.put(K.retentionKey(retainUntil, old.id), ownedBytes(EMPTY));
    superseded = old.id;
  }
  // A caller id may be reused after its job was superseded: the new job is not.
  if (opts.jobId !== undefined && ctx.superseded.marks && txn.has(K.supersededKey(id))) txn.delete(K.supersededKey(id));
  const index = writeJob(txn, r, undefined, jobKey, encodeInsertedJob(r, txn.valuesCopied));
  let keys: JobKeys | undefined;
  if (claim && index !== undefined) {
    keys = { job: jobKey, claimed: index, carried: 0 };
    txn.offerCarrier(queue, index, keys);
  }
  if (r.payloadRef !== undefined) txn.put(K.payloadRefKey(r.payloadRef), ownedBytes(textBytes(id)));
  if (r.dedupKey !== undefined) txn.put(K.dedupKey(queue, r.dedupKey), ownedBytes(textBytes(id)));
  if (r.debounceKey !== undefined) txn.put(K.debounceKey(queue, r.debounceKey), ownedBytes(textBytes(id)));
  const outcome: EnqueueOutcome = superseded === undefined ? { jobId: id, newlyEnqueued: true } : { jobId: id, newlyEnqueued: true, superseded };
  return keys !== undefined ? { outcome, record: r, keys } : { outcome, record: r };
}

/** Claims one pending job: attempts+1, dedup released, state claimed. */
export function claimJob(txn: Txn, r: JobRecord, now: number): JobRecord {
  releaseDedup(txn, r);
  releaseDebounce(txn, r);
  const next = copyJob(r);
  next.state = "claimed";
  next.attempts = r.attempts + 1;
  next.claimedAt = now;
  next.dedupKey = undefined;
  next.debounceKey = undefined;
  writeJob(txn, next, r);
  return next;
}

/**
 * Most characters of an error text kept in a job record's `lastError` and in
 * a dead-letter event or log record; the rest is replaced by a marker giving
 * the original length. The attempt history keeps fewer
 * ({@link MAX_MESSAGE_CHARS}). A workflow run keeps its step's whole error
 * text in the run's result record, not here.
 */
export const MAX_LAST_ERROR_CHARS = 16 * 1024;

/** `error` bounded for a job record's `lastError` or a dead-letter event. */
export function boundLastError(error: string): string {
  return cutText(error, MAX_LAST_ERROR_CHARS);
}

/** Back to pending (keeping its FIFO position) or to scheduled at `runAt`. */
export function requeueJob(txn: Txn, r: JobRecord, runAt: number | undefined, lastError: string | undefined): JobRecord {
  const next = copyJob(r);
  next.state = runAt === undefined ? "pending" : "scheduled";
  next.runAt = runAt;
  next.lastError = lastError === undefined ? r.lastError : boundLastError(lastError);
  writeJob(txn, next, r);
  return next;
}

/** Dead now; schedules the retention sweep per the queue config. */
export function killJob(txn: Txn, ctx: TransitionContext, r: JobRecord, error: string): JobRecord {
  const keep = ctx.config(r.queue).deadRetentionMs;
  const next = copyJob(r);
  next.state = "dead";
  next.runAt = undefined;
  next.failedAt = ctx.now;
  next.lastError = boundLastError(error);
  next.retainUntil = keep === null ? undefined : ctx.now + keep;
  writeJob(txn, next, r);
  return next;
}

/**
 * Ack: a done record when the queue retains done jobs, else the job is
 * deleted. Returns the done record, if kept. `keys`: see `deleteJob`.
 */
export function completeJob(txn: Txn, ctx: TransitionContext, r: JobRecord, historyless = false, keys?: JobKeys): JobRecord | undefined {
  const keep = ctx.config(r.queue).doneRetentionMs;
  if (keep === undefined) {
    deleteJob(txn, r, historyless, keys);
    txn.bumpDone(r.queue, 1);
    return undefined;
  }
  const next = copyJob(r);
  next.state = "done";
  next.completedAt = ctx.now;
  next.retainUntil = ctx.now + keep;
  writeJob(txn, next, r, undefined, undefined, keys);
  return next;
}

/**
 * A failed attempt: retry after the backoff, or dead at the attempt limit.
 * `retryAfterMs` (a server's Retry-After, say) can push the retry later than
 * the backoff, never earlier.
 */
export function failJob(txn: Txn, ctx: TransitionContext, r: JobRecord, error: string, retryAfterMs = 0): { record: JobRecord; dead: boolean } {
  if (r.attempts >= r.maxAttempts) return { record: killJob(txn, ctx, r, error), dead: true };
  const delay = Math.max(backoffDelay(ctx.config(r.queue).backoff, r.attempts), retryAfterMs);
  return { record: requeueJob(txn, r, delay > 0 ? ctx.now + delay : undefined, error), dead: false };
}
