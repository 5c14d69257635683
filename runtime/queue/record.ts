/**
 * @module Stored records (job, attempt history, stats) and their MessagePack
 * codec. Records are maps with named fields; absent fields are omitted.
 */
import type { Options } from "msgpackr";
import { packrWithOwnLayouts } from "../own-layouts.js";
import { assertPlainMessagePack } from "../engine/plain-messagepack.js";
import { StoreCorruptedError } from "../errors.js";
import { decodeDefining } from "../engine/defining-decode.js";
import { decodedWithOwnFields, defineOwn, ownEveryField, prototypeHoldsAny, prototypesHoldAnIndex } from "../own-fields.js";
import { packRecord } from "./record-pack.js";
import { jobRecordFault, readJobFieldsUntilDamage, readJobRecord } from "./record-read.js";
import { uintBytes, writeUint } from "./msgpack-sized.js";

/** Where a job is in its life. `done` is stored only with done retention. */
export type JobState = "pending" | "scheduled" | "claimed" | "done" | "dead";

export const JOB_STATES: readonly JobState[] = ["pending", "scheduled", "claimed", "done", "dead"];

/** The stored form of a job. One copy per job, at `j/<id>`. */
export interface JobRecord {
  id: string;
  queue: string;
  state: JobState;
  /** FIFO position within the priority (a ULID taken at enqueue). */
  seq: string;
  priority: number;
  /** Inline payload; empty when offloaded (`payloadRef` set). */
  payload: Uint8Array;
  /** Object name (under the queue's `payloads/`) of an offloaded payload. */
  payloadRef?: string;
  /** Size of an offloaded payload. */
  payloadSize?: number;
  headers?: Record<string, string>;
  /** Claims so far, including claims interrupted by a crash. */
  attempts: number;
  /** Times `requeueDead` put it back with its attempts reset; absent while never. Tells a delivery from one before a requeue. */
  requeues?: number;
  maxAttempts: number;
  enqueuedAt: number;
  claimedAt?: number;
  /** Due time while scheduled. */
  runAt?: number;
  /** When `wakeScheduled` woke it; persists across redeliveries. */
  wokenAt?: number;
  /** Bytes attached by `wakeScheduled`; persist across redeliveries. */
  attached?: Uint8Array;
  completedAt?: number;
  failedAt?: number;
  lastError?: string;
  /** Held (and indexed) only while pending or scheduled. */
  dedupKey?: string;
  /** The debounce window this job holds (`b/` index), while pending or scheduled. */
  debounceKey?: string;
  /** A cooperative cancellation was requested while claimed. */
  cancelRequested?: boolean;
  /** When the retention sweep removes a done or dead record. */
  retainUntil?: number;
}

/** Every field of `JobRecord`, by name. */
const JOB_FIELDS: ReadonlySet<string> = new Set<keyof JobRecord>([
  "id",
  "queue",
  "state",
  "seq",
  "priority",
  "payload",
  "payloadRef",
  "payloadSize",
  "headers",
  "attempts",
  "requeues",
  "maxAttempts",
  "enqueuedAt",
  "claimedAt",
  "runAt",
  "wokenAt",
  "attached",
  "completedAt",
  "failedAt",
  "lastError",
  "dedupKey",
  "debounceKey",
  "cancelRequested",
  "retainUntil",
]);

/** Decoded records holding fields outside `JOB_FIELDS`, and their copies. */
const withUnknownFields = new WeakSet<JobRecord>();

/**
 * A copy of `r` to change fields of: every field listed, not spread. In V8 a
 * literal spreading a record and then setting fields takes a slow path
 * (about 10 µs a record, against well under 1 µs listed), and transitions
 * copy a record per claim. Absent fields come out undefined, which the
 * codec omits. The type makes a field added to `JobRecord` a compile error
 * here until it is listed (add it to `JOB_FIELDS` too). A decoded record
 * with fields this version does not know is spread instead, keeping them.
 */
export function copyJob(r: JobRecord): JobRecord {
  // A record with fields this version does not know (written by a later one) keeps them.
  if (withUnknownFields.has(r)) {
    const kept = { ...r };
    withUnknownFields.add(kept);
    return kept;
  }
  // The constructor assigns: an accessor of Object.prototype named as a field would take it (see `prototypeHoldsJobField`).
  if (prototypeHoldsJobField()) return ownFieldsCopy(r);
  return new NewCopiedJob(r);
}

/** `copyJob`'s copy with every field defined as its own, in `JOB_FIELDS` order, whatever `Object.prototype` holds. */
function ownFieldsCopy(r: JobRecord): JobRecord {
  const copy = {} as JobRecord;
  for (const k of JOB_FIELDS) defineOwn(copy, k, (r as unknown as Record<string, unknown>)[k]);
  return copy;
}

