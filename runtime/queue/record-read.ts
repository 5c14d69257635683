/**
 * @module Job records read directly from their MessagePack bytes, the
 * counterpart of the direct writers (record-pack.ts): a map of the job
 * fields, each value of the kind its field holds, decoded into the object
 * the general decoder makes of them (the same fields, in the same order,
 * the same values; byte fields as views of the bytes read), without its
 * per-call setup, its per-value dispatch and the `DataView` it attaches to
 * every array it reads. Every claim reads a job record.
 *
 * Anything else answers undefined, for the general decoder to read as
 * before: a field this version does not know or one given twice, a value
 * of another kind (a 64-bit integer past 2^53, a 32-bit float, null),
 * a number outside its field's range (see `inRange`), a record lacking a field every job holds or in no job state, a string
 * holding other than ASCII, a header named as anything `Object.prototype`
 * holds (`__proto__`, a setter), bytes after the map. Call it only while
 * `Object.prototype` holds no job field name and no index (see `decodeJob`):
 * its fields are assigned.
 */
import type { JobRecord } from "./record.js";
import { isPriority, MAX_PRIORITY } from "./config.js";
import { isCount, isPositiveCount, isStoredTime } from "../value-ranges.js";

/** What a field holds. */
const TEXT = 0;
const NUMBER = 1;
const BYTES = 2;
const HEADERS = 3;
const FLAG = 4;
type Kind = typeof TEXT | typeof NUMBER | typeof BYTES | typeof HEADERS | typeof FLAG;

/** The range a number field holds (see value-ranges.ts): a value outside it is damage. */
const PRIORITY = 0;
const COUNT = 1;
const LIMIT = 2;
const TIME = 3;
type Range = typeof PRIORITY | typeof COUNT | typeof LIMIT | typeof TIME;

interface Field {
  readonly name: string;
  readonly bytes: Uint8Array;
  readonly kind: Kind;
  readonly range: Range;
  /** The field's bit in the set of fields read so far. */
  readonly bit: number;
}

/** Each field, what it holds and, for a number, its range. */
const FIELD_KINDS: readonly (readonly [keyof JobRecord, Kind, Range?])[] = [
  ["id", TEXT],
  ["queue", TEXT],
  ["state", TEXT],
  ["seq", TEXT],
  ["priority", NUMBER, PRIORITY],
  ["payload", BYTES],
  ["payloadRef", TEXT],
  ["payloadSize", NUMBER, COUNT],
  ["headers", HEADERS],
  ["attempts", NUMBER, COUNT],
  ["requeues", NUMBER, COUNT],
  ["maxAttempts", NUMBER, LIMIT],
  ["enqueuedAt", NUMBER, TIME],
  ["claimedAt", NUMBER, TIME],
  ["runAt", NUMBER, TIME],
  ["wokenAt", NUMBER, TIME],
  ["attached", BYTES],
  ["completedAt", NUMBER, TIME],
  ["failedAt", NUMBER, TIME],
  ["lastError", TEXT],
  ["dedupKey", TEXT],
  ["debounceKey", TEXT],
  ["cancelRequested", FLAG],
  ["retainUntil", NUMBER, TIME],
];

/** The fields every job record holds (`payload` aside: a record without one reads as holding no bytes). */
const REQUIRED: ReadonlySet<string> = new Set<keyof JobRecord>(["id", "queue", "state", "seq", "priority", "attempts", "maxAttempts", "enqueuedAt"]);
const REQUIRED_BITS = FIELD_KINDS.reduce((bits, [name], i) => (REQUIRED.has(name) ? bits + 2 ** i : bits), 0);

/** The fields by the length of their name (all under 32 bytes, each a fixstr). */
const BY_LENGTH: Field[][] = Array.from({ length: 32 }, () => []);
FIELD_KINDS.forEach(([name, kind, range], i) => {
  BY_LENGTH[name.length]!.push({ name, bytes: new TextEncoder().encode(name), kind, range: range ?? COUNT, bit: 2 ** i });
});

/**
 * Node's latin1 decoder of a Buffer, which takes any Uint8Array as `this`
 * (see paged-value.ts): for ASCII the same string UTF-8 decoding gives,
 * with no view made per string.
 */
const nodeLatin1Slice = (Buffer.prototype as unknown as { latin1Slice?: (this: Uint8Array, start: number, end: number) => string }).latin1Slice;

/** Eight bytes turned into a float64 (big-endian, as MessagePack writes it). */
const floatBytes = new Uint8Array(8);
const floatView = new DataView(floatBytes.buffer);

