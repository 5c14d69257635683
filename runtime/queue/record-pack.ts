/**
 * @module MessagePack written directly, without the general encoder's
 * per-value dispatch, to the very bytes it writes:
 * - the job record (`packRecord`), as the record codec's encoder writes it
 *   (named map, undefined fields omitted, shortest form of each header and
 *   integer, other numbers as float64), encoded at every enqueue and claim;
 * - plain data (`packPlain`), as the workflow records' encoder writes it
 *   (every map with a 16-bit entry count), for the records a workflow step
 *   writes (its history entry, the step pointer) and a run's own records.
 * A value holding anything else returns undefined, for the general encoder
 * to write.
 *
 * Records are encoded into a scratch chunk from `base` on. An encoding the
 * caller lets share memory (`shared`) is handed out as a view of the chunk
 * and the next one starts after it, as Node's buffer pool carves small
 * buffers: no copy and no array buffer of its own per record (the copy out
 * and its allocation were about 3 % of a workflow step's CPU). The bytes of
 * a view are never written again; a view keeps its chunk alive while held.
 */

import { BIN_TAGS, STR_TAGS, writeSized, writeUint } from "./msgpack-sized.js";

const encoder = new TextEncoder();

/** The scratch chunk's size, and the largest scratch array kept between records. */
const CHUNK_BYTES = 16 * 1024;
/** The largest encoding handed out as a view of the chunk; a larger one gets an array of its own. */
const SHARED_MAX_BYTES = 2 * 1024;

let buf = new Uint8Array(CHUNK_BYTES);
let view = new DataView(buf.buffer);
/** Where the encoding under way starts: the bytes before it belong to views handed out. */
let base = 0;
let pos = 0;

/** Room for `n` more bytes. Kept this small so that it inlines into every writer (the growth is apart). */
function ensure(n: number): void {
  if (pos + n > buf.length) grow(n);
}

/** The encoding so far moved to a fresh array with room for `n` more bytes (positions shift by `base`). */
function grow(n: number): void {
  const used = pos - base;
  const grown = new Uint8Array(Math.max(CHUNK_BYTES, (used + n) * 2));
  grown.set(buf.subarray(base, pos));
  buf = grown;
  view = new DataView(buf.buffer);
  base = 0;
  pos = used;
}

function writeStr(s: string): void {
  const n = s.length;
  // Room for the longest header and three bytes a UTF-16 unit.
  ensure(5 + n * 3);
  const head = n < 0x20 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : 5;
  // The chunk in a local: the loop then stores without reloading the module's binding each unit.
  const out = buf;
  let p = pos + head;
  let i = 0;
  for (; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) break;
    out[p++] = c;
  }
  let len = n;
  let at = pos + head;
  if (i < n) {
    // Not ASCII: encoded past the longest header, then moved behind the header its length takes.
    at = pos + 5;
    len = encoder.encodeInto(s, buf.subarray(at)).written;
  }
  if (len < 0x20) buf[pos++] = 0xa0 | len;
  else pos = writeSized(buf, pos, len, STR_TAGS);
  if (at !== pos) buf.copyWithin(pos, at, at + len);
  pos += len;
}

function writeNum(v: number): void {
  ensure(9);
  if (v >>> 0 === v) pos = writeUint(buf, pos, v);
  else if (v >> 0 === v) {
    if (v >= -0x20) buf[pos++] = 0x100 + v;
    else if (v >= -0x80) {
      buf[pos++] = 0xd0;
      buf[pos++] = v + 0x100;
    } else if (v >= -0x8000) {
      buf[pos++] = 0xd1;
      view.setInt16(pos, v);
      pos += 2;
    } else {
      buf[pos++] = 0xd2;
      view.setInt32(pos, v);
      pos += 4;
    }
  } else {
    buf[pos++] = 0xcb;
    view.setFloat64(pos, v);
    pos += 8;
  }
}

function writeBin(b: Uint8Array): void {
  const n = b.byteLength;
  ensure(5 + n);
  pos = writeSized(buf, pos, n, BIN_TAGS);
  buf.set(b, pos);
  pos += n;
}

/**
 * Writes `o`'s entries with a defined value as a map, in enumeration order,
 * each value by `writeValue`; false when `o` is not a plain object or a
 * value is not one `writeValue` writes. The entry count is known only at
 * the end: one byte is reserved for a fixmap's header (up to 15 entries,
 * every record and nearly every header map), and a map of more entries
 * moves them up two bytes for map16's header.
 */
