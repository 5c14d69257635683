/**
 * @module The WAL object format: one object per group commit, holding every
 * batch committed in a flush window, or a fence marker left by a new writer.
 *
 * Layout (little-endian):
 * ```
 *  0  "TQWL"                    magic
 *  4  u16 format version         (1)
 *  6  u8  kind                   0 = batches, 1 = fence
 *  7  u8  flags                  0
 *  8  u64 writer epoch
 * 16  u64 sequence number        must match the object's key
 * 24  u32 batch count            (fence: 0)
 * 28  u32 durable distance        seq minus the writer's durable watermark
 *                                when the object was sealed; 0 = not recorded
 * 32  body                       batches, or (fence) varint resume sequence
 * end u32 CRC-32 of every byte before it
 * ```
 * The durable watermark is the highest sequence number up to which the log
 * was contiguous and stored when the object was sealed (a fence records the
 * sequence right before it: its writer's replay reached it). Recovery uses
 * it to tell a crash's in-flight gap (nothing past it was acknowledged) from
 * an object deleted out of the middle of the log (see recovery.ts). Writers
 * before this field wrote 0 there, and readers that predate it ignore it.
 * A batch is `varint opCount` then per op `u8 tag (0 put, 1 delete)`, the
 * key, and for a put `varint valueLen, value`. A key is `varint keyLen`
 * (its UTF-8 bytes), `varint shared`, then its last `keyLen - shared`
 * bytes: its first `shared` bytes are those of its length's reference, the
 * last key of that length earlier in the object that was written whole
 * (shared 0), is all ASCII and is under 128 bytes. A key that shares
 * nothing is written whole, and becomes its length's reference when it is
 * of that kind. A queue's and a workflow's keys of one kind have one length
 * and start alike (a family's prefix, then ids drawn in order), so a step's
 * keys take about two fifths of their bytes. Format version 1 wrote
 * `varint keyLen, key UTF-8`, with no shared length; this engine reads it
 * still.
 *
 * Object stores write objects atomically, so a short or altered object is
 * never an interrupted write: it is corruption and is reported, never skipped.
 */
import { crc32 } from "./checksum.js";
import { isWellFormed } from "../store/keys.js";
import { StoreCorruptedError, ValidationError } from "../errors.js";
import { describeValue, errorText, isOptionBytes, quoteValue } from "../option-values.js";
import { asBuffer, ByteReader, ByteWriter, DecodeError, putVarint, readU64, varintBytes, writeU64 } from "./byte-io.js";
import { UnsupportedFormatError } from "./format-error.js";
import type { BatchOp } from "./write-batch.js";

/**
 * The error of a damaged WAL object: the key alone means nothing to a user,
 * so it says what the object is, that the store is corrupt, and what to do.
 */
export function walCorrupted(objectKey: string, detail: string): StoreCorruptedError {
  return new StoreCorruptedError(
    objectKey,
    `${detail}; it is one of the store's write-ahead log objects, which hold its latest commits, so the store is corrupt`,
    "restore the store from a backup or remove its data; nothing was replayed from this object",
  );
}

/** The WAL format this engine writes; it reads this and older. */
export const WAL_FORMAT_VERSION = 2;
/** The first version whose keys carry the bytes they share with an earlier key. */
const SHARED_KEYS_VERSION = 2;
/** Keys under this many bytes (and all ASCII) are references for the next key of their length. */
const REFERENCE_KEY_BYTES = 0x80;
const MAGIC = 0x4c575154; // "TQWL" read as little-endian u32
const HEADER_BYTES = 32;
const TRAILER_BYTES = 4;
const KIND_BATCHES = 0;
const KIND_FENCE = 1;
const TAG_PUT = 0;
const TAG_DELETE = 1;

/** A decoded WAL object: committed batches, or a new writer's fence marker. */
export type WalObject =
  | { kind: "batches"; epoch: number; seq: number; watermark: number; batches: BatchOp[][] }
  | { kind: "fence"; epoch: number; seq: number; watermark: number; resumeAt: number };

/** The largest distance the header can record; a longer one is recorded as this (a weaker, still true claim). */
const MAX_DISTANCE = 0xffffffff;

/** The header field for a watermark: how far back from `seq` it lies; 0 when unknown (negative). */
function distanceField(seq: number, watermark: number): number {
  if (watermark < 0 || watermark >= seq) return 0;
  return Math.min(MAX_DISTANCE, seq - watermark);
}