/** Every field of `JobRecord`, each present (absent ones undefined). */
type AllJobFields = { [K in keyof Required<JobRecord>]: JobRecord[K] };

/**
 * Makes the records `copyJob` returns. A constructor, not an object literal:
 * V8 may decide that every object a literal makes is to be allocated in the
 * old generation, once most of them outlive a young-generation collection,
 * and it does not revisit that. The claim's record copy was so decided (it
 * lives from the claim to the settlement) and then went to the old
 * generation on every claim, to die there (bench/RESULTS.md, "The drain's
 * peak at 1M: the claimed record allocated young"); objects made by `new`
 * start young. Its prototype is `Object.prototype`, so a copy is a plain
 * object like a literal's: encoders and comparisons treat it the same.
 */
function CopiedJob(this: AllJobFields, r: JobRecord): void {
  this.id = r.id;
  this.queue = r.queue;
  this.state = r.state;
  this.seq = r.seq;
  this.priority = r.priority;
  this.payload = r.payload;
  this.payloadRef = r.payloadRef;
  this.payloadSize = r.payloadSize;
  this.headers = r.headers;
  this.attempts = r.attempts;
  this.requeues = r.requeues;
  this.maxAttempts = r.maxAttempts;
  this.enqueuedAt = r.enqueuedAt;
  this.claimedAt = r.claimedAt;
  this.runAt = r.runAt;
  this.wokenAt = r.wokenAt;
  this.attached = r.attached;
  this.completedAt = r.completedAt;
  this.failedAt = r.failedAt;
  this.lastError = r.lastError;
  this.dedupKey = r.dedupKey;
  this.debounceKey = r.debounceKey;
  this.cancelRequested = r.cancelRequested;
  this.retainUntil = r.retainUntil;
}
CopiedJob.prototype = Object.prototype;
const NewCopiedJob = CopiedJob as unknown as new (r: JobRecord) => AllJobFields;

/** How one claim of a job ended. */
export type AttemptOutcome = "completed" | "retried" | "dead_lettered" | "lease_expired" | "interrupted" | "requeued";

/** One entry of a job's attempt history. */
export interface JobAttempt {
  attempt: number;
  claimedAt?: number;
  recordedAt: number;
  outcome: AttemptOutcome;
  /** The error text, at most 2048 characters. */
  error?: string;
  /** The thrown error's class name, when the settlement gave its cause. */
  errorName?: string;
  /** The thrown error's stack, at most 4096 characters, when the settlement gave its cause. */
  errorStack?: string;
  /**
   * On the oldest entry kept once the history reached its bound
   * (`JOB_ATTEMPT_HISTORY_LIMIT`): how many earlier entries were dropped.
   */
  earlierDropped?: number;
}

/** Per-queue counters. `done` is cumulative (every ack), the rest are current. */
export interface QueueStats {
  pending: number;
  scheduled: number;
  claimed: number;
  done: number;
  dead: number;
}

export const emptyStats = (): QueueStats => ({ pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 0 });

// Named maps, absent (undefined) fields omitted. `skipValues` is a msgpackr
// option its type declarations do not list.
const packr = packrWithOwnLayouts({ useRecords: false, mapsAsObjects: true, skipValues: [undefined] } as Options);

// msgpackr returns a view into a shared buffer; the engine keeps values, so copy.
function pack(value: unknown): Uint8Array {
  return new Uint8Array(packr.pack(value));
}

function asBytes(v: unknown): Uint8Array {
  if (v instanceof Uint8Array) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  return new Uint8Array(0);
}

/** How many key-value pairs the maps of the record `bytes` hold, once they are known to be plain MessagePack. */
function plainEntries(key: string, bytes: Uint8Array): number {
  // Checked first, and apart: no decode below may take what this refuses.
  try {
    return assertPlainMessagePack(bytes);
  } catch (e) {
    throw corrupted(key, e);
  }
}

/** The value `bytes` hold, every map an object that owns each of its fields whatever `Object.prototype` holds. */
function unpack(key: string, bytes: Uint8Array): unknown {
  const entries = plainEntries(key, bytes);
  // Defined at once, so that no setter of an index is called with an element (or the decoder's own lists).
  if (prototypesHoldAnIndex()) return unpackDefining(key, bytes);
  try {
    return decodedWithOwnFields(
      entries,
      () => packr.unpack(bytes),
      () => decodeDefining(bytes),
    );
  } catch (e) {
    throw corrupted(key, e);
  }
}