function writeMap(o: object, writeValue: (v: unknown) => boolean): boolean {
  if (Object.getPrototypeOf(o) !== Object.prototype) return false;
  ensure(1);
  // From `base`: a write below may move the encoding to a fresh array.
  const from = pos - base;
  pos += 1;
  let n = 0;
  const rec = o as Record<string, unknown>;
  for (const k in rec) {
    const v = rec[k];
    if (v === undefined || !Object.hasOwn(rec, k)) continue;
    writeStr(k);
    if (!writeValue(v)) return false;
    n++;
  }
  return closeMap(from, n);
}

/** Writes the 16-bit header of a map of `n` entries into the three bytes reserved at `from` (from `base`); false past 65,535 entries. */
function closeFixedMap(from: number, n: number): boolean {
  if (n >= 0x10000) return false;
  const head = base + from;
  buf[head] = 0xde;
  buf[head + 1] = n >> 8;
  buf[head + 2] = n & 0xff;
  return true;
}

/** Writes the header of a map of `n` entries whose one reserved header byte is at `from` (from `base`); false past 65,535 entries. */
function closeMap(from: number, n: number): boolean {
  if (n < 0x10) {
    buf[base + from] = 0x80 | n;
    return true;
  }
  if (n >= 0x10000) return false;
  ensure(2);
  const head = base + from;
  buf.copyWithin(head + 3, head + 1, pos);
  buf[head] = 0xde;
  buf[head + 1] = n >> 8;
  buf[head + 2] = n & 0xff;
  pos += 2;
  return true;
}

function writeHeaderValue(v: unknown): boolean {
  if (typeof v !== "string") return false;
  writeStr(v);
  return true;
}

function writeRecordValue(v: unknown): boolean {
  if (typeof v === "string") writeStr(v);
  else if (typeof v === "number") writeNum(v);
  else if (typeof v === "boolean") {
    ensure(1);
    buf[pos++] = v ? 0xc3 : 0xc2;
  } else if (v instanceof Uint8Array) {
    // Exactly a Uint8Array: the general encoder writes other byte views its own ways.
    if (v.constructor !== Uint8Array) return false;
    writeBin(v);
  } else if (v !== null && typeof v === "object") return writeMap(v, writeHeaderValue);
  else return false;
  return true;
}

/**
 * Writes `o`'s own entries as a map with a 16-bit entry count (the general
 * encoder's fixed header when it may not skip values), each value by
 * `writePlainValue`; false for anything that encoder would write otherwise.
 */
function writeFixedMap(o: object): boolean {
  if (Object.getPrototypeOf(o) !== Object.prototype) return false;
  ensure(3);
  // From `base`: a write below may move the encoding to a fresh array.
  const from = pos - base;
  pos += 3;
  let n = 0;
  const rec = o as Record<string, unknown>;
  for (const k in rec) {
    // An own `hasOwnProperty` changes which entries the general encoder takes: leave such a map to it.
    if (k === "hasOwnProperty") return false;
    if (!Object.hasOwn(rec, k)) continue;
    writeStr(k);
    if (!writePlainValue(rec[k])) return false;
    n++;
  }
  return closeFixedMap(from, n);
}

function writePlainValue(v: unknown): boolean {
  if (typeof v === "string") writeStr(v);
  else if (typeof v === "number") writeNum(v);
  else if (typeof v === "boolean" || v === null) {
    ensure(1);
    buf[pos++] = v === null ? 0xc0 : v ? 0xc3 : 0xc2;
  } else if (typeof v !== "object") return false;
  else if (v.constructor === Uint8Array) writeBin(v as Uint8Array);
  else if (v.constructor === Array) {
    const a = v as unknown[];
    const n = a.length;
    ensure(5);
    if (n < 0x10) buf[pos++] = 0x90 | n;
    else if (n < 0x10000) {
      buf[pos++] = 0xdc;
      buf[pos++] = n >> 8;
      buf[pos++] = n & 0xff;
    } else return false;
    for (let i = 0; i < n; i++) if (!writePlainValue(a[i])) return false;
  } else return writeFixedMap(v);
  return true;
}

/**
 * Ends a direct encoding: its bytes as a view of the chunk when `shared`
 * and small, else in an array of their own; a scratch array a large value
 * grew past the chunk's size is let go rather than held for good.
 */
