/**
 * @module Read-only views of a queue's state, shared by `Queue.view()` (over
 * the live engine) and `QueueReader` (over a reader in another process).
 */
import { copyBytes } from "../bytes.js";
import { StoreCorruptedError, ValidationError } from "../errors.js";
import { JobRecordDamagedError } from "./errors.js";
import { readableHistory } from "./attempt-history.js";
import * as K from "./keys.js";
import { readQueueStats } from "./queue-stats.js";
import { validateJobId, validateKvKey, validateKvPrefix, validateQueueName } from "./names.js";
import { decodeHistory, JOB_STATES, type JobAttempt, type JobRecord, type JobState, type QueueStats } from "./record.js";
import { readJob as readStoredJob } from "./transitions.js";
import type { ReadSource } from "./txn.js";
import { warmJobs } from "./warm.js";
import type { JobInfo, KvEntry, Page, WaitingReason } from "./types.js";
import { describeValue } from "../option-values.js";
import { refuseUnknownKvScanFields, refuseUnknownListFields } from "./queue-option-fields.js";

/** A page of caller KV entries; the scan is finished when `nextCursor` is undefined. */
export interface KvPage {
  entries: KvEntry[];
  nextCursor?: string;
}

/** Options of paged KV scans. */
export interface KvScanOptions {
  /** Continue after this key (a `nextCursor`). */
  after?: string;
  /** Most entries per page. Default: 1000. */
  limit?: number;
}

/** Options of job listings. */
export interface ListJobsOptions {
  /** A `nextCursor` from the previous page. */
  cursor?: string;
  /** Most jobs per page. Default: 100. */
  limit?: number;
}

/** Reads over one queue store; every method reads one consistent state. */
export interface QueueView {
  /** Counters of one queue (`done` counts every ack, cumulatively). */
  stats(queueName: string): Promise<QueueStats>;
  /** Every queue that ever held a job. */
  listQueues(): Promise<string[]>;
  /** One job, or null when unknown (or removed: acked without retention, cancelled, swept). */
  job(jobId: string): Promise<JobInfo | null>;
  /**
   * Jobs of one queue in one state. Order: pending by priority then FIFO,
   * scheduled by due time, claimed and dead by id, done by completion time.
   * A page may be short; the listing ends when `nextCursor` is undefined.
   */
  listJobs(queueName: string, state: JobState, opts?: ListJobsOptions): Promise<Page<JobInfo>>;
  /** Dead jobs of one queue in id order, after `after`. */
  deadJobs(queueName: string, opts?: { after?: string; limit?: number }): Promise<JobInfo[]>;
  /** How each claim of a job ended, oldest first. Empty once the job is removed. */
  attemptHistory(jobId: string): Promise<JobAttempt[]>;
  kvGet(key: string): Promise<Uint8Array | null>;
  kvScan(prefix: string, opts?: KvScanOptions): Promise<KvPage>;
}

const decoder = new TextDecoder();

/** The public view of a stored record. */
export function toJobInfo(r: JobRecord): JobInfo {
  const info: JobInfo = {
    id: r.id,
    queueName: r.queue,
    state: r.state,
    priority: r.priority,
    attempt: r.attempts,
    maxAttempts: r.maxAttempts,
    headers: { ...(r.headers ?? {}) },
    payloadSize: r.payloadSize ?? r.payload.byteLength,
    payloadOffloaded: r.payloadRef !== undefined,
    enqueuedAt: r.enqueuedAt,
    cancelRequested: r.cancelRequested === true,
  };
  if (r.requeues !== undefined) info.requeues = r.requeues;
  if (r.claimedAt !== undefined) info.claimedAt = r.claimedAt;
  if (r.runAt !== undefined) info.runAt = r.runAt;
  if (r.wokenAt !== undefined) info.wokenAt = r.wokenAt;
  // A copy: the record's bytes may be the engine's own (a record not yet paged, in a shared
  // 64 KiB chunk), which a reader changing them would change in memory, and keep alive.
  if (r.attached !== undefined) info.attached = copyBytes(r.attached);
  if (r.completedAt !== undefined) info.completedAt = r.completedAt;
  if (r.failedAt !== undefined) info.failedAt = r.failedAt;
  if (r.lastError !== undefined) info.lastError = r.lastError;
  if (r.dedupKey !== undefined) info.dedupKey = r.dedupKey;
  if (r.debounceKey !== undefined) info.debounceKey = r.debounceKey;
  // A scheduled job in a debounce window waits for the window's end; the record says so, in any process.
  if (r.state === "scheduled" && r.debounceKey !== undefined && r.runAt !== undefined) {
    info.waiting = { reason: "debounced", key: r.debounceKey, until: r.runAt };
  }
  return info;
}

