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
/** What the writer's state holds per key: a value, a paged value, or a packed one. */
export type StoredValue = Uint8Array | PagedValue | PackedValue;
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
  return (key, v) => v instanceof Uint8Array && isPageable(policy, key, v);
}

/** Whether `value` of `key` may be paged out under `policy`. */
export function isPageable(policy: PagePolicy, key: string, value: Uint8Array): boolean {
  if (value.byteLength < policy.minBytes) return false;
  for (const p of policy.keyPrefixes) if (key.startsWith(p)) return true;
  return false;
}

/** Values up to this many bytes are held packed in a string (see `packValue`); larger ones get a buffer of their own. */
export const MAX_PACKED_BYTES = 1024;

/** Up to this many bytes a byte loop beats the round trip through `Buffer`. */
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
  if (v.byteLength <= LOOP_BYTES) return String.fromCharCode.apply(null, v as unknown as number[]);
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("latin1");
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

  /** A copy of `v` (a view into a shared chunk; a copy of its own when large). */
  copy(v: Uint8Array): Uint8Array {
    const n = v.byteLength;
    if (n > ValueArena.CHUNK_BYTES / 4) return copyBytes(v);
    if (this.#used + n > this.#chunk.byteLength) {
      this.#chunk = new Uint8Array(ValueArena.CHUNK_BYTES);
      this.#used = 0;
    }
    const out = this.#chunk.subarray(this.#used, this.#used + n);
    out.set(v);
    this.#used += n;
    return out;
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
export function heldValue(key: string, v: Uint8Array | PackedValue): Uint8Array {
  if (v instanceof Uint8Array) return v;
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