function finish(ok: boolean, shared: boolean): Uint8Array | undefined {
  let out: Uint8Array | undefined;
  if (ok) {
    if (shared && pos - base <= SHARED_MAX_BYTES) {
      out = new Uint8Array(buf.buffer, base, pos - base);
      base = pos;
    } else out = buf.slice(base, pos);
  }
  pos = base;
  if (buf.length > CHUNK_BYTES) {
    buf = new Uint8Array(CHUNK_BYTES);
    view = new DataView(buf.buffer);
    base = pos = 0;
  }
  return out;
}

/**
 * A field name as `packRecord` writes it (a MessagePack string), for
 * `packField`: written once, where `packRecord` writes every name of every
 * record it encodes again.
 */
export function fieldName(name: string): Uint8Array {
  pos = base;
  writeStr(name);
  const out = buf.slice(base, pos);
  pos = base;
  return out;
}

/*
 * A record laid out whole by its caller (inserted-record.ts): the caller
 * asks for the chunk with room for the most bytes it may write
 * (`directChunk`), writes from `directStart()` on with positions of its
 * own, and hands the end to `directEnd`. Bytes it writes past the record's
 * end, within the room asked for, belong to no record: the next one writes
 * over them.
 */

/** The chunk, with room for `n` bytes from `directStart()` on. */
export function directChunk(n: number): Uint8Array {
  pos = base;
  ensure(n);
  return buf;
}

/** A view of the chunk `directChunk` returned, for writing words. */
export function directView(): DataView {
  return view;
}

/** Where a record written into `directChunk()` starts. */
export function directStart(): number {
  return base;
}

/** Ends a record written into `directChunk()` up to `end` (within the room asked for): its bytes, as `finish` hands them out. */
export function directEnd(end: number, shared: boolean): Uint8Array {
  pos = end;
  return finish(true, shared)!;
}

/** Where the map `beginFields` opened starts, from `base`; how many fields it holds; whether each was one `packRecord` writes. */
let fieldsFrom = 0;
let fieldCount = 0;
let fieldsOk = true;

/**
 * Starts a record written field by field (`packField`, then `endFields`):
 * for a caller that knows its record's own keys and their order (it made
 * the record), so no enumeration, no own-key check and no name encoding.
 */
export function beginFields(): void {
  pos = base;
  ensure(1);
  fieldsFrom = 0;
  pos += 1;
  fieldCount = 0;
  fieldsOk = true;
}

/** Writes one field (`name` from `fieldName`), skipped when `value` is undefined, as `packRecord` skips it. */
export function packField(name: Uint8Array, value: unknown): void {
  if (value === undefined || !fieldsOk) return;
  writeName(name);
  if (!writeRecordValue(value)) fieldsOk = false;
}

/** `packField` for a field that holds a string: written without asking what the value is, unless it is not one. */
export function packStringField(name: Uint8Array, value: string | undefined): void {
  if (value === undefined || !fieldsOk) return;
  if (typeof value !== "string") packField(name, value);
  else {
    writeName(name);
    writeStr(value);
  }
}

/** `packField` for a field that holds a number. */
export function packNumberField(name: Uint8Array, value: number | undefined): void {
  if (value === undefined || !fieldsOk) return;
  if (typeof value !== "number") packField(name, value);
  else {
    writeName(name);
    writeNum(value);
  }
}

function writeName(name: Uint8Array): void {
  const n = name.length;
  ensure(n);
  const out = buf;
  for (let i = 0; i < n; i++) out[pos + i] = name[i]!;
  pos += n;
  fieldCount++;
}

/**
 * Ends a record `beginFields` started: the bytes `packRecord` writes for a
 * record whose own keys are the fields given, in that order (see
 * `finish` for `shared`); undefined when a value was not one it writes.
 */
export function endFields(shared: boolean): Uint8Array | undefined {
  return finish(fieldsOk && closeMap(fieldsFrom, fieldCount), shared);
}

/**
 * `value`'s bytes as the workflow records' encoder (no value skipping, named
 * maps) writes them: maps, arrays, strings, numbers, booleans, null and byte
 * arrays; undefined for anything else (undefined, other objects and byte
 * views), or a map or array of 65,536 entries or more. In an array of their
 * own, unless `shared`: then, up to `SHARED_MAX_BYTES`, a view of the chunk
 * (as `packRecord`'s), for a value that goes only into a commit whose
 * engine copies it (the workflow's `CommitOnlyBytes`).
 */
