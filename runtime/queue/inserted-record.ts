/**
 * @module The bytes of a job record `insertJobRecord` made, written in the
 * order of its literal: the same bytes the record codec writes
 * (`encodeJob`), without enumerating the record or encoding its field
 * names again. Every enqueue and every chained step inserts one.
 *
 * The usual record (ASCII text, numbers, exactly a `Uint8Array` payload, a
 * plain header map of ASCII strings) is laid out whole in the codec's
 * chunk with positions kept in locals: the room it may take asked for
 * once, each field name written as three words, no call per field into the
 * general writers. Anything else is written field by field through the
 * record writers, as before.
 */
import {
  beginFields,
  directChunk,
  directEnd,
  directStart,
  directView,
  endFields,
  fieldName,
  packField,
  packNumberField,
  packStringField,
} from "./record-pack.js";
import { BIN_TAGS, STR_TAGS, writeSized, writeUint } from "./msgpack-sized.js";
import { encodeJob, type JobRecord } from "./record.js";

/**
 * A field name's MessagePack bytes (its fixstr header and its text, 12 bytes
 * at most) as three big-endian words, zero-padded, and its length: written
 * in three stores, the padding then written over by what follows.
 */
interface Name {
  readonly w0: number;
  readonly w1: number;
  readonly w2: number;
  readonly length: number;
  /** The bytes themselves, for the record writers. */
  readonly bytes: Uint8Array;
}

/** The room a name takes while written: its three words. */
const NAME_ROOM = 12;

function nameOf(text: string): Name {
  const bytes = fieldName(text);
  if (bytes.length > NAME_ROOM) throw new Error(`field name ${text} is longer than ${NAME_ROOM - 1} bytes`);
  const padded = new Uint8Array(NAME_ROOM);
  padded.set(bytes);
  const v = new DataView(padded.buffer);
  return { w0: v.getUint32(0), w1: v.getUint32(4), w2: v.getUint32(8), length: bytes.length, bytes };
}

function putName(words: DataView, p: number, name: Name): number {
  words.setUint32(p, name.w0);
  words.setUint32(p + 4, name.w1);
  words.setUint32(p + 8, name.w2);
  return p + name.length;
}

const ID = nameOf("id");
const QUEUE = nameOf("queue");
const STATE = nameOf("state");
const SEQ = nameOf("seq");
const PRIORITY = nameOf("priority");
const PAYLOAD = nameOf("payload");
const PAYLOAD_REF = nameOf("payloadRef");
const PAYLOAD_SIZE = nameOf("payloadSize");
const HEADERS = nameOf("headers");
const ATTEMPTS = nameOf("attempts");
const MAX_ATTEMPTS = nameOf("maxAttempts");
const ENQUEUED_AT = nameOf("enqueuedAt");
const RUN_AT = nameOf("runAt");
const DEDUP_KEY = nameOf("dedupKey");
const DEBOUNCE_KEY = nameOf("debounceKey");
const CLAIMED_AT = nameOf("claimedAt");

/**
 * `encodeJob(r, shared)` for a record whose own keys are exactly those of
 * `insertJobRecord`'s literal, in its order, `claimedAt` last
 * (test/queue/inserted-record.test.ts holds the two in step). A value the
 * direct writer does not take goes to `encodeJob`, as it would there.
 */
export function encodeInsertedJob(r: JobRecord, shared: boolean): Uint8Array {
  const fieldsRoom = roomFor(r);
  let headersBudget = HEADERS_ROOM;
  // A second pass only for a header map past the room the first asked for, with the room it needs.
  for (let pass = 0; pass < 2; pass++) {
    const out = directChunk(fieldsRoom + headersBudget);
    const end = layOut(r, out, directView(), directStart(), headersBudget);
    if (end >= 0) return directEnd(end, shared);
    if (end === NOT_TAKEN) break;
    headersBudget += headersRoom(r.headers);
  }
  return encodeFieldByField(r, shared);
}