/**
 * The most bytes one batch may take encoded in the WAL: 1 GiB, the largest
 * WAL object and segment the engine's options allow. The object holding the
 * batch then stays under 2 GiB (the batches before it are under
 * `maxWalBytes`, itself at most 1 GiB), which the WAL writer's buffer, grown
 * by doubling, can hold within Node's 4 GiB Buffer limit, a single S3 PUT
 * takes (5 GiB) and a reopen reads back into one buffer. Without it a batch
 * near 4 GiB made the encoder throw part way through the commit.
 */
export const MAX_BATCH_BYTES = 2 ** 30;

/** @internal The limit `checkBatchSize` applies: a mutable object so tests can lower it instead of committing a gigabyte. */
export const batchSizeLimit = { maxBytes: MAX_BATCH_BYTES };

/** Most bytes a varint of a safe integer takes (what the bound below counts for each length). */
const MAX_VARINT_BYTES = 8;

/**
 * A bound on the bytes `WalBuilder.add` writes for `ops`: three bytes per
 * UTF-16 unit of a key and the longest varints (a key's length and shared
 * length take at most six bytes together). One pass of additions.
 */
export function batchBound(ops: readonly BatchOp[]): number {
  let bound = MAX_VARINT_BYTES;
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    bound += 1 + MAX_VARINT_BYTES + op.key.length * 3;
    if (op.kind === "put") bound += MAX_VARINT_BYTES + op.value.byteLength;
  }
  return bound;
}

/**
 * Refuses a batch (ops as `readBatchOps` returned them) whose encoding would
 * pass `batchSizeLimit`, before anything is appended. Returns the room to
 * reserve for it (`WalBuilder.add`): `batchBound`, or when that passes the
 * limit, the exact size, which only such a batch pays to count.
 */
export function checkBatchSize(ops: readonly BatchOp[]): number {
  const limit = batchSizeLimit.maxBytes;
  const bound = batchBound(ops);
  if (bound <= limit) return bound;
  let size = varintBytes(ops.length);
  for (const op of ops) {
    const keyBytes = Buffer.byteLength(op.key, "utf8");
    // A key's shared length (at most one byte) counted as if nothing were shared: a bound, like the rest.
    size += 2 + varintBytes(keyBytes) + keyBytes;
    if (op.kind === "put") size += varintBytes(op.value.byteLength) + op.value.byteLength;
  }
  if (size <= limit) return size;
  throw new ValidationError(
    `the write batch takes ${size} bytes in the WAL, past the limit of ${limit} bytes per commit; nothing was applied. ` +
      "Split it into smaller batches, or store large values as objects of their own and commit only their names",
  );
}

/**
 * Checks a batch before anything is applied: string keys that are well-formed
 * UTF-16 (a lone surrogate would not survive the UTF-8 round trip and would
 * come back as a different key) and `Uint8Array` values. Returns the ops as
 * read, in fresh objects: the WAL and the in-memory state are both built from
 * this one reading, so an op whose getters (or a Proxy) answer differently on
 * a second read cannot put one key in the WAL and another in memory. A value
 * that is not a plain `Uint8Array` or `Buffer` (a subclass, a Proxy) is copied
 * for the same reason: its bytes are read once.
 */
export function readBatchOps(ops: readonly BatchOp[]): BatchOp[] {
  const problems: string[] = [];
  const n = ops.length;
  const read: BatchOp[] = new Array<BatchOp>(n);
  for (let i = 0; i < n && problems.length < 10; i++) {
    // Ops built by hand may be anything: each field is read once, and what cannot be read is a problem, not a TypeError.
    const op = ops[i] as unknown;
    if (op === null || typeof op !== "object") {
      problems.push(`op ${i}: not an object (got ${describeValue(op)})`);
      continue;
    }
    let kind: unknown;
    let key: unknown;
    let value: unknown;
    try {
      kind = (op as BatchOp).kind;
      key = (op as BatchOp).key;
      if (kind === "put") value = (op as { value: unknown }).value;
    } catch (err) {
      problems.push(`op ${i}: its fields cannot be read (${errorText(err)})`);
      continue;
    }
    if (typeof key !== "string") problems.push(`op ${i}: the key is not a string`);
    else if (!isWellFormed(key)) {
      problems.push(`op ${i}: key ${quoteValue(key)} contains a lone surrogate, which UTF-8 cannot store`);
    }
    if (kind === "put") {
      const bytes = readValueBytes(value);
      if (bytes === undefined) problems.push(`op ${i}: the value of ${quoteValue(key)} is not a Uint8Array`);
      else if (bytes === UNREADABLE) {
        problems.push(
          `op ${i}: the value of ${quoteValue(key)} is a view of a detached or shrunk ArrayBuffer, whose bytes are gone; commit a view of live bytes`,
        );
      } else read[i] = { kind: "put", key: key as string, value: bytes };
    } else if (kind === "delete") read[i] = { kind: "delete", key: key as string };
    else problems.push(`op ${i}: unknown kind ${quoteValue(kind)}`);
  }
  if (problems.length > 0) throw new ValidationError("the write batch was rejected and nothing was applied", problems);
  return read;
}