export function packPlain(value: unknown, shared = false): Uint8Array | undefined {
  pos = base;
  return finish(writePlainValue(value), shared);
}

/**
 * `record`'s bytes as the general encoder writes them; undefined when it
 * holds a value of another kind (nested deeper than a map of strings, null,
 * arrays, other objects), or a map of 65,536 entries or more. In an array
 * of their own, unless `shared`: then, up to `SHARED_MAX_BYTES`, a view of
 * a chunk that other records' views share (for a value nothing keeps, such
 * as one an engine that copies committed values commits).
 */
export function packRecord(record: object, shared = false): Uint8Array | undefined {
  pos = base;
  return finish(writeMap(record, writeRecordValue), shared);
}

/**
 * The UTF-8 bytes of `s`, as `TextEncoder` writes them. Ids and seqs are
 * ASCII (ULIDs): those are copied unit by unit, without the encoder's call
 * into native code, which costs more than the copy for a 26-character id.
 */
export function textBytes(s: string): Uint8Array {
  const n = s.length;
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return encoder.encode(s);
    out[i] = c;
  }
  return out;
}

/*
 * Plain records written field by field: `packPlain`'s bytes for a map whose
 * fields its writer knows (the workflow step's history entry), with the
 * field names encoded once (`fieldName`) and no intermediate record. The
 * map takes `packPlain`'s 16-bit entry count. A value these writers do not
 * take fails the record (`endPlainFields` answers undefined) for the caller
 * to encode the general way.
 */

/** Starts a plain record written field by field: `plainField` and the value writers below, then `endPlainFields`. */
export function beginPlainFields(): void {
  pos = base;
  ensure(3);
  fieldsFrom = 0;
  pos += 3;
  fieldCount = 0;
  fieldsOk = true;
}

/** Writes the name of the next field (from `fieldName`); its value follows. */
export function plainField(name: Uint8Array): void {
  if (fieldsOk) writeName(name);
}

/** A number as `packPlain` writes it. */
export function plainNumber(v: number): void {
  if (!fieldsOk) return;
  if (typeof v === "number") writeNum(v);
  else fieldsOk = false;
}

/** A string as `packPlain` writes it. */
export function plainString(v: string): void {
  if (!fieldsOk) return;
  if (typeof v === "string") writeStr(v);
  else fieldsOk = false;
}

/** Null, as `packPlain` writes it. */
export function plainNull(): void {
  if (!fieldsOk) return;
  ensure(1);
  buf[pos++] = 0xc0;
}

/** Exactly a Uint8Array's bytes (another byte view fails the record, as `packPlain` refuses it). */
export function plainBytes(v: Uint8Array): void {
  if (!fieldsOk) return;
  if (v.constructor === Uint8Array) writeBin(v);
  else fieldsOk = false;
}

/** The header of an array of `n` items, which follow. */
export function plainArray(n: number): void {
  if (!fieldsOk) return;
  ensure(3);
  if (n < 0x10) buf[pos++] = 0x90 | n;
  else if (n < 0x10000) {
    buf[pos++] = 0xdc;
    buf[pos++] = n >> 8;
    buf[pos++] = n & 0xff;
  } else fieldsOk = false;
}

/**
 * `o` without its undefined fields, as `packPlain` writes such a copy:
 * own fields in enumeration order; a nested plain object likewise. Arrays
 * and other values are written as `packPlain` writes them.
 */
export function plainCompact(o: object): void {
  if (fieldsOk && !writeCompactMap(o)) fieldsOk = false;
}

function writeCompactMap(o: object): boolean {
  if (Object.getPrototypeOf(o) !== Object.prototype) return false;
  ensure(3);
  const from = pos - base;
  pos += 3;
  let n = 0;
  const rec = o as Record<string, unknown>;
  for (const k in rec) {
    if (k === "hasOwnProperty") return false;
    if (!Object.hasOwn(rec, k)) continue;
    const v = rec[k];
    if (v === undefined) continue;
    writeStr(k);
    const nested = v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Uint8Array);
    if (!(nested ? writeCompactMap(v) : writePlainValue(v))) return false;
    n++;
  }
  return closeFixedMap(from, n);
}

/** Ends a plain record `beginPlainFields` started (see `finish` for `shared`); undefined when a value was not one these writers take. */
export function endPlainFields(shared: boolean): Uint8Array | undefined {
  if (fieldsOk && !closeFixedMap(fieldsFrom, fieldCount)) fieldsOk = false;
  return finish(fieldsOk, shared);
}
