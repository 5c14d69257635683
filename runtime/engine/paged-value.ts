/**
 * @module What the writer holds per key when values may be paged out of
 * memory (see value-pager.ts): the types, the policy of which values may
 * leave, and the packing that compacts the small values that stay.
 */
import { copyBytes } from "../bytes.js";
import type { LayeredState } from "./layered-state.js";

/** A value the writer does not hold: the id of the segment run that stores it (0 or more). */
export type PagedValue = number;
/**
 * A small value the writer holds packed (see `packValue`): a string of one
 * character per byte, or a negative number -n for a value that repeats the
 * last n characters of its key (ASCII), such as a queue's pending index
 * entry, whose value is the job id its key ends with.
 */
export type PackedValue = string | number;
/**
 * A value waiting in the memtable for a checkpoint to page it out: its bytes
 * in a chunk of a `ValueArena`. Held instead of a `Uint8Array` view of the
 * same bytes, which costs about 96 B of heap against this object's 40 B:
 * at 1M pending jobs up to two checkpoint intervals' worth (about 70,000)
 * wait, and they live through mark-compacts, whose survivors set how far
 * the heap may grow before the next one. The object keeps its chunk alive,
 * so a chunk goes when the collector finds no value in it held, as a
 * view's did, and it is compared by identity, as the view was (see the
 * engine's `#pageOut` and `valueToken`). A chunk's bytes are never written
 * again once a value is copied in, so every view `bytes` makes stays right.
 */
export class ArenaValue {
  /** `offset * 2^15 + length` in one small integer (offsets below 2^16, lengths up to 2^14): a second field would cost 8 B more per value. */
  readonly #at: number;
  readonly #chunk: Uint8Array;

  constructor(chunk: Uint8Array, offset: number, length: number) {
    this.#chunk = chunk;
    this.#at = offset * 32768 + length;
  }

  get byteLength(): number {
    return this.#at & 32767;
  }