/**
 * Checks, in place, ops the engine's own layers made and hold where no
 * caller can reach them (a transaction's batch inside the queue): objects
 * `WriteBatch` made, whose fields read the same every time. Every key is
 * checked as `readBatchOps` checks it (a key may embed a caller's text);
 * a value only when its index is in `given` (ascending): one from outside
 * the layer that made the ops, which a caller may still hold. Any other value
 * is the layer's own plain array, taken as it is. A given value
 * `readBatchOps` would copy is replaced in its op by that copy (the same
 * bytes). A batch `readBatchOps` refuses is refused with its error.
 */
export function readOwnedOps(ops: BatchOp[], given: readonly number[]): void {
  const n = ops.length;
  for (let i = 0; i < n; i++) {
    const key = ops[i]!.key;
    if (typeof key !== "string" || !isWellFormed(key)) refuseAsRead(ops);
  }
  for (let g = 0; g < given.length; g++) {
    const op = ops[given[g]!]!;
    if (op.kind !== "put") continue;
    const bytes = readValueBytes(op.value);
    if (bytes === undefined || bytes === UNREADABLE) refuseAsRead(ops);
    if (bytes !== op.value) op.value = bytes!;
  }
}

/** Throws what `readBatchOps` throws for `ops`, which a check found wrong. */
function refuseAsRead(ops: readonly BatchOp[]): never {
  readBatchOps(ops);
  throw new Error("internal: an owned batch was refused, but readBatchOps took it");
}

/**
 * `v` when it is a plain `Uint8Array` or `Buffer` (its bytes and length come
 * from the array itself), a copy when it is another `Uint8Array` (a subclass
 * may override `byteLength`, a Proxy answers each read anew), undefined when
 * it is not one or cannot be read, `UNREADABLE` when it is a view of a
 * detached buffer or of one shrunk under it.
 */
function readValueBytes(v: unknown): Uint8Array | undefined {
  if (!isOptionBytes(v)) return undefined;
  if (ArrayBuffer.isView(v)) {
    const proto: unknown = Object.getPrototypeOf(v);
    // A subclass, or a plain array given an own accessor or method the writers use, is copied from the
    // array's own bytes (the constructor reads its internal length, not a getter), whatever its getters say.
    const plain = (proto === Uint8Array.prototype || proto === Buffer.prototype) && !shadowsAnAccessor(v);
    if (plain && v.byteLength !== 0) return v;
    // An empty plain array is copied too (cheap): a view of a detached or shrunk buffer reads as empty, but copying
    // its bytes (the WAL's does) throws, which part way through an append left an object no reopen decodes.
    try {
      return new Uint8Array(v);
    } catch {
      return UNREADABLE;
    }
  }
  // A Proxy (never a view, whatever prototype it claims): its length and each byte read once.
  try {
    const source = v as ArrayLike<number>;
    const copy = new Uint8Array(source.length);
    for (let i = 0; i < copy.length; i++) copy[i] = source[i] as number;
    return copy;
  } catch {
    return undefined;
  }
}

/** What `readValueBytes` answers for a view whose bytes cannot be read (its buffer detached, or shrunk under it). */
const UNREADABLE = new Uint8Array(0);

/** Properties the WAL, segment and value writers read from a value, which an own property could answer falsely. */
const VALUE_ACCESSORS = ["byteLength", "length", "byteOffset", "buffer", "subarray", "slice"] as const;