/** The stored record of job `id`; a damaged one is a `JobRecordDamagedError` naming the job, not the store's key. */
function readJob(src: ReadSource, id: string): JobRecord | undefined {
  try {
    return readStoredJob(src, id);
  } catch (err) {
    if (err instanceof StoreCorruptedError) throw new JobRecordDamagedError(id, err.detail);
    throw err;
  }
}

/** `r`, listed among the jobs of `queue`; a record naming another queue is a `JobRecordDamagedError` naming the job. */
function ofQueue(r: JobRecord, queue: string): JobRecord {
  if (r.queue === queue) return r;
  throw new JobRecordDamagedError(r.id, `a job record of queue ${JSON.stringify(r.queue)}, found among the jobs of queue ${JSON.stringify(queue)}`);
}

function pageLimit(limit: number | undefined, dflt: number): number {
  if (limit === undefined) return dflt;
  if (!Number.isInteger(limit) || limit < 1) throw new ValidationError(`limit must be a positive integer, got ${describeValue(limit)}`);
  return limit;
}

/** Between a scheduled cursor's queue and its key: no queue name holds it (names.ts). */
const SCHEDULED_CURSOR_MARK = "@";

/** The shared implementation; `src` is read synchronously, so each call sees one state. */
export class StoreView implements QueueView {
  /**
   * `waiting` adds what only the owning process knows (its claims and rate
   * windows) to a pending job's view; a reader in another process has none.
   */
  constructor(
    readonly src: ReadSource,
    readonly waiting?: (r: JobRecord) => WaitingReason | undefined,
  ) {}