/** The record written through the record writers, one call per field. */
function encodeFieldByField(r: JobRecord, shared: boolean): Uint8Array {
  beginFields();
  packStringField(ID.bytes, r.id);
  packStringField(QUEUE.bytes, r.queue);
  packStringField(STATE.bytes, r.state);
  packStringField(SEQ.bytes, r.seq);
  packNumberField(PRIORITY.bytes, r.priority);
  packField(PAYLOAD.bytes, r.payload);
  packStringField(PAYLOAD_REF.bytes, r.payloadRef);
  packNumberField(PAYLOAD_SIZE.bytes, r.payloadSize);
  packField(HEADERS.bytes, r.headers);
  packNumberField(ATTEMPTS.bytes, r.attempts);
  packNumberField(MAX_ATTEMPTS.bytes, r.maxAttempts);
  packNumberField(ENQUEUED_AT.bytes, r.enqueuedAt);
  packNumberField(RUN_AT.bytes, r.runAt);
  packStringField(DEDUP_KEY.bytes, r.dedupKey);
  packStringField(DEBOUNCE_KEY.bytes, r.debounceKey);
  packNumberField(CLAIMED_AT.bytes, r.claimedAt);
  return endFields(shared) ?? encodeJob(r, shared);
}

/** A layout given up: a value of a kind it does not write. */
const NOT_TAKEN = -1;
/** A layout stopped by a header map longer than the room asked for. */
const NO_ROOM = -2;

/** The room a header map usually fits in: one past it is laid out again with the room it needs. */
const HEADERS_ROOM = 512;

/**
 * The most bytes `layOut` writes for `r`, its header map aside: each field
 * name written as three words, each number as a float64, each string with
 * a 16-bit length.
 */
function roomFor(r: JobRecord): number {
  const p = r.payload;
  return (
    1 +
    16 * NAME_ROOM +
    7 * 9 +
    textRoom(r.id) +
    textRoom(r.queue) +
    textRoom(r.state) +
    textRoom(r.seq) +
    textRoom(r.payloadRef) +
    textRoom(r.dedupKey) +
    textRoom(r.debounceKey) +
    (p instanceof Uint8Array ? 5 + p.length : 0)
  );
}

function textRoom(s: unknown): number {
  return typeof s === "string" ? 3 + s.length : 0;
}

/** The most bytes the header map `h` takes. */
function headersRoom(h: unknown): number {
  let n = 1;
  if (h === null || typeof h !== "object") return n;
  const o = h as Record<string, unknown>;
  for (const k in o) {
    const s = o[k];
    n += 6 + k.length + (typeof s === "string" ? s.length : 0);
  }
  return n;
}

/** Fields written so far by the layout under way. */
let fields = 0;

/**
 * Writes `r` into `out` (and its view `words`) from `at` (a fixmap header,
 * then its fields), within `roomFor(r)` and `headersBudget` for the header
 * map; returns where it ends. `NOT_TAKEN` for a value it does not write,
 * `NO_ROOM` for a header map past its budget. The map has a budget of its
 * own, not the record's end: the fields after it need the room `roomFor`
 * counted for them, and a map filling it would write them past the chunk.
 */
function layOut(r: JobRecord, out: Uint8Array, words: DataView, at: number, headersBudget: number): number {
  fields = 0;
  let p = at + 1;
  p = textField(out, words, p, ID, r.id);
  p = textField(out, words, p, QUEUE, r.queue);
  p = textField(out, words, p, STATE, r.state);
  p = textField(out, words, p, SEQ, r.seq);
  p = numberField(out, words, p, PRIORITY, r.priority);
  p = bytesField(out, words, p, PAYLOAD, r.payload);
  p = textField(out, words, p, PAYLOAD_REF, r.payloadRef);
  p = numberField(out, words, p, PAYLOAD_SIZE, r.payloadSize);
  p = headersField(out, words, p, HEADERS, r.headers, headersBudget);
  p = numberField(out, words, p, ATTEMPTS, r.attempts);
  p = numberField(out, words, p, MAX_ATTEMPTS, r.maxAttempts);
  p = numberField(out, words, p, ENQUEUED_AT, r.enqueuedAt);
  p = numberField(out, words, p, RUN_AT, r.runAt);
  p = textField(out, words, p, DEDUP_KEY, r.dedupKey);
  p = textField(out, words, p, DEBOUNCE_KEY, r.debounceKey);
  p = numberField(out, words, p, CLAIMED_AT, r.claimedAt);
  if (p < 0) return p;
  // A fixmap holds up to 15 entries; more are left to the record writers' map16.
  if (fields > 0x0f) return NOT_TAKEN;
  out[at] = 0x80 | fields;
  return p;
}