/** Where the value read last ends; -1 when the bytes are not a value this reader takes. */
let pos = 0;

/** The job record `b` holds, when it is a record this reader takes (see the module); undefined otherwise. */
export function readJobRecord(b: Uint8Array): JobRecord | undefined {
  const end = b.length;
  const n = readMapHeader(b);
  if (n < 0) return undefined;
  const o: Record<string, unknown> = {};
  let seen = 0;
  for (let i = 0; i < n; i++) {
    if (pos >= end) return undefined;
    const k = b[pos]!;
    if (k < 0xa0 || k > 0xbf) return undefined;
    const f = fieldAt(b, pos + 1, k & 0x1f);
    if (f === undefined || (seen & f.bit) !== 0) return undefined;
    seen |= f.bit;
    pos += 1 + (k & 0x1f);
    let v: unknown;
    switch (f.kind) {
      case TEXT:
        v = readText(b, end);
        break;
      case NUMBER:
        v = readNumber(b, end);
        // Out of its range: left to the general decoder, which names the field.
        if (v !== undefined && !inRange(v as number, f.range)) return undefined;
        break;
      case BYTES:
        v = readBytes(b, end);
        break;
      case HEADERS:
        v = readHeaders(b, end);
        break;
      case FLAG:
        v = pos < end && (b[pos] === 0xc2 || b[pos] === 0xc3) ? b[pos++] === 0xc3 : undefined;
        break;
    }
    if (v === undefined) return undefined;
    o[f.name] = v;
  }
  if (pos !== end || (seen & REQUIRED_BITS) !== REQUIRED_BITS) return undefined;
  return isJobState(o.state) ? (o as unknown as JobRecord) : undefined;
}

/**
 * Whether the number `n` is in `range`. A value no writer makes is damage
 * acted on otherwise: a NaN or negative due time made a job due at once or
 * never, a negative attempt count granted attempts past the limit, a
 * priority outside the index's width filed the job out of order.
 */
function inRange(n: number, range: Range): boolean {
  switch (range) {
    case PRIORITY:
      return isPriority(n);
    case COUNT:
      return isCount(n);
    case LIMIT:
      return isPositiveCount(n);
    case TIME:
      return isStoredTime(n);
  }
}

const RANGE_WORDS: Record<Range, string> = {
  [PRIORITY]: `a whole number from 0 to ${MAX_PRIORITY}`,
  [COUNT]: "a whole number from 0 up that a number holds exactly",
  [LIMIT]: "a whole number from 1 up that a number holds exactly",
  [TIME]: `a time in ms from 0 to ${Number.MAX_SAFE_INTEGER}`,
};

/**
 * The job fields `b` holds before the first thing this reader does not take
 * (see the module), each whole: what can be read of a damaged record (one
 * cut short, a field of another kind) to set it aside. Only as called for
 * `readJobRecord`; the fields are not checked beyond their kind.
 */
export function readJobFieldsUntilDamage(b: Uint8Array): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  const end = b.length;
  const n = readMapHeader(b);
  if (n < 0) return o;
  for (let i = 0; i < n && pos < end; i++) {
    const k = b[pos]!;
    if (k < 0xa0 || k > 0xbf) break;
    const f = fieldAt(b, pos + 1, k & 0x1f);
    if (f === undefined || f.name in o) break;
    pos += 1 + (k & 0x1f);
    const v =
      f.kind === TEXT
        ? readText(b, end)
        : f.kind === NUMBER
          ? readNumber(b, end)
          : f.kind === BYTES
            ? readBytes(b, end)
            : f.kind === HEADERS
              ? readHeaders(b, end)
              : undefined;
    if (v === undefined) break;
    o[f.name] = v;
  }
  return o;
}

/** The entries of the fixmap or map16 `b` starts with, `pos` set past its header; -1 when it starts with neither. */
function readMapHeader(b: Uint8Array): number {
  const head = b.length === 0 ? 0 : b[0]!;
  if (head >= 0x80 && head <= 0x8f) {
    pos = 1;
    return head & 0x0f;
  }
  if (head === 0xde && b.length >= 3) {
    pos = 3;
    return (b[1]! << 8) | b[2]!;
  }
  return -1;
}

/** Whether `s` is a state a job is stored in. */
function isJobState(s: unknown): boolean {
  return s === "pending" || s === "claimed" || s === "scheduled" || s === "done" || s === "dead";
}