/** True when the array has an own property under a name the writers read (it would shadow the built-in). */
function shadowsAnAccessor(v: Uint8Array): boolean {
  for (const name of VALUE_ACCESSORS) if (Object.hasOwn(v, name)) return true;
  return false;
}

/** Node's UTF-8 writer of a Buffer (not in Node's typings): one native call, no encoding name to look up. */
const nodeUtf8Write = (Buffer.prototype as unknown as { utf8Write?: (this: Buffer, s: string, at: number, max: number) => number }).utf8Write;

/** Bytes of one reference's copy: the longest reference key, rounded up to whole words. */
const SLOT_BYTES = REFERENCE_KEY_BYTES;
/** A batch of at most this many ops, each key under 128 units, has its keys written into the scratch area in one native call. */
const JOINED_KEYS = 16;
/** Units of the keys joined for one batch at most: each key padded to whole words. */
const JOINED_UNITS = JOINED_KEYS * (REFERENCE_KEY_BYTES + 3);
/** Room for the joined keys in UTF-8 (three bytes per unit), so a native write into it is never cut short. */
const SCRATCH_BYTES = 3 * JOINED_UNITS;
/** What follows a key of length n in the joined keys so that the next starts on a word: `PADDING[n & 3]`. */
const PADDING = ["", "\0\0\0", "\0\0", "\0"] as const;

/**
 * The reference keys of one WAL object being written (see the module
 * documentation): for each length under 128, where the last key of that
 * length written whole starts in the object's buffer (or -1), and a copy of
 * its bytes at the start of a word-aligned slot of its own. A key is
 * written first into an aligned scratch area, so it is compared with its
 * reference four bytes at a time, and only the bytes it does not share
 * are copied into the object. A batch's short keys are written there
 * together, each from a word boundary, in one native call.
 */
class KeyReferences {
  readonly at = new Int32Array(REFERENCE_KEY_BYTES).fill(-1);
  /** Slot n (from byte `n * SLOT_BYTES`) holds the reference of length n; the scratch area follows the last slot. */
  readonly bytes: Buffer;
  readonly words: Int32Array;
  readonly scratch: number;

  constructor() {
    const size = REFERENCE_KEY_BYTES * SLOT_BYTES + SCRATCH_BYTES;
    // Its own ArrayBuffer (not Node's pool), so its words are aligned.
    this.bytes = Buffer.from(new ArrayBuffer(size));
    this.words = new Int32Array(this.bytes.buffer, 0, size >> 2);
    this.scratch = REFERENCE_KEY_BYTES * SLOT_BYTES;
  }

  /** Forgets every reference (their slots are read only where `at` names one). */
  clear(): void {
    this.at.fill(-1);
  }

  /** Those of a sealed object, for the next builder (a WAL writer seals an object every few dozen commits). */
  static #spare: KeyReferences | undefined;

  /** References with none set: the spare when there is one, else new ones. */
  static take(): KeyReferences {
    const spare = KeyReferences.#spare;
    if (spare === undefined) return new KeyReferences();
    KeyReferences.#spare = undefined;
    spare.clear();
    return spare;
  }

  /** Keeps `refs`, which their builder no longer uses, for the next `take`. */
  static give(refs: KeyReferences): void {
    KeyReferences.#spare = refs;
  }
}

/**
 * How many first bytes the `n` ASCII bytes at `from` (a word boundary) of
 * the scratch area share with the reference of length `n` (0 without one),
 * compared a word at a time; the bytes past `n` in either, left from other
 * keys, do not count.
 */
function sharedWithReference(refs: KeyReferences, from: number, n: number): number {
  if (refs.at[n]! < 0) return 0;
  const words = refs.words;
  const key = from >> 2;
  const ref = (n * SLOT_BYTES) >> 2;
  const end = (n + 3) >> 2;
  let w = 0;
  while (w < end && words[key + w] === words[ref + w]) w++;
  if (w === end) return n;
  // Little-endian: the lowest set bit of the difference lies in the first byte that differs.
  const d = words[key + w]! ^ words[ref + w]!;
  const shared = 4 * w + ((31 - Math.clz32(d & -d)) >> 3);
  return Math.min(shared, n);
}

/**
 * Writes `key` at `at` of `buf` (length, shared length, the bytes not
 * shared; see the module documentation), which has room for three bytes per
 * unit and a varint. A key that shares nothing with its length's reference
 * is written whole and becomes the reference. Returns the position after
 * the key. A byte past the buffer's end is dropped (the batch's check of
 * its room then throws).
 */