/** The value `bytes` hold, decoded by assignment: `decodeJob` checks the fields it owns itself. Falls back as `unpack` does on a refused assignment. */
function unpackAssigning(key: string, bytes: Uint8Array): unknown {
  try {
    return packr.unpack(bytes);
  } catch (e) {
    // The decoder's assignment threw on a read-only field of Object.prototype: the record is not at fault.
    return unpackDefining(key, bytes, e);
  }
}

/** The value `bytes` hold, decoded defining every field and element (see `decodeDefining`); `first`, an earlier decode's error to report instead. */
function unpackDefining(key: string, bytes: Uint8Array, first?: unknown): unknown {
  try {
    return decodeDefining(bytes);
  } catch (e) {
    throw corrupted(key, first ?? e);
  }
}

function corrupted(key: string, e: unknown): StoreCorruptedError {
  return new StoreCorruptedError(key, `undecodable record: ${e instanceof Error ? e.message : String(e)}`);
}

/** `r`'s bytes; with `shared`, small ones may be a view of memory other records share (see `packRecord`). */
export function encodeJob(r: JobRecord, shared = false): Uint8Array {
  // Written directly (the same bytes) unless the record holds something unusual.
  return packRecord(r, shared) ?? pack(r);
}

/**
 * Whether `Object.prototype` holds the name of a job record's field (a
 * library merged a parsed `{"__proto__": ...}` into one, or defined an
 * accessor or a read-only field). A decoded record is a plain object, so a
 * field it lacks would be read from there: a `payloadRef` made the claim
 * look for a payload object of that name and dead-letter the job, `headers`
 * or `lastError` went into the claimed job; and the decoder's assignment of
 * a field it has went to an accessor's setter (a nack then stored the
 * record without it) or threw on a read-only one. Asked at every decode
 * (the prototype can change at any time); each name written out, which V8
 * answers from its caches in a few ns where a loop over a list of them took
 * over 100.
 */
function prototypeHoldsJobField(): boolean {
  const p = Object.prototype;
  return (
    "payloadRef" in p ||
    "payloadSize" in p ||
    "headers" in p ||
    "claimedAt" in p ||
    "runAt" in p ||
    "wokenAt" in p ||
    "attached" in p ||
    "completedAt" in p ||
    "failedAt" in p ||
    "lastError" in p ||
    "dedupKey" in p ||
    "debounceKey" in p ||
    "cancelRequested" in p ||
    "retainUntil" in p ||
    "id" in p ||
    "queue" in p ||
    "state" in p ||
    "seq" in p ||
    "priority" in p ||
    "payload" in p ||
    "attempts" in p ||
    "requeues" in p ||
    "maxAttempts" in p ||
    "enqueuedAt" in p
  );
}

export function decodeJob(key: string, bytes: Uint8Array): JobRecord {
  // An index on a prototype: msgpackr's key cache would hand a setter there the bytes of field names.
  const polluted = prototypeHoldsJobField() || prototypesHoldAnIndex();
  if (!polluted) {
    // Read directly when it is a record of the usual kinds (see record-read.ts); anything else as below.
    const direct = readJobRecord(bytes);
    if (direct !== undefined && typeof direct.id === "string" && typeof direct.state === "string") {
      direct.payload ??= new Uint8Array(0);
      return direct;
    }
  }
  const entries = plainEntries(key, bytes);
  let o = (polluted ? unpackDefining(key, bytes) : unpackAssigning(key, bytes)) as JobRecord | null;
  if (o === null || typeof o !== "object" || typeof o.id !== "string" || typeof o.state !== "string") {
    throw new StoreCorruptedError(key, "not a job record");
  }
  if (polluted) {
    ownEveryField(o, JOB_FIELDS);
    markUnknownFields(o);
  } else if (ownFieldCount(o) !== entries) {
    // A setter of Object.prototype named as a header (or as a field this version does not know) took it: decode again, defining each field.
    o = unpackDefining(key, bytes) as JobRecord;
    markUnknownFields(o);
  }
  const fault = jobRecordFault(o as unknown as Record<string, unknown>);
  if (fault !== undefined) throw new StoreCorruptedError(key, `a job record whose fields are damaged: ${fault}`);
  o.payload = asBytes(o.payload);
  if (o.attached !== undefined) o.attached = asBytes(o.attached);
  return o;
}

/**
 * What can be read of the damaged job record `bytes` (see damaged-record.ts):
 * the map the general decoder makes of them when it can (a field of
 * another kind), else the fields before the damage (bytes cut short).
 * Nothing checked: read only its own fields.
 */