  #info(r: JobRecord): JobInfo {
    const info = toJobInfo(r);
    if (r.state === "pending" && this.waiting !== undefined) {
      const w = this.waiting(r);
      if (w !== undefined) info.waiting = w;
    }
    return info;
  }

  async stats(queueName: string): Promise<QueueStats> {
    validateQueueName(queueName);
    return readQueueStats(this.src, queueName);
  }

  async listQueues(): Promise<string[]> {
    return [...this.src.scan({ prefix: K.STATS })].map(([k]) => k.slice(K.STATS.length));
  }

  async job(jobId: string): Promise<JobInfo | null> {
    validateJobId(jobId);
    for (let w = warmJobs(this.src, [jobId]); w !== undefined; w = warmJobs(this.src, [jobId])) await w;
    const r = readJob(this.src, jobId);
    return r === undefined ? null : this.#info(r);
  }

  async listJobs(queueName: string, state: JobState, opts: ListJobsOptions = {}): Promise<Page<JobInfo>> {
    validateQueueName(queueName);
    if (!JOB_STATES.includes(state)) throw new ValidationError(`unknown job state ${JSON.stringify(state)}; use one of ${JOB_STATES.join(", ")}`);
    refuseUnknownListFields(opts, false);
    const limit = pageLimit(opts.limit, 100);
    const prefix = {
      pending: K.pendingPrefix(queueName),
      scheduled: K.SCHEDULED,
      claimed: K.claimedPrefix(queueName),
      done: K.donePrefix(queueName),
      dead: K.deadPrefix(queueName),
    }[state];
    // Scheduled keys are in global time order, so one queue's page filters;
    // bound the keys examined so a page costs O(limit) even then.
    const budget = limit * 10 + 100;
    const cursor: unknown = opts.cursor;
    // A cursor is the last key a page of this listing examined: any other (another state's or queue's, text
    // made up) would start the scan before the listing (its first page again) or past it (an empty page).
    // Scheduled keys of every queue share one timeline, so a scheduled cursor also names its queue.
    const cursorHead = state === "scheduled" ? `${queueName}${SCHEDULED_CURSOR_MARK}` : "";
    if (cursor !== undefined && (typeof cursor !== "string" || !cursor.startsWith(cursorHead + prefix))) {
      throw new ValidationError(
        `cursor ${describeValue(cursor)} is not a cursor of queue ${JSON.stringify(queueName)}'s ${state} jobs; pass the nextCursor of the previous page of the same queue and state`,
      );
    }
    const start = cursor === undefined ? undefined : cursor.slice(cursorHead.length);
    const range = { prefix, ...(start === undefined ? {} : { start, startExclusive: true }) };
    const idOf = (key: string, value: Uint8Array) =>
      state === "scheduled" ? K.parseScheduledKey(key).id : state === "pending" ? decoder.decode(value) : K.lastField(key);
    // The page reads at most `budget` records: warm those first (paged values).
    if (this.src.warm !== undefined) {
      const ids = () => [...this.src.scan({ ...range, limit: budget })].map(([k, v]) => idOf(k, v));
      for (let w = warmJobs(this.src, ids()); w !== undefined; w = warmJobs(this.src, ids())) await w;
    }
    const items: JobInfo[] = [];
    let last: string | undefined;
    let examined = 0;
    let more = false;
    const scan = this.src.scan(range);
    for (const [key, value] of scan) {
      if (items.length >= limit || examined >= budget) {
        more = true;
        break;
      }
      examined++;
      last = key;
      let id: string;
      if (state === "scheduled") {
        const p = K.parseScheduledKey(key);
        if (p.queue !== queueName) continue;
        id = p.id;
      } else id = state === "pending" ? decoder.decode(value) : K.lastField(key);
      const r = readJob(this.src, id);
      if (r !== undefined) items.push(this.#info(ofQueue(r, queueName)));
    }
    return more && last !== undefined ? { items, nextCursor: cursorHead + last } : { items };
  }

  async deadJobs(queueName: string, opts: { after?: string; limit?: number } = {}): Promise<JobInfo[]> {
    validateQueueName(queueName);
    refuseUnknownListFields(opts, true);
    const limit = pageLimit(opts.limit, 100);
    const prefix = K.deadPrefix(queueName);
    const out: JobInfo[] = [];
    const after: unknown = opts.after;
    // Joined to the prefix as text, anything but a job id started the page at a place no id holds: none, or all again.
    if (after !== undefined) {
      try {
        validateJobId(after);
      } catch {
        throw new ValidationError(`deadJobs' after must be a job id (the last one of the previous page), got ${describeValue(after)}`);
      }
    }
    const range = after === undefined ? { prefix } : { prefix, start: prefix + after, startExclusive: true };
    const ids = () => [...this.src.scan({ ...range, limit })].map(([key]) => K.lastField(key));
    for (let w = warmJobs(this.src, ids()); w !== undefined; w = warmJobs(this.src, ids())) await w;
    for (const [key] of this.src.scan({ ...range, limit })) {
      const r = readJob(this.src, K.lastField(key));
      if (r !== undefined) out.push(toJobInfo(ofQueue(r, queueName)));
    }
    return out;
  }

  async attemptHistory(jobId: string): Promise<JobAttempt[]> {
    validateJobId(jobId);
    const key = K.historyKey(jobId);
    try {
      // A damaged count is read as the next write reads it: as none.
      return readableHistory(decodeHistory(key, this.src.get(key)));
    } catch (e) {
      // Named as the user knows it: the job's history, not its key.
      if (e instanceof StoreCorruptedError) {
        throw new StoreCorruptedError(
          `attempt history of job ${jobId}`,
          e.detail,
          "its next ended attempt starts the history afresh; nothing else of the job is affected",
        );
      }
      throw e;
    }
  }

  async kvGet(key: string): Promise<Uint8Array | null> {
    validateKvKey(key);
    // A copy: the source's bytes, changed by the caller, would change its later reads (a writer's engine: also what it checkpoints).
    const v = this.src.get(K.userKey(key));
    return v === undefined ? null : copyBytes(v);
  }

  async kvScan(prefix: string, opts: KvScanOptions = {}): Promise<KvPage> {
    return kvScanSync(this.src, prefix, opts);
  }
}

/** One page of caller KV entries under `prefix`, read synchronously from `src`. */
export function kvScanSync(src: ReadSource, prefix: string, opts: KvScanOptions = {}): KvPage {
  validateKvPrefix(prefix);
  refuseUnknownKvScanFields(opts);
  if (opts.after !== undefined) validateKvKey(opts.after);
  const limit = pageLimit(opts.limit, 1000);
  const full = K.userKey(prefix);
  const range = opts.after === undefined ? { prefix: full } : { prefix: full, start: K.userKey(opts.after), startExclusive: true };
  const entries: KvEntry[] = [];
  for (const [k, v] of src.scan({ ...range, limit: limit + 1 })) {
    if (entries.length === limit) return { entries, nextCursor: entries[entries.length - 1]!.key };
    // Copies, as in `kvGet`.
    entries.push({ key: k.slice(K.USER.length), value: copyBytes(v) });
  }
  return { entries };
}