function putKey(buf: Buffer, at: number, key: string, refs: KeyReferences): number {
  const len = key.length;
  if (len < REFERENCE_KEY_BYTES && nodeUtf8Write !== undefined) {
    // Every key the queue and workflows write: one native write into the scratch area, whose room for three
    // bytes per unit means the write is never cut short (then as many bytes as units is all ASCII).
    const scratch = refs.scratch;
    const n = nodeUtf8Write.call(refs.bytes, key, scratch, 3 * len);
    if (n === len) return putAsciiKey(buf, at, refs, scratch, n);
    // Not ASCII: whole.
    const src = refs.bytes;
    at = putVarint(buf, at, n);
    buf[at++] = 0;
    for (let i = 0; i < n; i++) buf[at + i] = src[scratch + i]!;
    return at + n;
  }
  // Long: whole, sharing nothing (and never a reference), in two native calls.
  const n = Buffer.byteLength(key, "utf8");
  at = putVarint(buf, at, n);
  buf[at++] = 0;
  return at + buf.write(key, at, n, "utf8");
}

/**
 * Writes the short ASCII key of `n` bytes at `from` (a word boundary) of the
 * scratch area at `at` of `buf`, as `putKey` does; returns the position
 * after it.
 */
function putAsciiKey(buf: Buffer, at: number, refs: KeyReferences, from: number, n: number): number {
  const src = refs.bytes;
  const shared = sharedWithReference(refs, from, n);
  buf[at] = n;
  buf[at + 1] = shared;
  const to = at + 2 - shared;
  for (let i = shared; i < n; i++) buf[to + i] = src[from + i]!;
  if (shared === 0) {
    // The new reference: its place in the object (the commit's encoded keys name it) and a copy in its slot.
    refs.at[n] = at + 2;
    const words = refs.words;
    const slot = (n * SLOT_BYTES) >> 2;
    const word = from >> 2;
    for (let w = 0, end = (n + 3) >> 2; w < end; w++) words[slot + w] = words[word + w]!;
  }
  return to + n;
}

/**
 * The keys and paddings `writeJoinedKeys` joins, kept between batches: a
 * batch as long as the one before allocates no array for them. It holds at
 * most `2 * JOINED_KEYS` short key strings of the last such batch.
 */
const joinedParts: string[] = [];

/**
 * Writes the keys of `ops` into the scratch area in one native call when
 * there are at most `JOINED_KEYS`, all ASCII and under 128 units: each from
 * a word boundary, in op order (one call instead of one per key, which was
 * most of a key's cost). Returns false, having written nothing that counts,
 * for any other batch. The keys are joined by `join`, which makes the one
 * flat string the write needs: joined by `+`, each key and each padding
 * made a rope node (two per key) that the write then flattened anyway.
 */
function writeJoinedKeys(ops: readonly BatchOp[], refs: KeyReferences): boolean {
  const count = ops.length;
  if (count < 2 || count > JOINED_KEYS || nodeUtf8Write === undefined) return false;
  const parts = joinedParts;
  let units = 0;
  for (let i = 0; i < count; i++) {
    const key = ops[i]!.key;
    const len = key.length;
    if (len >= REFERENCE_KEY_BYTES) return false;
    parts[2 * i] = key;
    parts[2 * i + 1] = PADDING[len & 3]!;
    units += (len + 3) & ~3;
  }
  parts.length = 2 * count;
  // As many bytes as units: every unit is ASCII (any other takes two bytes or more).
  return nodeUtf8Write.call(refs.bytes, parts.join(""), refs.scratch, 3 * units) === units;
}

/**
 * Reads a key `putKey` wrote (`shares`: the object's format has shared
 * lengths), updating `refs` as `putKey` did. A shared length with no key to
 * share it with is damage (a `DecodeError`).
 */