  /** The bytes, as a view made for this call that the caller must not mutate. */
  bytes(): Uint8Array {
    const from = Math.floor(this.#at / 32768);
    return this.#chunk.subarray(from, from + (this.#at & 32767));
  }
}

/**
 * An `ArenaValue` that no checkpoint pages: a value that stays in memory,
 * kept in the arena instead of packed into a string (see `keepValue`). A
 * read of it is a copy, as a packed value's is, so a caller that changes
 * what it read changes nothing held.
 */
export class KeptValue extends ArenaValue {}

/** What the writer's state holds per key: a value, a value waiting to be paged, a paged value, or a packed one. */
export type StoredValue = Uint8Array | ArenaValue | PagedValue | PackedValue;
/** The writer's state: a value, or where it is paged, by key (a memtable over compact key runs). */
export type StateMap = LayeredState;

/** Which values may leave memory once checkpointed. */
export interface PagePolicy {
  /** Only keys starting with one of these. */
  readonly keyPrefixes: readonly string[];
  /** Only values of at least this many bytes (smaller ones cost less than the bookkeeping). */
  readonly minBytes: number;
}

/** Whether a stored value is paged out (the id of the run holding it), as opposed to held. */
export function isPaged(v: StoredValue): v is PagedValue {
  return typeof v === "number" && v >= 0;
}

/**
 * What the state keeps in its memtable when it freezes: values a checkpoint
 * will page out once stored, which it recognizes by identity (see the
 * engine's `#pageOut`).
 */
export function holdUntilPaged(policy: PagePolicy): (key: string, v: StoredValue) => boolean {
  // A value kept in the arena that no checkpoint pages (`keepValue`) goes into a run like a packed one.
  return (key, v) => (v instanceof ArenaValue || v instanceof Uint8Array) && isPageable(policy, key, v);
}

/** Whether `v` is bytes the writer holds as they are (its own array, or its place in an arena), as opposed to paged or packed. */
export function isHeldBytes(v: StoredValue | null): v is Uint8Array | ArenaValue {
  return v instanceof Uint8Array || v instanceof ArenaValue;
}

/** Whether `value` of `key` may be paged out under `policy`. */
export function isPageable(policy: PagePolicy, key: string, value: Uint8Array | ArenaValue): boolean {
  if (value.byteLength < policy.minBytes) return false;
  for (const p of policy.keyPrefixes) if (key.startsWith(p)) return true;
  return false;
}

/** Values up to this many bytes are held packed in a string (see `packValue`); larger ones get a buffer of their own. */
export const MAX_PACKED_BYTES = 1024;

/** Up to this many bytes a byte loop unpacks a value faster than `Buffer.write` into a chunk. */
const LOOP_BYTES = 64;

/**
 * Copies a value the writer keeps in memory into its most compact form, so
 * that it stops holding the object (WAL object, segment) it was a view into:
 * up to `MAX_PACKED_BYTES`, a one-byte string of its bytes (a string costs
 * its bytes plus a 16 B header, a typed array view about 100 B of its own);
 * larger, a copy of its own.
 */
export function packValue(key: string, v: Uint8Array): PackedValue | Uint8Array {
  if (v.byteLength > MAX_PACKED_BYTES) return copyBytes(v);
  if (repeatsKeyTail(key, v)) return -v.byteLength;
  return latin1Of(v);
}

/**
 * Values of at least this many bytes that stay in memory are kept in the
 * writer's `ValueArena` rather than packed into a string: an `ArenaValue`
 * is a 40 B heap object whatever the value's size, its bytes outside the
 * heap, where a string is a 16 B header plus every byte in the heap. Such a
 * value is written once and lives in the memtable until it freezes (a
 * step's history entry, about 110 B): a string of it is copied by the
 * scavenge that meets it and then promoted, the arena's object is a third
 * of that. Smaller values stay strings (a value read on a hot path, the
 * queue's stats and a step's pointer, keeps the token `committedToken`
 * gives without a read). At this size a read's copy is a view of a chunk
 * either way (`unpackValue` past `LOOP_BYTES`).
 */
export const ARENA_KEPT_BYTES = LOOP_BYTES;

/** Whether `keepValue` keeps a value of `n` bytes in the arena (else packs it, or copies one too large to pack). */
export function keptInArena(n: number): boolean {
  return n >= ARENA_KEPT_BYTES && n <= MAX_PACKED_BYTES;
}

/**
 * The form in which the writer keeps a value that no checkpoint pages:
 * `packValue`'s, except that one `keptInArena` takes is copied into `arena`
 * (when given) instead of packed into a string; like a packed value it
 * holds nothing of the array given (a caller's, or a WAL object's view).
 */
export function keepValue(key: string, v: Uint8Array, arena: ValueArena | undefined): StoredValue {
  if (arena === undefined || !keptInArena(v.byteLength) || repeatsKeyTail(key, v)) return packValue(key, v);
  return arena.keep(v);
}

/**
 * Node's latin1 decoder of a Buffer, which takes any Uint8Array as `this`
 * (not in Node's typings). Called on the value itself it makes no Buffer
 * view per value: the view cost more than the decode (2-3x the time of
 * this call per value at 24-1024 B), and a loop of `fromCharCode` was
 * slower from 24 B on. A runtime without it takes the view.
 */
const nodeLatin1Slice = (Buffer.prototype as unknown as { latin1Slice?: (this: Uint8Array, start: number, end: number) => string }).latin1Slice;

/** `v`'s bytes as a string of one character per byte. */
function latin1Of(v: Uint8Array): string {
  if (nodeLatin1Slice !== undefined) return nodeLatin1Slice.call(v, 0, v.byteLength);
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("latin1");
}

/**
 * `bytes[from..from+len)` packed into a string of one character per byte
 * (`len` at most `MAX_PACKED_BYTES`), with no view or copy of them made
 * first: a value read out of a key run to be held in memory again.
 */
export function packedBytes(bytes: Uint8Array, from: number, len: number): PackedValue {
  if (nodeLatin1Slice !== undefined) return nodeLatin1Slice.call(bytes, from, from + len);
  return Buffer.from(bytes.buffer, bytes.byteOffset + from, len).toString("latin1");
}

/**
 * Copies values that wait in the memtable for a checkpoint to page them (see
 * `holdUntilPaged`) into shared chunks, back to back. A replayed value is a
 * view into its WAL object and would keep the whole object alive (its keys,
 * framing and every value that since changed or was packed); a committed one
 * is the caller's array, an allocation of its own: at 1M pending jobs the
 * memtable and the checkpoint in flight held about 110,000 of them, each
 * with its own backing store and `ArrayBuffer` object, and the allocator
 * kept the freed ones as fragments. A chunk goes once the checkpoints have
 * paged (or commits replaced) all of its values.
 */
export class ValueArena {
  static readonly CHUNK_BYTES = 64 * 1024;
  #chunk = new Uint8Array(0);
  #used = 0;

