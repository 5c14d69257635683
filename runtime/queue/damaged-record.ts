/**
 * @module Jobs whose stored record cannot be read: bytes cut short, a field
 * of another kind, a record naming another job than the one it is stored
 * as, or another queue than the one whose pending jobs name it. Thrown at
 * every claim, such a record stopped its whole queue; instead a claim sets
 * the job aside as dead with the reason `record_corrupted` (keeping what
 * can be read of it), as do recovery at open, the reaper and the promotion
 * of scheduled jobs; the retention sweep and a cancel remove it.
 */
import { StoreCorruptedError } from "../errors.js";
import * as K from "./keys.js";
import { type DeadLetteredEvent, isPriority } from "./config.js";
import { isCount, isPositiveCount, isStoredTime } from "../value-ranges.js";
import { readableJobFields, type JobRecord, type JobState } from "./record.js";
import { textBytes } from "./record-pack.js";
import {
  boundLastError,
  decodeJobOf,
  dropOrphanClaimedEntry,
  indexKey,
  readJob,
  recordAttempt,
  releaseDebounce,
  releaseDedup,
  writeJob,
  type TransitionContext,
} from "./transitions.js";
import type { ReadSource, Txn } from "./txn.js";
import { bytesEqual } from "../store/bytes-equal.js";
import { validateQueueName } from "./names.js";

/** The reason a job set aside for its damaged record is dead-lettered with. */
export const RECORD_CORRUPTED = "record_corrupted";

/** Most bytes of a damaged record kept, in hex, in the `lastError` of the dead job set aside for it. */
export const KEPT_DAMAGED_BYTES = 256;

/** Job `id`, whose stored record is damaged: `detail` says how. */
export class DamagedRecord {
  constructor(
    readonly id: string,
    readonly detail: string,
  ) {}
}

/** The record of job `id`, undefined when there is none, a `DamagedRecord` when it cannot be read or names another job. */
export function readOrDamaged(txn: Pick<Txn, "get">, id: string): JobRecord | DamagedRecord | undefined {
  try {
    return readJob(txn, id);
  } catch (err) {
    if (err instanceof StoreCorruptedError) return new DamagedRecord(id, err.detail);
    throw err;
  }
}

/**
 * The record of job `id`, which an index entry of `queue` names (pending
 * or claimed): undefined when there is none, a `DamagedRecord` when it
 * cannot be read or names another job or another queue.
 */
export function readIndexedJob(txn: Txn, id: string, queue: string): JobRecord | DamagedRecord | undefined {
  const key = K.jobKey(id);
  const bytes = txn.get(key);
  return bytes === undefined ? undefined : indexedJobOf(key, bytes, id, queue);
}

/** The record of job `id` (stored at `key`, filed by `queue`) decoded from `bytes`, as `readIndexedJob` reads it. */
export function indexedJobOf(key: string, bytes: Uint8Array, id: string, queue: string): JobRecord | DamagedRecord {
  let r: JobRecord;
  try {
    r = decodeJobOf(key, bytes, id);
  } catch (err) {
    if (err instanceof StoreCorruptedError) return new DamagedRecord(id, err.detail);
    throw err;
  }
  // Claimed as its own queue's, it moved that queue's stats while this queue's went on counting it pending.
  if (r.queue !== queue) return new DamagedRecord(id, `a job record of queue ${JSON.stringify(r.queue)}, found among the jobs of queue "${queue}"`);
  return r;
}

/**
 * `r`, or a `DamagedRecord` when the index entry its state and queue name
 * is missing (a record naming another queue than the one that files it):
 * acted on as it reads, it would move the stats of a queue that never
 * counted it and leave its own queue's entry behind.
 */
export function filedOrDamaged(src: Pick<ReadSource, "get" | "has">, r: JobRecord): JobRecord | DamagedRecord {
  const entry = indexKey(r);
  if (entry === undefined || (src.has === undefined ? src.get(entry) !== undefined : src.has(entry))) return r;
  return new DamagedRecord(r.id, `a ${r.state} job record of queue ${JSON.stringify(r.queue)}, not among that queue's ${r.state} jobs`);
}

/**
 * Drops in `txn` the pending entry of `queue` (one of its first `scanned`)
 * naming job `id`, whose record is gone; its stats no longer count it.
 * Skipped instead, enough of them at the head of a queue stopped every
 * claim. Whether there was one.
 */
export function dropDanglingPending(txn: Txn, src: ReadSource, queue: string, id: string, scanned: number): boolean {
  const entry = pendingEntryOf(src, queue, id, scanned);
  if (entry === undefined || !txn.has(entry)) return false;
  txn.delete(entry);
  txn.move(queue, "pending", null);
  return true;
}