function readKey(r: ByteReader, refs: (string | undefined)[], shares: boolean): string {
  if (!shares) return r.str();
  const n = r.varint();
  const shared = r.varint();
  if (shared > n) throw new DecodeError(`a key of ${n} bytes claims to share ${shared} bytes`);
  const from = r.pos;
  r.skip(n - shared);
  let key: string;
  if (shared === 0) key = r.buf.toString("utf8", from, from + n);
  else {
    const ref = n < REFERENCE_KEY_BYTES ? refs[n] : undefined;
    if (ref === undefined) throw new DecodeError(`a key of ${n} bytes shares ${shared} bytes, but no key of that length came before it`);
    key = ref.slice(0, shared) + r.buf.toString("utf8", from, from + n - shared);
  }
  // A key is its length's reference when written whole, all ASCII (as many units as bytes) and short, as `putKey` decides.
  if (shared === 0 && n < REFERENCE_KEY_BYTES && key.length === n) refs[n] = key;
  return key;
}

const NO_BYTES = new Uint8Array(0);

/**
 * Where `WalBuilder.add` wrote the keys of the batch it added last: op i's
 * key is the UTF-8 bytes `bytes[heads[2i], heads[2i] + heads[2i + 1])` (the
 * bytes it shares with its reference, usually none) followed by
 * `bytes[spans[2i], spans[2i] + spans[2i + 1])`. The commit hands them to
 * the changed-keys map, which copies them instead of encoding each key a
 * second time. One per engine, written over by each add; read in the same
 * turn as the add, while the object's buffer still holds them (it is reused
 * only once the object is stored).
 */
export class EncodedKeys {
  /** The buffer the batch was encoded into (empty once released). */
  bytes: Uint8Array = NO_BYTES;
  /** Start and length of each op's key bytes written in its place, in op order. */
  spans = new Int32Array(32);
  /** Start and length of each op's key bytes shared with its reference (length 0: the key is whole in `spans`). */
  heads = new Int32Array(32);
  /** Whether every key of the batch is ASCII (as many UTF-8 bytes as UTF-16 units); false when not known (a key of 128 units or more). */
  ascii = false;

  /** Lets go of the buffer once the keys are read: an idle engine must not hold a WAL object's buffer the writer dropped. */
  release(): void {
    this.bytes = NO_BYTES;
    this.ascii = false;
  }

  /** Makes room for the spans of `ops` keys. */
  reserve(ops: number): void {
    if (2 * ops <= this.spans.length) return;
    let n = this.spans.length;
    while (n < 2 * ops) n *= 2;
    this.spans = new Int32Array(n);
    this.heads = new Int32Array(n);
  }
}

/** Records op `i`'s key, written by `putKey` from `at` to `end` of `buf` (its length a varint, one byte below 128, then its shared length), in `keys`. */
function keySpan(keys: EncodedKeys, i: number, buf: Uint8Array, at: number, end: number, refs: KeyReferences): void {
  let from = at + 1;
  while (buf[from - 1]! >= 0x80) from++;
  const shared = buf[from]!;
  keys.spans[2 * i] = from + 1;
  keys.spans[2 * i + 1] = end - from - 1;
  // A key that shares bytes has a one-byte length, and its reference is still its length's.
  keys.heads[2 * i] = shared === 0 ? 0 : refs.at[buf[at]!]!;
  keys.heads[2 * i + 1] = shared;
}

/**
 * Whether `key`, which `putKey` wrote at `at` of `buf`, is all ASCII and
 * `sofar` holds (the batch's keys before it were): a key under 128 units
 * has a one-byte length there, which equals its units only when each took
 * one byte. A longer key is not known (false).
 */
function asciiKeyAt(buf: Uint8Array, at: number, key: string, sofar: boolean): boolean {
  return sofar && key.length < 0x80 && buf[at] === key.length;
}

/** Accumulates batches for one WAL object; each batch is encoded once, when added. */
export class WalBuilder {
  readonly #w: ByteWriter;
  #batches = 0;
  /** The reference key of each length under 128 bytes (see `putKey`): the decoder keeps the same, reading in order. Undefined once sealed (they went to the next builder). */
  #refs: KeyReferences | undefined = KeyReferences.take();
  #shared = 0;

  /** `reuse`: the writer of an earlier builder whose object is stored and no longer read (written over from the start). */
  constructor(initialCapacity = 4096, reuse?: ByteWriter) {
    this.#w = reuse ?? new ByteWriter(initialCapacity);
    this.#w.pos = HEADER_BYTES;
  }

  /** The writer this builder writes into (see the constructor). */
  get writer(): ByteWriter {
    return this.#w;
  }

  get batchCount(): number {
    return this.#batches;
  }

  get byteLength(): number {
    return this.#w.pos + TRAILER_BYTES;
  }