/**
 * What is wrong with the fields of `o`, a job record the general decoder
 * made (see `readJobRecord` for those it leaves to it), in words naming the
 * field; undefined when nothing is. A record lacking a field every job
 * holds, or holding one of another kind, is damaged: read as it is, a
 * missing attempt limit retried the job for ever, a payload that is no
 * bytes was handed out empty, a count held as a string was counted on as
 * text (or NaN: the job was never out of attempts). So is a number outside
 * its field's range (see `inRange`). A 64-bit integer (another MessagePack writer's form) in a number
 * field becomes the number while it is exact, in `o` itself.
 */
export function jobRecordFault(o: Record<string, unknown>): string | undefined {
  for (const [name, kind] of FIELD_KINDS) {
    let v = o[name];
    if (v === undefined) {
      if (REQUIRED.has(name)) return `it lacks the job's ${name}`;
      continue;
    }
    if (kind === NUMBER && typeof v === "bigint") {
      const n = Number(v);
      if (!Number.isSafeInteger(n)) return `its ${name} ${v} is past the integers a number holds exactly`;
      o[name] = v = n;
    }
    if (!holdsKind(v, kind)) return `its ${name} is not ${KIND_WORDS[kind]}`;
  }
  if (!isJobState(o.state)) return "its state is none a job is stored in";
  if (!Number.isInteger(o.attempts) || !Number.isInteger(o.maxAttempts)) return "its attempt count or limit is not a whole number";
  if (o.requeues !== undefined && !isCount(o.requeues)) return "its requeue count is not a whole number from 0 up";
  for (const [name, , range] of FIELD_KINDS) {
    const v = o[name];
    if (range !== undefined && v !== undefined && !inRange(v as number, range)) return `its ${name} ${String(v)} is not ${RANGE_WORDS[range]}`;
  }
  return undefined;
}

function holdsKind(v: unknown, kind: Kind): boolean {
  switch (kind) {
    case TEXT:
      return typeof v === "string";
    case NUMBER:
      return typeof v === "number";
    case BYTES:
      return v instanceof Uint8Array;
    case HEADERS:
      return typeof v === "object" && v !== null && !Array.isArray(v) && Object.values(v).every((h) => typeof h === "string");
    case FLAG:
      return typeof v === "boolean";
  }
}

const KIND_WORDS: Record<Kind, string> = { [TEXT]: "a string", [NUMBER]: "a number", [BYTES]: "bytes", [HEADERS]: "a map of strings", [FLAG]: "true or false" };

/** The field named by the `len` bytes at `at`, if it is one. */
function fieldAt(b: Uint8Array, at: number, len: number): Field | undefined {
  if (at + len > b.length) return undefined;
  for (const f of BY_LENGTH[len]!) {
    const name = f.bytes;
    let i = 0;
    while (i < len && b[at + i] === name[i]) i++;
    if (i === len) return f;
  }
  return undefined;
}

/** The ASCII string at `pos`, or undefined. */
function readText(b: Uint8Array, end: number): string | undefined {
  if (pos >= end) return undefined;
  const t = b[pos]!;
  let len: number;
  let at: number;
  if (t >= 0xa0 && t <= 0xbf) {
    len = t & 0x1f;
    at = pos + 1;
  } else if (t === 0xd9 && pos + 2 <= end) {
    len = b[pos + 1]!;
    at = pos + 2;
  } else if (t === 0xda && pos + 3 <= end) {
    len = (b[pos + 1]! << 8) | b[pos + 2]!;
    at = pos + 3;
  } else if (t === 0xdb && pos + 5 <= end) {
    len = u32(b, pos + 1);
    at = pos + 5;
  } else return undefined;
  const stop = at + len;
  if (stop > end) return undefined;
  // Hashed as the ASCII check reads it: a short string is looked up among those made before.
  let hash = len;
  for (let i = at; i < stop; i++) {
    const c = b[i]!;
    if (c >= 0x80) return undefined;
    hash = Math.imul(hash ^ c, 0x01000193);
  }
  pos = stop;
  if (len === 0) return "";
  if (len > KEPT_MAX_LENGTH) return latin1(b, at, stop);
  const slot = (hash >>> 0) & (KEPT_SLOTS - 1);
  const kept = keptText[slot];
  if (kept !== undefined && kept.length === len) {
    let i = 0;
    while (i < len && kept.charCodeAt(i) === b[at + i]) i++;
    if (i === len) return kept;
  }
  const made = latin1(b, at, stop);
  keptText[slot] = made;
  return made;
}