function textField(out: Uint8Array, words: DataView, p: number, name: Name, v: unknown): number {
  if (p < 0 || v === undefined) return p;
  if (typeof v !== "string") return NOT_TAKEN;
  fields++;
  return putText(out, putName(words, p, name), v);
}

function numberField(out: Uint8Array, words: DataView, p: number, name: Name, v: unknown): number {
  if (p < 0 || v === undefined) return p;
  if (typeof v !== "number") return NOT_TAKEN;
  fields++;
  return putNumber(out, words, putName(words, p, name), v);
}

/** Exactly a `Uint8Array` (the codec writes other byte views its own ways). */
function bytesField(out: Uint8Array, words: DataView, p: number, name: Name, v: unknown): number {
  if (p < 0 || v === undefined) return p;
  if (!(v instanceof Uint8Array) || v.constructor !== Uint8Array) return NOT_TAKEN;
  fields++;
  p = putName(words, p, name);
  const n = v.length;
  p = writeSized(out, p, n, BIN_TAGS);
  if (n <= SHORT_COPY) for (let i = 0; i < n; i++) out[p + i] = v[i]!;
  else out.set(v, p);
  return p + n;
}

/** The longest byte string copied unit by unit: shorter than a native copy's call costs. */
const SHORT_COPY = 64;

/** A plain map of ASCII strings, as the codec writes a header map, in at most `budget` bytes; `NOT_TAKEN` for any other. */
function headersField(out: Uint8Array, words: DataView, p: number, name: Name, v: unknown, budget: number): number {
  if (p < 0 || v === undefined) return p;
  if (v === null || typeof v !== "object" || Object.getPrototypeOf(v) !== Object.prototype) return NOT_TAKEN;
  fields++;
  p = putName(words, p, name);
  const head = p++;
  const limit = head + budget;
  let n = 0;
  const h = v as Record<string, unknown>;
  for (const k in h) {
    const s = h[k];
    if (s === undefined || !Object.hasOwn(h, k)) continue;
    if (typeof s !== "string") return NOT_TAKEN;
    if (p + 6 + k.length + s.length > limit) return NO_ROOM;
    p = putText(out, p, k);
    if (p < 0) return p;
    p = putText(out, p, s);
    if (p < 0) return p;
    n++;
  }
  if (n > 0x0f) return NOT_TAKEN;
  out[head] = 0x80 | n;
  return p;
}

/** An ASCII string of under 65,536 units in its shortest header; `NOT_TAKEN` for any other (UTF-8 is the record writers'). */
function putText(out: Uint8Array, p: number, s: string): number {
  const n = s.length;
  if (n >= 0x10000) return NOT_TAKEN;
  if (n < 0x20) out[p++] = 0xa0 | n;
  else p = writeSized(out, p, n, STR_TAGS);
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return NOT_TAKEN;
    out[p + i] = c;
  }
  return p + n;
}

/** A number as the codec writes it: an integer of 32 bits in its shortest form, anything else as a float64. */
function putNumber(out: Uint8Array, words: DataView, p: number, v: number): number {
  if (v >>> 0 === v) return writeUint(out, p, v);
  if (v >> 0 === v) {
    if (v >= -0x20) {
      out[p] = 0x100 + v;
      return p + 1;
    }
    if (v >= -0x80) {
      out[p] = 0xd0;
      out[p + 1] = v + 0x100;
      return p + 2;
    }
    if (v >= -0x8000) {
      out[p] = 0xd1;
      out[p + 1] = (v >> 8) & 0xff;
      out[p + 2] = v & 0xff;
      return p + 3;
    }
    out[p] = 0xd2;
    out[p + 1] = (v >>> 24) & 0xff;
    out[p + 2] = (v >>> 16) & 0xff;
    out[p + 3] = (v >>> 8) & 0xff;
    out[p + 4] = v & 0xff;
    return p + 5;
  }
  out[p] = 0xcb;
  words.setFloat64(p + 1, v);
  return p + 9;
}