/**
 * Sets the damaged pending job aside in `txn`: its pending entry (one of
 * the first `scanned` of `queue`) becomes a dead one, its record a dead
 * record of `queue` holding what can be read of the damaged one (payload,
 * headers, attempt counts) and, in `lastError`, the reason and the damaged
 * bytes' start; the stats move it from pending to dead. Undefined when no
 * such pending entry names it.
 */
export function setAsidePending(
  txn: Txn,
  src: ReadSource,
  ctx: TransitionContext,
  queue: string,
  damaged: DamagedRecord,
  scanned: number,
): DeadLetteredEvent | undefined {
  const { id } = damaged;
  const entry = pendingEntryOf(src, queue, id, scanned);
  if (entry === undefined) return undefined;
  const at = entry.lastIndexOf("/");
  const seq = entry.slice(at + 1);
  const priority = Number(entry.slice(entry.lastIndexOf("/", at - 1) + 1, at));
  // As the pending index holds it: what the writes below replace.
  const was: JobRecord = { id, queue, state: "pending", seq, priority, payload: EMPTY, attempts: 0, maxAttempts: 1, enqueuedAt: ctx.now };
  return writeSetAside(txn, ctx, was, damaged, true);
}

/**
 * Sets aside in `txn` the damaged job whose claimed entry `key` (of
 * `queue`) a previous process or an expired lease left: the entry goes,
 * with the done count it carries kept, and the job becomes dead as by
 * `setAsidePending`; the stats move it from claimed to dead.
 */
export function setAsideClaimed(txn: Txn, ctx: TransitionContext, key: string, queue: string, damaged: DamagedRecord): DeadLetteredEvent {
  if (txn.get(key) !== undefined) {
    dropOrphanClaimedEntry(txn, key);
    txn.move(queue, "claimed", null);
  }
  return setAsideUnindexed(txn, ctx, queue, "claimed", damaged);
}

/**
 * Sets aside in `txn` the damaged job whose scheduled entry `key` (of
 * `queue`) came due: the entry goes and the job becomes dead as by
 * `setAsidePending`; the stats move it from scheduled to dead.
 */
export function setAsideScheduled(txn: Txn, ctx: TransitionContext, key: string, queue: string, damaged: DamagedRecord): DeadLetteredEvent {
  if (txn.get(key) !== undefined) {
    txn.delete(key);
    txn.move(queue, "scheduled", null);
  }
  return setAsideUnindexed(txn, ctx, queue, "scheduled", damaged);
}

/** The dead record of a damaged job of `queue` whose index entry (filing it as `state`) is already gone. */
function setAsideUnindexed(txn: Txn, ctx: TransitionContext, queue: string, state: JobState, damaged: DamagedRecord): DeadLetteredEvent {
  const { id } = damaged;
  const bytes = txn.get(K.jobKey(id));
  const fields = bytes === undefined ? {} : readableJobFields(bytes);
  const was: JobRecord = {
    id,
    queue,
    state,
    seq: own<string>(fields, "seq", (v) => typeof v === "string" && v.length > 0 && !v.includes("/")) ?? id,
    priority: own<number>(fields, "priority", isPriority) ?? ctx.config(queue).defaultPriority,
    payload: EMPTY,
    attempts: 0,
    maxAttempts: 1,
    enqueuedAt: ctx.now,
  };
  return writeSetAside(txn, ctx, was, damaged, false);
}

/**
 * Writes the dead record of the damaged job `was` describes (its id, queue,
 * order): with `replaces`, over `was` as its index holds it; else as a new
 * record, `was`'s entry already gone.
 */
function writeSetAside(txn: Txn, ctx: TransitionContext, was: JobRecord, damaged: DamagedRecord, replaces: boolean): DeadLetteredEvent {
  const { id, queue } = was;
  const bytes = txn.get(K.jobKey(id));
  const fields = bytes === undefined ? {} : readableJobFields(bytes);
  const keep = ctx.config(queue).deadRetentionMs;
  const lastError = boundLastError(damageText(id, damaged.detail, bytes));
  const dead: JobRecord = {
    ...was,
    state: "dead",
    payload: own<Uint8Array>(fields, "payload", (v) => v instanceof Uint8Array) ?? EMPTY,
    attempts: own<number>(fields, "attempts", isCount) ?? 0,
    maxAttempts: own<number>(fields, "maxAttempts", isPositiveCount) ?? 1,
    enqueuedAt: own<number>(fields, "enqueuedAt", isStoredTime) ?? ctx.now,
    failedAt: ctx.now,
    lastError,
  };
  const headers = own<Record<string, string>>(fields, "headers", isHeaders);
  if (headers !== undefined) dead.headers = { ...headers };
  const ref = heldPayloadRef(txn, fields, id);
  const size = own<number>(fields, "payloadSize", isCount);
  // An offloaded payload is kept only while its reference names this job: a redrive then runs it with it.
  if (ref !== undefined && size !== undefined) {
    dead.payloadRef = ref;
    dead.payloadSize = size;
  }
  if (keep !== null) dead.retainUntil = ctx.now + keep;
  // The keys it held while pending, when they can be read and still name it: an enqueue with them would else get this dead job.
  releaseDedup(txn, { ...was, dedupKey: own<string>(fields, "dedupKey", isText) });
  releaseDebounce(txn, { ...was, debounceKey: own<string>(fields, "debounceKey", isText) });
  recordAttempt(txn, dead, ctx.now, "dead_lettered", lastError);
  writeJob(txn, dead, replaces ? was : undefined);
  return { jobId: id, queueName: queue, reason: RECORD_CORRUPTED, lastError };
}