  /** A copy of `v` (its place in a shared chunk; a copy of its own when large). */
  copy(v: Uint8Array): ArenaValue | Uint8Array {
    const n = v.byteLength;
    if (n > ValueArena.CHUNK_BYTES / 4) return copyBytes(v);
    const at = this.#place(v, n);
    return new ArenaValue(this.#chunk, at, n);
  }

  /** A copy of `v` (at most `MAX_PACKED_BYTES`) that no checkpoint pages: its place in a shared chunk. */
  keep(v: Uint8Array): KeptValue {
    const n = v.byteLength;
    const at = this.#place(v, n);
    return new KeptValue(this.#chunk, at, n);
  }

  /** Copies `v` (`n` bytes, at most a quarter chunk) into the current chunk, or a new one when it has no room; its offset. */
  #place(v: Uint8Array, n: number): number {
    if (this.#used + n > this.#chunk.byteLength) {
      this.#chunk = new Uint8Array(ValueArena.CHUNK_BYTES);
      this.#used = 0;
    }
    const at = this.#used;
    this.#chunk.set(v, at);
    this.#used = at + n;
    return at;
  }
}

/** Whether `v` (at least one byte) equals the UTF-8 encoding of the last `v.byteLength` characters of `key`, all of them ASCII. */
function repeatsKeyTail(key: string, v: Uint8Array): boolean {
  const n = v.byteLength;
  if (n === 0 || n > key.length) return false;
  const from = key.length - n;
  for (let i = 0; i < n; i++) {
    const c = key.charCodeAt(from + i);
    if (c >= 0x80 || c !== v[i]) return false;
  }
  return true;
}

/** The bytes of a value held in memory (`v` not paged), as an array the caller must not mutate. */
export function heldValue(key: string, v: Uint8Array | ArenaValue | PackedValue): Uint8Array {
  if (v instanceof Uint8Array) return v;
  if (v instanceof ArenaValue) return v instanceof KeptValue ? copiedOut(v.bytes()) : v.bytes();
  if (typeof v === "number") {
    const out = new Uint8Array(-v);
    const from = key.length + v;
    for (let i = 0; i < out.length; i++) out[i] = key.charCodeAt(from + i);
    return out;
  }
  return unpackValue(v);
}

/**
 * Reads of packed values over `LOOP_BYTES` are carved out of shared chunks
 * of this size, as Node's own buffer pool does: an array buffer per read
 * costs an allocation outside the heap and its bookkeeping, on every read
 * of a run record. A view keeps its chunk alive while the caller holds it.
 */
const CHUNK_BYTES = 8 * 1024;
let chunk = Buffer.alloc(0);
let chunkUsed = 0;

/** A copy of a kept value's bytes, as a fresh array the caller owns (carved out of a shared chunk as `unpackValue`'s are). */
function copiedOut(v: Uint8Array): Uint8Array {
  const n = v.byteLength;
  if (n <= LOOP_BYTES) return v.slice();
  if (chunkUsed + n > chunk.byteLength) {
    chunk = Buffer.alloc(Math.max(CHUNK_BYTES, n));
    chunkUsed = 0;
  }
  chunk.set(v, chunkUsed);
  const out = new Uint8Array(chunk.buffer, chunk.byteOffset + chunkUsed, n);
  chunkUsed += n;
  return out;
}

/** The bytes of a packed string, as a fresh array the caller owns. */
function unpackValue(s: string): Uint8Array {
  const n = s.length;
  if (n <= LOOP_BYTES) {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = s.charCodeAt(i);
    return out;
  }
  if (chunkUsed + n > chunk.byteLength) {
    chunk = Buffer.alloc(Math.max(CHUNK_BYTES, n));
    chunkUsed = 0;
  }
  chunk.write(s, chunkUsed, n, "latin1");
  const out = new Uint8Array(chunk.buffer, chunk.byteOffset + chunkUsed, n);
  chunkUsed += n;
  return out;
}