function latin1(b: Uint8Array, at: number, stop: number): string {
  return nodeLatin1Slice !== undefined ? nodeLatin1Slice.call(b, at, stop) : Buffer.from(b.buffer, b.byteOffset + at, stop - at).toString("latin1");
}

/**
 * Short strings made before, by a hash of their bytes, one per slot (a
 * string of another slot's bytes replaces it): header names and the values
 * records repeat (queue names, states, a run's id and step), handed out as
 * the same string. A header name assigned as a field is then hashed and
 * made a property name once, not at every record.
 */
const KEPT_SLOTS = 1024;
const KEPT_MAX_LENGTH = 32;
const keptText: (string | undefined)[] = new Array(KEPT_SLOTS).fill(undefined);

/** The number at `pos` (any integer form, a 64-bit one only while it is a safe integer, or a float64), or undefined. */
function readNumber(b: Uint8Array, end: number): number | undefined {
  if (pos >= end) return undefined;
  const t = b[pos]!;
  if (t <= 0x7f) {
    pos += 1;
    return t;
  }
  if (t >= 0xe0) {
    pos += 1;
    return t - 0x100;
  }
  const at = pos + 1;
  switch (t) {
    case 0xcc:
      if (at + 1 > end) return undefined;
      pos = at + 1;
      return b[at]!;
    case 0xcd:
      if (at + 2 > end) return undefined;
      pos = at + 2;
      return (b[at]! << 8) | b[at + 1]!;
    case 0xce:
      if (at + 4 > end) return undefined;
      pos = at + 4;
      return u32(b, at);
    case 0xd0:
      if (at + 1 > end) return undefined;
      pos = at + 1;
      return (b[at]! << 24) >> 24;
    case 0xd1:
      if (at + 2 > end) return undefined;
      pos = at + 2;
      return (((b[at]! << 8) | b[at + 1]!) << 16) >> 16;
    case 0xd2:
      if (at + 4 > end) return undefined;
      pos = at + 4;
      return (b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!;
    case 0xcf:
    case 0xd3: {
      // A 64-bit integer (another MessagePack writer's form of a time past 2^32): a number while it is exact.
      if (at + 8 > end) return undefined;
      const high = t === 0xcf ? u32(b, at) : (b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!;
      const n = high * 0x1_0000_0000 + u32(b, at + 4);
      if (!Number.isSafeInteger(n)) return undefined;
      pos = at + 8;
      return n;
    }
    case 0xcb:
      if (at + 8 > end) return undefined;
      for (let i = 0; i < 8; i++) floatBytes[i] = b[at + i]!;
      pos = at + 8;
      return floatView.getFloat64(0);
    default:
      return undefined;
  }
}

/** The byte string at `pos` as a view of `b`, or undefined. */
function readBytes(b: Uint8Array, end: number): Uint8Array | undefined {
  if (pos >= end) return undefined;
  const t = b[pos]!;
  let len: number;
  let at: number;
  if (t === 0xc4 && pos + 2 <= end) {
    len = b[pos + 1]!;
    at = pos + 2;
  } else if (t === 0xc5 && pos + 3 <= end) {
    len = (b[pos + 1]! << 8) | b[pos + 2]!;
    at = pos + 3;
  } else if (t === 0xc6 && pos + 5 <= end) {
    len = u32(b, pos + 1);
    at = pos + 5;
  } else return undefined;
  if (at + len > end) return undefined;
  pos = at + len;
  return new Uint8Array(b.buffer, b.byteOffset + at, len);
}

/** The map of ASCII strings at `pos`, each header its own field, or undefined. */
function readHeaders(b: Uint8Array, end: number): Record<string, string> | undefined {
  if (pos >= end) return undefined;
  const t = b[pos]!;
  let n: number;
  if (t >= 0x80 && t <= 0x8f) {
    n = t & 0x0f;
    pos += 1;
  } else if (t === 0xde && pos + 3 <= end) {
    n = (b[pos + 1]! << 8) | b[pos + 2]!;
    pos += 3;
  } else return undefined;
  const h: Record<string, string> = {};
  for (let i = 0; i < n; i++) {
    const k = readText(b, end);
    // Given twice (the general decoder keeps the last value), or a name `Object.prototype` holds (`__proto__`,
    // which the general decoder renames; a setter, which would take the value): left to the general decoder.
    if (k === undefined || k in h) return undefined;
    const v = readText(b, end);
    if (v === undefined) return undefined;
    h[k] = v;
  }
  return h;
}

function u32(b: Uint8Array, at: number): number {
  return ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
}