/** The key of the pending entry of `queue` naming job `id`, among its first `scanned`. */
function pendingEntryOf(src: ReadSource, queue: string, id: string, scanned: number): string | undefined {
  const idBytes = textBytes(id);
  for (const [key, value] of src.scan({ prefix: K.pendingPrefix(queue), limit: scanned })) if (bytesEqual(value, idBytes)) return key;
  return undefined;
}

/** What a dead job set aside for its damaged record says of it, for operators. */
function damageText(id: string, detail: string, bytes: Uint8Array | undefined): string {
  const head = `${RECORD_CORRUPTED}: the stored record of job ${id} could not be read (${detail}); the job was set aside as dead with what could be read of it`;
  if (bytes === undefined) return head;
  const shown = bytes.subarray(0, KEPT_DAMAGED_BYTES);
  const hex = Buffer.from(shown.buffer, shown.byteOffset, shown.byteLength).toString("hex");
  return `${head}. The record's first ${shown.byteLength} of ${bytes.byteLength} bytes, in hex: ${hex}`;
}

/** Where the index entries of a damaged record live, and in which state they file it. */
interface IndexEntry {
  readonly key: string;
  readonly queue: string;
  readonly state: JobState;
}

/**
 * Removes the job `id` whose record is damaged in `txn`: the record, its
 * attempt history and the index entries that name it, its queue's stats
 * moved for each. The entry its readable fields name (state, queue and
 * what orders it there) when that entry names the job; else every entry
 * naming it, found by scanning each index. Returns the entries removed.
 */
export function removeDamaged(txn: Txn, src: ReadSource, id: string): { entries: IndexEntry[]; payloadRef: string | undefined } {
  const named = namedEntry(src, txn.get(K.jobKey(id)), id);
  const entries = named === undefined ? indexEntriesOf(src, id) : [named];
  for (const e of entries) {
    // A claimed entry may carry its queue's done count (see queue-stats.ts): kept in the stats.
    if (e.state === "claimed") dropOrphanClaimedEntry(txn, e.key);
    else txn.delete(e.key);
    txn.move(e.queue, e.state, null);
  }
  const bytes = txn.get(K.jobKey(id));
  const fields = bytes === undefined ? {} : readableJobFields(bytes);
  const payloadRef = heldPayloadRef(txn, fields, id);
  if (payloadRef !== undefined) txn.delete(K.payloadRefKey(payloadRef));
  const retainUntil = own<number>(fields, "retainUntil", isStoredTime);
  if (retainUntil !== undefined && txn.get(K.retentionKey(retainUntil, id)) !== undefined) txn.delete(K.retentionKey(retainUntil, id));
  for (const e of entries) {
    const base: JobRecord = { id, queue: e.queue, state: e.state, seq: "", priority: 0, payload: EMPTY, attempts: 0, maxAttempts: 1, enqueuedAt: 0 };
    releaseDedup(txn, { ...base, dedupKey: own<string>(fields, "dedupKey", isText) });
    releaseDebounce(txn, { ...base, debounceKey: own<string>(fields, "debounceKey", isText) });
  }
  txn.delete(K.jobKey(id));
  if (txn.get(K.historyKey(id)) !== undefined) txn.delete(K.historyKey(id));
  return { entries, payloadRef };
}

/**
 * The damaged job `id` whose retention entry `key` came due: removed as the
 * sweep removes a good job when only done or dead entries name it (or
 * none); else it moved on since, the entry is stale and only it goes (its
 * own path sets the job aside). Returns whether it was removed, and the
 * offloaded payload it held.
 */
export function sweepDamagedRetained(txn: Txn, src: ReadSource, id: string, key: string): { removed: boolean; payloadRef: string | undefined } {
  const live = indexEntriesOf(src, id).some((e) => e.state !== "done" && e.state !== "dead");
  const out = live ? { removed: false, payloadRef: undefined } : { removed: true, payloadRef: removeDamaged(txn, src, id).payloadRef };
  if (txn.has(key)) txn.delete(key);
  return out;
}