  /** Key bytes left out of the object because they were shared with a reference: `byteLength` plus these is its size with every key whole. */
  get sharedKeyBytes(): number {
    return this.#shared;
  }

  /**
   * Encodes a batch, whole or not at all: an encoding that throws part way
   * (a buffer that cannot grow so far) leaves the object as it was, so the
   * batches before and after it still decode. `room`: at least the bytes
   * the batch takes (`batchBound`, or `checkBatchSize`'s answer). `keys`:
   * told where each key's bytes were written.
   */
  add(ops: readonly BatchOp[], room = batchBound(ops), keys?: EncodedKeys): void {
    const w = this.#w;
    const start = w.pos;
    const refs = this.#refs;
    if (refs === undefined) throw new Error("internal: a batch was added to a sealed WAL object");
    try {
      // Room for the whole batch at once (`room` bounds what it writes), then writes that check nothing each.
      w.ensure(room);
      const buf = w.buffer;
      keys?.reserve(ops.length);
      let shared = 0;
      let at = putVarint(buf, start, ops.length);
      // Where the next key lies in the scratch area, when the batch's keys were written there together (else -1).
      let joinedAt = writeJoinedKeys(ops, refs) ? refs.scratch : -1;
      // Whether every key so far took one byte per unit (all ASCII); a joined write found it for all at once.
      let ascii = true;
      for (let i = 0; i < ops.length; i++) {
        const op = ops[i]!;
        if (op.kind === "put") {
          buf[at++] = TAG_PUT;
          const keyAt = at;
          if (joinedAt < 0) {
            at = putKey(buf, at, op.key, refs);
            ascii = asciiKeyAt(buf, keyAt, op.key, ascii);
          } else {
            const len = op.key.length;
            at = putAsciiKey(buf, at, refs, joinedAt, len);
            joinedAt += (len + 3) & ~3;
          }
          // A one-byte length is followed by the shared length (a longer one shares nothing).
          if (buf[keyAt]! < 0x80) shared += buf[keyAt + 1]!;
          if (keys !== undefined) keySpan(keys, i, buf, keyAt, at, refs);
          const v = op.value;
          const n = v.byteLength;
          at = putVarint(buf, at, n);
          // Nothing to copy, and copying from a view of a detached or shrunk buffer (which reads as empty) throws.
          if (n !== 0) {
            buf.set(v, at);
            at += n;
          }
        } else {
          buf[at++] = TAG_DELETE;
          const keyAt = at;
          if (joinedAt < 0) {
            at = putKey(buf, at, op.key, refs);
            ascii = asciiKeyAt(buf, keyAt, op.key, ascii);
          } else {
            const len = op.key.length;
            at = putAsciiKey(buf, at, refs, joinedAt, len);
            joinedAt += (len + 3) & ~3;
          }
          if (buf[keyAt]! < 0x80) shared += buf[keyAt + 1]!;
          if (keys !== undefined) keySpan(keys, i, buf, keyAt, at, refs);
        }
      }
      // A byte written past the room is dropped (or lands in the next batch's room) without an error: a room too small must not pass unseen.
      if (at > start + room) throw new Error(`internal: a WAL batch took ${at - start} bytes, past the ${room} reserved for it`);
      w.pos = at;
      this.#shared += shared;
      if (keys !== undefined) {
        keys.bytes = buf;
        keys.ascii = ascii;
      }
    } catch (err) {
      w.pos = start;
      // The batch's keys may have become references though none of them stays in the object: a later key must
      // not name one. Keys written from here on share nothing until they are references again (the decoder's
      // older references are then unused, never wrong).
      refs.clear();
      throw err;
    }
    this.#batches++;
  }