export function readableJobFields(bytes: Uint8Array): Record<string, unknown> {
  try {
    const o = unpack("", bytes);
    if (o !== null && typeof o === "object" && !Array.isArray(o)) return o as Record<string, unknown>;
  } catch {
    // Cut short or not MessagePack: read up to the damage below.
  }
  return prototypeHoldsJobField() || prototypesHoldAnIndex() ? {} : readJobFieldsUntilDamage(bytes);
}

/**
 * How many fields the decoded `o` owns, its headers' included, remembering
 * it if it holds fields outside `JOB_FIELDS` (see `markUnknownFields`): one
 * pass over its fields, on every decode. Its job fields are its own
 * (`decodeJob` asks this only while `Object.prototype` holds none of their
 * names); another is counted only if its own.
 */
function ownFieldCount(o: JobRecord): number {
  let n = 0;
  for (const k in o) {
    if (JOB_FIELDS.has(k)) n++;
    else if (Object.hasOwn(o, k)) {
      n++;
      withUnknownFields.add(o);
    }
  }
  const h = o.headers as unknown;
  if (h !== null && typeof h === "object") n += Object.keys(h).length;
  return n;
}

/** Remembers a record holding fields outside `JOB_FIELDS` (written by a later version), for `copyJob` to keep them. */
function markUnknownFields(o: JobRecord): void {
  for (const k in o) {
    if (!JOB_FIELDS.has(k) && Object.hasOwn(o, k)) {
      withUnknownFields.add(o);
      return;
    }
  }
}

export function encodeHistory(entries: readonly JobAttempt[]): Uint8Array {
  return pack(entries);
}

/** The fields an attempt's encoding leaves out when absent, made its own while `Object.prototype` holds one of their names. */
const ATTEMPT_OPTIONAL: readonly (keyof JobAttempt)[] = ["claimedAt", "error", "errorName", "errorStack", "earlierDropped"];

export function decodeHistory(key: string, bytes: Uint8Array | undefined): JobAttempt[] {
  if (bytes === undefined) return [];
  const o = unpack(key, bytes);
  if (!Array.isArray(o)) throw new StoreCorruptedError(key, "not an attempt history");
  if (prototypeHoldsAny(ATTEMPT_OPTIONAL)) for (const a of o) if (a !== null && typeof a === "object") ownEveryField(a, ATTEMPT_OPTIONAL);
  return o as JobAttempt[];
}

export function encodeStats(s: QueueStats): Uint8Array {
  const { pending, scheduled, claimed, done, dead } = s;
  if (isUint32(pending) && isUint32(scheduled) && isUint32(claimed) && isUint32(done) && isUint32(dead)) {
    return packCounts(pending, scheduled, claimed, done, dead);
  }
  return pack([pending, scheduled, claimed, done, dead]);
}

const isUint32 = (n: number) => Number.isInteger(n) && n >= 0 && n <= 0xffff_ffff;

/**
 * The MessagePack array of five unsigned integers below 2^32 that the
 * general encoder writes (shortest form of each), without its per-call
 * setup or a list of the counts: every commit that moves a job writes one.
 */
function packCounts(a: number, b: number, c: number, d: number, e: number): Uint8Array {
  // Sized exactly: a subarray of a larger array would move its bytes out of the heap first.
  const out = new Uint8Array(1 + uintBytes(a) + uintBytes(b) + uintBytes(c) + uintBytes(d) + uintBytes(e));
  out[0] = 0x95;
  writeUint(out, writeUint(out, writeUint(out, writeUint(out, writeUint(out, 1, a), b), c), d), e);
  return out;
}

export function decodeStats(key: string, bytes: Uint8Array | undefined): QueueStats {
  if (bytes === undefined) return emptyStats();
  let a: unknown;
  try {
    a = unpack(key, bytes);
  } catch (err) {
    // Bytes that decode to nothing are mended as counts that are not counts: by a recount.
    if (err instanceof StoreCorruptedError && err.objectKey === key) throw new StoreCorruptedError(key, err.detail, recountAdvice(key));
    throw err;
  }
  if (!Array.isArray(a) || a.length !== 5) throw new StoreCorruptedError(key, "not a stats record", recountAdvice(key));
  const [pending, scheduled, claimed, done, dead] = a as unknown[];
  // Each a whole number: a damaged count (a string, null, true, 1.5) was added to as it was, so a move of one
  // job stored "x1" or 2 and every later read answered it. A negative count is a count (counting restarts from
  // zero once the record is gone, and the moves out of a state then go below it): kept, not refused.
  if (!isCount(pending) || !isCount(scheduled) || !isCount(claimed) || !isCount(done) || !isCount(dead)) {
    throw new StoreCorruptedError(key, `a stats record whose counts are not all whole numbers: ${describeCounts(a)}`, recountAdvice(key));
  }
  return { pending, scheduled, claimed, done, dead };
}