/**
 * The index entry the readable fields of job `id`'s damaged record `bytes`
 * name, when they say enough to build its key (a state and queue, and
 * what orders the job there) and that entry names the job: one lookup
 * instead of a scan of every index. Undefined otherwise.
 */
function namedEntry(src: Pick<ReadSource, "get">, bytes: Uint8Array | undefined, id: string): IndexEntry | undefined {
  if (bytes === undefined) return undefined;
  const fields = readableJobFields(bytes);
  const state = own<JobState>(fields, "state", isState);
  const queue = own<string>(fields, "queue", isQueueName);
  if (state === undefined || queue === undefined) return undefined;
  let key: string | undefined;
  if (state === "pending") {
    const priority = own<number>(fields, "priority", isPriority);
    const seq = own<string>(fields, "seq", (v) => typeof v === "string" && v.length > 0 && !v.includes("/"));
    if (priority !== undefined && seq !== undefined) key = K.pendingKey(queue, priority, seq);
  } else if (state === "scheduled") {
    const runAt = own<number>(fields, "runAt", isStoredTime);
    if (runAt !== undefined) key = K.scheduledKey(runAt, queue, id);
  } else if (state === "done") {
    const completedAt = own<number>(fields, "completedAt", isStoredTime);
    if (completedAt !== undefined) key = K.doneKey(queue, completedAt, id);
  } else key = state === "claimed" ? K.claimedKey(queue, id) : K.deadKey(queue, id);
  if (key === undefined) return undefined;
  const value = src.get(key);
  // A pending entry holds its job's id: one of another job's order (a record copied over this one) is not this job's.
  if (value === undefined || (state === "pending" && !bytesEqual(value, textBytes(id)))) return undefined;
  return { key, queue, state };
}

/** Every index entry naming job `id`: pending entries hold the id as their value, the others end with it. */
function indexEntriesOf(src: ReadSource, id: string): IndexEntry[] {
  const out: IndexEntry[] = [];
  const idBytes = textBytes(id);
  const suffix = `/${id}`;
  for (const [key, value] of src.scan({ prefix: K.PENDING })) {
    if (!bytesEqual(value, idBytes)) continue;
    const seqAt = key.lastIndexOf("/");
    out.push({ key, queue: key.slice(K.PENDING.length, key.lastIndexOf("/", seqAt - 1)), state: "pending" });
  }
  for (const [key] of src.scan({ prefix: K.SCHEDULED })) if (key.endsWith(suffix)) out.push({ key, queue: K.parseScheduledKey(key).queue, state: "scheduled" });
  for (const [key] of src.scan({ prefix: K.CLAIMED })) if (key.endsWith(suffix)) out.push({ key, queue: K.queueOfClaimedKey(key), state: "claimed" });
  for (const [key] of src.scan({ prefix: K.DEAD })) if (key.endsWith(suffix)) out.push({ key, queue: key.slice(K.DEAD.length, -suffix.length), state: "dead" });
  for (const [key] of src.scan({ prefix: K.DONE })) {
    if (!key.endsWith(suffix)) continue;
    const rest = key.slice(K.DONE.length, -suffix.length);
    out.push({ key, queue: rest.slice(0, rest.lastIndexOf("/")), state: "done" });
  }
  return out;
}

const EMPTY = new Uint8Array(0);

/** The own field `name` of what was read of a damaged record, when `ok` takes it. */
function own<T>(fields: Record<string, unknown>, name: string, ok: (v: unknown) => boolean): T | undefined {
  if (!Object.hasOwn(fields, name)) return undefined;
  const v = fields[name];
  return ok(v) ? (v as T) : undefined;
}

/** The offloaded payload the damaged record's `fields` name, when its reference still names job `id` (else another job's, or none). */
function heldPayloadRef(txn: Pick<Txn, "get">, fields: Record<string, unknown>, id: string): string | undefined {
  const ref = own<string>(fields, "payloadRef", isText);
  const refHeld = ref === undefined ? undefined : txn.get(K.payloadRefKey(ref));
  return refHeld !== undefined && bytesEqual(refHeld, textBytes(id)) ? ref : undefined;
}

const STATES: ReadonlySet<unknown> = new Set<JobState>(["pending", "scheduled", "claimed", "done", "dead"]);

function isState(v: unknown): boolean {
  return STATES.has(v);
}

function isQueueName(v: unknown): boolean {
  try {
    validateQueueName(v);
    return true;
  } catch {
    return false;
  }
}

function isText(v: unknown): v is string {
  return typeof v === "string";
}

function isHeaders(v: unknown): boolean {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  return Object.keys(v).every((k) => typeof (v as Record<string, unknown>)[k] === "string");
}