  /**
   * Fills in the header and checksum; the builder must not be used after.
   * `watermark`: the writer's durable sequence number at sealing.
   */
  seal(epoch: number, seq: number, watermark = -1): Buffer {
    const w = this.#w;
    w.ensure(TRAILER_BYTES);
    const end = w.pos;
    w.pos += TRAILER_BYTES;
    const buf = w.bytes();
    writeHeader(buf, KIND_BATCHES, epoch, seq, this.#batches, distanceField(seq, watermark));
    buf.writeUInt32LE(crc32(buf.subarray(0, end)), end);
    // Its references go to the next builder (an add after this throws instead of writing over them).
    if (this.#refs !== undefined) KeyReferences.give(this.#refs);
    this.#refs = undefined;
    return w.finished();
  }
}

function writeHeader(buf: Buffer, kind: number, epoch: number, seq: number, count: number, distance: number): void {
  buf.writeUInt32LE(MAGIC, 0);
  buf.writeUInt16LE(WAL_FORMAT_VERSION, 4);
  buf[6] = kind;
  buf[7] = 0;
  writeU64(buf, 8, epoch);
  writeU64(buf, 16, seq);
  buf.writeUInt32LE(count, 24);
  buf.writeUInt32LE(distance, 28);
}

/**
 * The marker a new writer puts at the first free sequence number to fence
 * older writers. Its watermark is `seq - 1`: the new writer's replay reached
 * `seq` without a gap.
 */
export function encodeFence(epoch: number, seq: number, resumeAt: number): Buffer {
  const w = new ByteWriter(64);
  w.pos = HEADER_BYTES;
  w.varint(resumeAt);
  const end = w.pos;
  w.u32(0);
  const buf = w.bytes();
  writeHeader(buf, KIND_FENCE, epoch, seq, 0, distanceField(seq, seq - 1));
  buf.writeUInt32LE(crc32(buf.subarray(0, end)), end);
  return buf;
}

/** Decodes WAL object `seq` after checking its magic, version, checksum and sequence number. */
export function decodeWal(objectKey: string, bytes: Uint8Array, expectedSeq: number): WalObject {
  const buf = asBuffer(bytes);
  if (buf.length < HEADER_BYTES + TRAILER_BYTES) throw walCorrupted(objectKey, `WAL object is ${buf.length} bytes, shorter than its header`);
  if (buf.readUInt32LE(0) !== MAGIC) throw walCorrupted(objectKey, "not a WAL object (bad magic bytes)");
  const version = buf.readUInt16LE(4);
  const end = buf.length - TRAILER_BYTES;
  // The checksum covers the header, version included, in every format version: a version is trusted only under a
  // checksum that holds, so a flipped bit in it reads as damage, not as a newer taquba.
  if (crc32(buf.subarray(0, end)) !== buf.readUInt32LE(end)) throw walCorrupted(objectKey, "WAL checksum mismatch (truncated or altered)");
  if (version > WAL_FORMAT_VERSION) throw new UnsupportedFormatError(objectKey, version, WAL_FORMAT_VERSION);
  if (version < 1) throw walCorrupted(objectKey, `WAL object names format version ${version}, which no taquba writes`);
  const kind = buf[6]!;
  const epoch = readU64(buf, 8);
  const seq = readU64(buf, 16);
  const count = buf.readUInt32LE(24);
  const distance = buf.readUInt32LE(28);
  const watermark = distance === 0 || distance > seq ? -1 : seq - distance;
  if (seq !== expectedSeq) throw walCorrupted(objectKey, `WAL object claims sequence ${seq} but is stored at ${expectedSeq}`);
  const r = new ByteReader(buf, HEADER_BYTES, end);
  try {
    if (kind === KIND_FENCE) {
      const resumeAt = r.varint();
      if (r.remaining !== 0 || resumeAt <= seq) throw new DecodeError("malformed fence marker");
      return { kind: "fence", epoch, seq, watermark, resumeAt };
    }
    if (kind !== KIND_BATCHES) throw new DecodeError(`unknown WAL object kind ${kind}`);
    const batches: BatchOp[][] = [];
    const shares = version >= SHARED_KEYS_VERSION;
    const refs = new Array<string | undefined>(REFERENCE_KEY_BYTES);
    for (let b = 0; b < count; b++) {
      const n = r.varint();
      const ops: BatchOp[] = [];
      for (let i = 0; i < n; i++) {
        const tag = r.u8();
        const key = readKey(r, refs, shares);
        if (tag === TAG_PUT) ops.push({ kind: "put", key, value: r.blob() });
        else if (tag === TAG_DELETE) ops.push({ kind: "delete", key });
        else throw new DecodeError(`unknown op tag ${tag}`);
      }
      batches.push(ops);
    }
    if (r.remaining !== 0) throw new DecodeError(`${r.remaining} unexpected bytes after the last batch`);
    return { kind: "batches", epoch, seq, watermark, batches };
  } catch (err) {
    if (err instanceof DecodeError) throw walCorrupted(objectKey, `undecodable WAL object: ${err.message}`);
    throw err;
  }
}