/**
 * The done count of damaged stats record `bytes` (stored at `key`) when it
 * still reads as a whole number: what a recount keeps of it (no index
 * holds the done jobs retention did not keep). Undefined when it does not.
 */
export function doneOfDamagedStats(key: string, bytes: Uint8Array): number | undefined {
  let a: unknown;
  try {
    a = unpack(key, bytes);
  } catch (err) {
    if (err instanceof StoreCorruptedError) return undefined;
    throw err;
  }
  const done: unknown = Array.isArray(a) && a.length === 5 ? a[3] : undefined;
  return isCount(done) ? done : undefined;
}

/** What to do about a damaged stats record `key` (`n/<queue>`): recount it from the queue's indexes, through its owner. */
function recountAdvice(key: string): string {
  const queue = key.slice(key.indexOf("/") + 1);
  return `nothing was written; recount the queue's stats from its jobs through its owner: taquba queue recount ${queue} (Queue.recountStats(${JSON.stringify(queue)}))`;
}

const isCount = (n: unknown): n is number => typeof n === "number" && Number.isSafeInteger(n);

/** The decoded counts for a message, each as its type would print it, cut short. */
function describeCounts(a: readonly unknown[]): string {
  const text = `[${a.map((n) => (typeof n === "string" ? JSON.stringify(n) : String(n))).join(", ")}]`;
  return text.length <= 200 ? text : `${text.slice(0, 199)}…`;
}

/**
 * The values of counts under 128, each made on first use and shared: a
 * chained ack's entry carries one of these nearly always, and an array a
 * commit cost about 200 B of the heap. Shared as the empty index value is:
 * nothing writes the bytes of a value once put (`OwnedBytes`).
 */
const oneByteCarried: (Uint8Array | undefined)[] = [];

/**
 * The done count a claimed index entry (`c/<queue>/<id>`) carries for its
 * queue (see `Txn.finish`): an unsigned LEB128 integer, 7 bits a byte, low
 * first. An empty value (every entry a plain claim writes, and every entry
 * an older store holds) carries none.
 */
export function encodeCarriedDone(n: number): Uint8Array {
  if (n >= 0 && n < 0x80 && Number.isInteger(n)) return (oneByteCarried[n] ??= Uint8Array.of(n));
  let bytes = 1;
  for (let rest = Math.floor(n / 128); rest > 0; rest = Math.floor(rest / 128)) bytes++;
  const out = new Uint8Array(bytes);
  let rest = n;
  for (let i = 0; i < bytes; i++) {
    const low = rest % 128;
    rest = Math.floor(rest / 128);
    out[i] = i === bytes - 1 ? low : low | 0x80;
  }
  return out;
}

/** Longest encoding of a count up to `Number.MAX_SAFE_INTEGER`. */
const CARRIED_MAX_BYTES = 8;

/** The done count the claimed index entry `key` holding `bytes` carries; 0 for an absent or empty entry. */
export function decodeCarriedDone(key: string, bytes: Uint8Array | undefined): number {
  if (bytes === undefined || bytes.length === 0) return 0;
  let n = 0;
  let scale = 1;
  for (let i = 0; i < bytes.length && i < CARRIED_MAX_BYTES; i++) {
    const b = bytes[i]!;
    n += (b & 0x7f) * scale;
    scale *= 128;
    if ((b & 0x80) !== 0) continue;
    // Only the shortest form is written: a trailing zero byte or bytes after the last are damage.
    if (i === bytes.length - 1 && (b !== 0 || i === 0) && Number.isSafeInteger(n)) return n;
    break;
  }
  throw new StoreCorruptedError(key, "not a claimed index entry");
}

/** What is kept of a job a debounced enqueue superseded (at `v/<id>`). */
export interface SupersededMark {
  /** The job that superseded it (the later submission with the same debounce key). */
  by: string;
  queue: string;
  at: number;
  /** When the retention sweep removes the mark. */
  retainUntil: number;
}

export function encodeSuperseded(m: SupersededMark): Uint8Array {
  return pack(m);
}

export function decodeSuperseded(key: string, bytes: Uint8Array): SupersededMark {
  const o = unpack(key, bytes) as SupersededMark | null;
  if (o === null || typeof o !== "object" || typeof o.by !== "string" || typeof o.retainUntil !== "number") {
    throw new StoreCorruptedError(key, "not a superseded mark");
  }
  return o;
}
