/**
 * @module An immutable, compact run of keys with their stored values, held
 * in one byte buffer instead of one string and tree slot per key (see
 * docs/engine.md, "Stage 2b, first step").
 *
 * Layout: entries in ascending `compareKeys` order (the byte order of their
 * UTF-8), in blocks of `BLOCK_ENTRIES`. An entry is a header, the key's
 * suffix (past the bytes it shares with the previous key of its block,
 * always the longest common prefix; none for a block's first entry), then
 * its value unless the header says it repeats the previous entry's. The
 * header is one byte when the key is as long as the previous one and its
 * suffix at most `SHORT_SUFFIX` bytes: `SHORT`, `SAME_VALUE` when the value
 * repeats, the suffix length (the keys of pending jobs, sequential ids of
 * one length, mostly differ in their last byte or two, and most neighbours
 * hold the same page reference or key tail: such an entry takes 2 or 3
 * bytes). Otherwise a byte of `SAME_VALUE` and the shared length (or
 * `LONG_SHARED` and a varint of it), then a varint suffix length: a block's
 * first entry starts with a 0 byte and its key's length. A value is a tag
 * byte and
 * - `PAGED`: varint run id (runs live in memory only, so this is no stored
 *   format; it was a fixed u32 while compactions re-pointed ids in place),
 * - `TAIL`: varint n, a value that repeats the last n characters of its key,
 * - `BYTES`: varint length and the bytes of a held or packed value,
 * - `REF`: varint index into the run's list of large values (kept as arrays,
 *   so merges never copy them).
 * A block's first entry shares nothing, so the binary search over blocks
 * compares a key's bytes with the run's bytes at each block start: no string
 * per block. Which entries died is kept apart (run-liveness.ts).
 *
 * Pure data structure: no IO.
 */
import { compareKeys, isWellFormed } from "../store/keys.js";
import { hashStep } from "./key-hash.js";
import { ArenaValue, type StoredValue } from "./paged-value.js";
import type { RunLiveness } from "./run-liveness.js";
import { countingFilterProbes, FilterOutcome, noteFilterProbe, noteKeyRun } from "./key-run-tally.js";
import { SpareBuffers } from "./spare-buffers.js";

/** Entries per block. */
export const BLOCK_ENTRIES = 32;
/** Held values longer than this stay arrays of their own (`REF`), shared by reference. */
const MAX_INLINE_BYTES = 1024;

const PAGED = 0;
const TAIL = 1;
const BYTES = 2;
const REF = 3;

/** Entry header bit: the key is as long as the previous one, and the low bits are its suffix's length. */
const SHORT = 0x80;
/** Entry header bit: the value is the previous entry's (the same encoded bytes), not written again. */
const SAME_VALUE = 0x40;
/** The longest suffix a short header holds. */
const SHORT_SUFFIX = 0x3f;
/** In a long header, the shared length itself up to this; this value means a varint of it follows. */
const LONG_SHARED = 0x3f;
/** The longest encoded value an entry may share with the one before it (staged before its key is written). */
const STAGED_BYTES = 24;

/** ArrayBuffer's resizable form (ES2024; Node 20 has it, the configured lib does not declare it). */
interface ResizableArrayBuffer extends ArrayBuffer {
  resize(byteLength: number): void;
  readonly maxByteLength: number;
}
const ResizableArrayBufferCtor = ArrayBuffer as unknown as new (byteLength: number, opts: { maxByteLength: number }) => ResizableArrayBuffer;

/** Past this size a buffer grows in place (resizable) instead of by copying. */
const GROW_IN_PLACE_BYTES = 1 << 20;
/** Most address space one buffer reserves to grow into. */
const MAX_RESERVE_BYTES = 2 ** 32;
/** Bytes written to a plain chunk before they move into the resizable buffer. */
const CHUNK_BYTES = 64 * 1024;
/**
 * Largest run copied out of its resizable buffer into a plain one when it is
 * finished: a run built without a bound (a freeze's) holds the run twice for
 * the copy, so only runs of a few MiB are copied; larger ones keep a view of
 * the resizable buffer.
 */
const MAX_PLAIN_COPY_BYTES = 16 * 1024 * 1024;
/** Largest bound a buffer takes whole up front (a larger one is an estimate: a manifest's sizes are not yet checked when it is given). */
const MAX_BOUND_BYTES = 1 << 30;

/**
 * A growable byte buffer, written only at its end. Small, it grows by
 * doubling into a new buffer; past `GROW_IN_PLACE_BYTES` its bytes live in a
 * resizable `ArrayBuffer` that reserves address space for far more and grows
 * in place, so a run of hundreds of MiB is never copied while it grows (a
 * copy holds both sizes at once), only the pages it fills are resident, and
 * `trimmed()` hands back exactly the bytes written, returning the rest of
 * the reservation (copied into a plain buffer when at most
 * `MAX_PLAIN_COPY_BYTES`). Writes then go to a plain chunk (`buf`) moved
 * there a chunk at a time: V8 reads and writes single bytes of a resizable buffer's
 * views several times slower than of a plain one (building the runs of a
 * store at open spent about a third of its time so).
 *
 * Given a `bound` instead (a caller that knows the bytes to come, such as
 * open from the segments it reads), it writes into one plain buffer of that
 * size and hands back a view of it: no chunk moved, no growth, no clearing
 * of the reservation's spare pages at the trim (a merge bounds its output
 * so from its inputs). Pages past the bytes written
 * are never touched, so they are address space only, not resident memory.
 * A bound too small (a manifest that lied) carries on as above.
 */
class Bytes {
  /** Where writes go: the whole output while small or bounded, else the chunk not yet moved. */
  buf: Buffer;
  /** The write position in `buf`. */
  pos = 0;
  /** Bytes already moved into `#resizable` (before `buf`). */
  #moved = 0;
  #resizable: ResizableArrayBuffer | undefined;
  /** Whether `buf` is a bound's buffer (handed back as a view, whatever it leaves spare). */
  #bounded = false;
  constructor(capacity: number, bound = false) {
    if (bound) {
      // Slow: its own memory, not a slice of the shared pool, and the untouched pages of a large one stay unmapped.
      this.buf = Buffer.allocUnsafeSlow(Math.max(64, capacity));
      this.#bounded = true;
    } else if (capacity <= GROW_IN_PLACE_BYTES) this.buf = Buffer.allocUnsafe(Math.max(64, capacity));
    else {
      this.#resizable = reserve(capacity);
      this.buf = Buffer.allocUnsafe(CHUNK_BYTES);
    }
  }
  /** Bytes written so far (the offset of the next byte in the output). */
  get offset(): number {
    return this.#moved + this.pos;
  }
  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    if (this.#resizable === undefined) {
      const want = Math.max(this.buf.length * 2, this.pos + n);
      if (want <= GROW_IN_PLACE_BYTES) {
        const next = Buffer.allocUnsafe(want);
        this.buf.copy(next, 0, 0, this.pos);
        this.buf = next;
        return;
      }
      // Address space only past the small sizes: pages become resident when written.
      this.#resizable = reserve(want);
      if (this.#bounded) {
        // Past its bound: the bytes move once, and later writes go through chunks as for an estimate.
        this.#bounded = false;
        this.#move();
        this.buf = Buffer.allocUnsafe(Math.max(CHUNK_BYTES, n));
        return;
      }
    }
    this.#move();
    if (n > this.buf.length) this.buf = Buffer.allocUnsafe(n);
  }
  /** Moves the chunk's bytes to the end of the resizable buffer, growing it in place (or, past its reservation, into a larger one). */
  #move(): void {
    let r = this.#resizable!;
    const end = this.#moved + this.pos;
    if (end > r.byteLength) {
      // By quarters: pages past the end when the run is trimmed were never written, and V8 clears them
      // as it shrinks the buffer, paging them in (about 4 ms per MiB on a loaded machine).
      const want = Math.max(r.byteLength + (r.byteLength >>> 2), end);
      if (want <= r.maxByteLength) r.resize(want);
      else {
        const next = reserve(want, want);
        new Uint8Array(next, 0, this.#moved).set(new Uint8Array(r, 0, this.#moved));
        this.#resizable = r = next;
      }
    }
    new Uint8Array(r, this.#moved, this.pos).set(this.buf.subarray(0, this.pos));
    this.#moved = end;
    this.pos = 0;
  }
  /** The bytes written, in a buffer of their size (a resizable one shrinks in place, giving its spare pages back). */
  trimmed(): Buffer {
    const r = this.#resizable;
    if (r !== undefined) {
      this.#move();
      const n = this.#moved;
      if (n <= MAX_PLAIN_COPY_BYTES) {
        // Read through a plain buffer from now on (a resizable one's views read each byte about 1.7x slower, and a
        // full checkpoint reads every byte of every run); the resizable one shrinks to nothing at once.
        const plain = Buffer.allocUnsafeSlow(n);
        plain.set(new Uint8Array(r, 0, n));
        r.resize(0);
        return plain;
      }
      r.resize(n);
      return Buffer.from(r, 0, n);
    }
    // Small: copy when more than an eighth is spare. A bound's spare pages were never touched: a view costs them no memory.
    const spare = this.buf.length - this.pos;
    return spare > this.buf.length / 8 && !(this.#bounded && this.buf.length > GROW_IN_PLACE_BYTES)
      ? Buffer.from(this.buf.subarray(0, this.pos))
      : this.buf.subarray(0, this.pos);
  }
  /** Drops the bytes written past `offset` (an earlier `offset`): later writes go there. */
  truncate(offset: number): void {
    if (offset >= this.#moved) this.pos = offset - this.#moved;
    else {
      // The chunk is dropped whole; the resizable buffer's bytes past `offset` are overwritten by the next moves.
      this.#moved = offset;
      this.pos = 0;
    }
  }
  /** Appends `src[at..at+len)`. */
  copy(src: Uint8Array, at: number, len: number): void {
    this.ensure(len);
    const buf = this.buf;
    if (len > 64) {
      // A plain view, not `Buffer.copy` nor a Buffer's subarray: both make a Buffer per call, which cost most of
      // the copy of a value of some hundred bytes (open copies one per entry of its segments).
      buf.set(new Uint8Array(src.buffer, src.byteOffset + at, len), this.pos);
      this.pos += len;
    } else for (let j = at; j < at + len; j++) buf[this.pos++] = src[j]!;
  }
  varint(v: number): void {
    this.ensure(8);
    const buf = this.buf;
    while (v >= 0x80) {
      buf[this.pos++] = (v & 0x7f) | 0x80;
      v = Math.floor(v / 0x80);
    }
    buf[this.pos++] = v;
  }
}

/**
 * A resizable buffer with room to grow far past `size` bytes, starting at
 * `initial` bytes (by default `GROW_IN_PLACE_BYTES` at most): a capacity is
 * an estimate (open's is about twice what its runs take), and bytes past
 * the end that were never written cost a clearing when the trim shrinks
 * the buffer.
 */
function reserve(size: number, initial = Math.min(size, GROW_IN_PLACE_BYTES)): ResizableArrayBuffer {
  // Offsets into a run are 32-bit (`blockStarts`), so no run needs more than 4 GiB.
  return new ResizableArrayBufferCtor(initial, { maxByteLength: Math.max(size, Math.min(size * 8, MAX_RESERVE_BYTES)) });
}

/** Reads a varint at `at` of `buf`; the position after it goes to `cursor.pos`. */
function varintAt(buf: Uint8Array, at: number, cursor: { pos: number }): number {
  let b = buf[at++]!;
  if (b < 0x80) {
    cursor.pos = at;
    return b;
  }
  let result = b & 0x7f;
  let scale = 0x80;
  for (;;) {
    b = buf[at++]!;
    result += (b & 0x7f) * scale;
    if (b < 0x80) break;
    scale *= 0x80;
  }
  cursor.pos = at;
  return result;
}

/** Where the value of an entry ends, given where it starts. */
function valueEnd(buf: Uint8Array, at: number, p: { pos: number }): number {
  const tag = buf[at]!;
  const n = varintAt(buf, at + 1, p);
  return tag === BYTES ? p.pos + n : p.pos;
}

/** An entry's key header, decoded: bytes shared with the previous key, the suffix's length, where the suffix starts. */
const entry = { shared: 0, suffix: 0, start: 0 };

/**
 * Decodes the header of the entry at `at` into `out`, given the length of
 * the previous key of its block (`prevLen`); returns the header byte, whose
 * `SAME_VALUE` bit says whether the entry repeats the previous one's value.
 */
function readHeader(buf: Uint8Array, at: number, prevLen: number, out: typeof entry): number {
  const h = buf[at]!;
  if ((h & SHORT) !== 0) {
    out.suffix = h & SHORT_SUFFIX;
    out.shared = prevLen - out.suffix;
    out.start = at + 1;
    return h;
  }
  let shared = h & LONG_SHARED;
  let p = at + 1;
  if (shared === LONG_SHARED) {
    shared = varintAt(buf, p, scratch);
    p = scratch.pos;
  }
  out.shared = shared;
  out.suffix = varintAt(buf, p, scratch);
  out.start = scratch.pos;
  return h;
}

/** Entries cursors decoded, live or dead (a test checks that draining stays linear). */
export const cursorStats = { decoded: 0 };

/** Scratch for decoding varints without allocating. */
const scratch = { pos: 0 };

/** Hashes a builder told its key count adds to its filter at once (16 KiB of them). */
const FILTER_BATCH = 4096;

/** Bits of Bloom filter per key of a run of at most `SMALL_RUN_KEYS`: about 1% false positives with `SMALL_RUN_PROBES` probes. */
const SMALL_RUN_BITS_PER_KEY = 10;
const SMALL_RUN_PROBES = 7;
/**
 * Past this many keys a run's filter takes `LARGE_RUN_BITS_PER_KEY` bits per
 * key (about 9% false positives with `LARGE_RUN_PROBES` probes). Runs hold
 * their keys in memory, so a false positive costs a search of one block
 * there, never a read of the store; the largest runs hold most keys, so most
 * of the filters' bytes, and a lookup that reaches them mostly finds its key
 * in them. The small runs of recent writes, asked first by every lookup,
 * keep the finer filter for few bytes.
 */
const SMALL_RUN_KEYS = 1 << 18;
const LARGE_RUN_BITS_PER_KEY = 5;
const LARGE_RUN_PROBES = 3;

/** Bits per key of the filter of a run of `keys`. */
function filterBitsPerKey(keys: number): number {
  return keys > SMALL_RUN_KEYS ? LARGE_RUN_BITS_PER_KEY : SMALL_RUN_BITS_PER_KEY;
}

/** The probes per key of a filter of `bitsPerKey`. */
function filterProbes(bitsPerKey: number): number {
  return bitsPerKey === LARGE_RUN_BITS_PER_KEY ? LARGE_RUN_PROBES : SMALL_RUN_PROBES;
}
/**
 * 32-bit words per filter block. A key's probes all fall in one block of
 * 512 bits (one 64 B cache line), so adding or testing a key touches one
 * line instead of seven scattered over the filter, and every index is a
 * small integer (no division of numbers past 2^31 per probe). Costs a little
 * more false positives than probes spread over the whole filter.
 */
const FILTER_BLOCK_WORDS = 16; // `filterBlock` shifts by 4 for it

/**
 * The filter hash's start, random per process. From a fixed start anyone
 * choosing keys (caller KV keys, dedup keys) can cheaply make thousands
 * share one hash (test/support/colliding-keys.ts), and each lookup of an
 * absent one would then pass every run's filter that holds one of them and
 * search the run: not wrong, but up to a binary search per run instead of a
 * filter miss. Collisions found from one start do not carry over to another
 * (key-hash.ts says why the step rotates), which nobody outside the process
 * sees. Filters are built in memory only (at
 * open and when a memtable freezes; segments store no filter bits), so the
 * start is never stored and may differ from one process to the next.
 */
const FILTER_BASIS = crypto.getRandomValues(new Int32Array(1))[0]!;

/** The key hash (key-hash.ts) of `b[from..from+len)`, from `FILTER_BASIS`. */
function hashBytes(b: Uint8Array, from: number, len: number): number {
  let h = FILTER_BASIS;
  for (let i = from; i < from + len; i++) h = hashStep(h, b[i]!);
  return h >>> 0;
}

/** Room for the hash states of a key of `n - 1` bytes; state 0 is the start, `FILTER_BASIS`. */
function initialHashes(n: number): Int32Array {
  const a = new Int32Array(n);
  a[0] = FILTER_BASIS;
  return a;
}

/** The second hash of double hashing, derived from the first (odd, so probes spread). */
function rehash(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return ((h ^ (h >>> 16)) | 1) >>> 0;
}

/** An empty filter sized for `count` keys of `bitsPerKey` bits each. */
function newFilter(count: number, bitsPerKey: number): Uint32Array {
  return new Uint32Array(Math.max(1, Math.ceil((count * bitsPerKey) / (32 * FILTER_BLOCK_WORDS))) * FILTER_BLOCK_WORDS);
}

/** The first word of the block of hash `h`. */
function filterBlock(filter: Uint32Array, h: number): number {
  // Both unsigned 32-bit, so the remainder is an integer one.
  return ((h >>> 0) % (filter.length >>> 4)) << 4;
}

function addToFilter(filter: Uint32Array, h: number, probes: number): void {
  const base = filterBlock(filter, h);
  const h2 = rehash(h);
  // An odd step modulo 512 visits distinct bits.
  const step = (h2 >>> 9) | 1;
  let at = h2 & 511;
  for (let p = 0; p < probes; p++) {
    filter[base + (at >>> 5)]! |= 1 << (at & 31);
    at = (at + step) & 511;
  }
}

/**
 * Key hashes of builders that did not know their key count, kept between
 * builders: each memtable freeze grew one from 1,024 entries by doubling,
 * arrays that lived for the freeze and died old (about 25 MB per 1M fill).
 * A builder takes it at its first growth (a large one, so it seldom grows
 * again) and gives its array back once its filter is built.
 */
const spareHashes = new SpareBuffers<Uint32Array<ArrayBuffer>>(1, (a) => a.length, 4 * 1024 * 1024);

function buildFilter(hashes: Uint32Array, count: number, bitsPerKey: number): Uint32Array {
  const filter = newFilter(count, bitsPerKey);
  const probes = filterProbes(bitsPerKey);
  for (let i = 0; i < count; i++) addToFilter(filter, hashes[i]!, probes);
  return filter;
}

function mayHold(filter: Uint32Array, h: number, probes: number): boolean {
  const base = filterBlock(filter, h);
  const h2 = rehash(h);
  const step = (h2 >>> 9) | 1;
  let at = h2 & 511;
  for (let p = 0; p < probes; p++) {
    if ((filter[base + (at >>> 5)]! & (1 << (at & 31))) === 0) return false;
    at = (at + step) & 511;
  }
  return true;
}

/**
 * The filter hashes of keys that come in ascending order with the bytes
 * each shares with the one before (a key section gives both): each hash
 * carries on from the state after the shared bytes, so only the suffix is
 * hashed. Same hash as `KeyBytes.hash`.
 */
export class KeyHasher {
  /** `#at[i]`: the hash state after the first i bytes of the previous key. */
  #at = initialHashes(257);
  /** The hash of `key[0..len)`, whose first `shared` bytes are the previous key's. */
  next(key: Uint8Array, len: number, shared: number): number {
    if (this.#at.length <= len) {
      const grown = new Int32Array(len * 2 + 1);
      grown.set(this.#at.subarray(0, shared + 1));
      this.#at = grown;
    }
    const at = this.#at;
    let h = at[shared]!;
    for (let j = shared; j < len; j++) {
      h = hashStep(h, key[j]!);
      at[j + 1] = h;
    }
    return h >>> 0;
  }
}

/** A key's UTF-8 bytes in a reusable buffer. */
export class KeyBytes {
  buf = Buffer.allocUnsafe(256);
  len = 0;
  #hash = -1;
  /** The key's hash (for the run filters), computed once per key. */
  hash(): number {
    if (this.#hash < 0) this.#hash = hashBytes(this.buf, 0, this.len);
    return this.#hash;
  }
  /** Takes a key already encoded, `src[from..from+len)`, and its hash when known (`KeyHasher`); returns this. */
  setBytes(src: Uint8Array, from: number, len: number, hash = -1): this {
    this.#hash = hash;
    if (this.buf.length < len) this.buf = Buffer.allocUnsafe(len * 2);
    // A loop, not `set` of a subarray: keys are short, and a subarray is an allocation.
    const buf = this.buf;
    for (let i = 0; i < len; i++) buf[i] = src[from + i]!;
    this.len = len;
    return this;
  }
  /** Encodes `key` into `buf`; returns this. */
  set(key: string): this {
    this.#hash = -1;
    const n = key.length;
    if (this.buf.length < n * 3) this.buf = Buffer.allocUnsafe(n * 3);
    const buf = this.buf;
    for (let i = 0; i < n; i++) {
      const c = key.charCodeAt(i);
      if (c >= 0x80) {
        this.len = buf.write(key, 0, "utf8");
        return this;
      }
      buf[i] = c;
    }
    this.len = n;
    return this;
  }
}

/** The encoding of a key `blockFor` was given as a string only. */
const blockScratch = new KeyBytes();

/** Bytes shared at the start of `a[0..al)` and `b[bs..bs+bl)`, compared from `from`. */
function commonFrom(a: Uint8Array, al: number, b: Uint8Array, bs: number, bl: number, from: number): number {
  const n = Math.min(al, bl);
  let i = from;
  while (i < n && a[i] === b[bs + i]) i++;
  return i;
}

/** An immutable run: see the module documentation. */
export class KeyRun {
  /** Entries. */
  readonly count: number;
  /** The entries' bytes. */
  readonly bytes: Buffer;
  /** Start of each block in `bytes`, and the end of the last at index `blocks`. */
  readonly blockStarts: Uint32Array;
  /** The last key of the run. */
  readonly lastKey: string;
  /** Large held values, by `REF` index. */
  readonly refs: readonly Uint8Array[];
  /** Whether every key is ASCII (keys then decode as Latin-1, the fast path). */
  readonly ascii: boolean;
  /** `bytes` as a plain array, so copies out of it are plain arrays too. */
  readonly #u8: Uint8Array;

  /** A Bloom filter of the keys (`filterBitsPerKey` bits each), so most lookups of an absent key skip the run. */
  readonly #filter: Uint32Array;
  /** The filter's probes per key. */
  readonly #probes: number;
  #first: string | undefined;

  constructor(
    count: number,
    bytes: Buffer,
    blockStarts: Uint32Array,
    lastKey: string,
    refs: Uint8Array[],
    ascii: boolean,
    filter: Uint32Array,
    probes: number,
  ) {
    this.#filter = filter;
    this.#probes = probes;
    this.count = count;
    this.bytes = bytes;
    this.blockStarts = blockStarts;
    this.lastKey = lastKey;
    this.refs = refs;
    this.ascii = ascii;
    this.#u8 = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    noteKeyRun(this);
  }

  /** Blocks. */
  get blocks(): number {
    return this.blockStarts.length - 1;
  }

  /** The first key of block `b`, decoded (tests and the rare lookup of a key with a lone surrogate). */
  firstKey(b: number): string {
    varintAt(this.bytes, this.blockStarts[b]!, scratch);
    const len = varintAt(this.bytes, scratch.pos, scratch);
    return this.bytes.toString("utf8", scratch.pos, scratch.pos + len);
  }

  /** The run's first key, decoded at the first lookup that asks (runs no lookup reaches make none). */
  #firstKey(): string {
    this.#first ??= this.firstKey(0);
    return this.#first;
  }

  /** Compares the first key of block `b` with the UTF-8 key `t[0..tl)`, bytewise (`compareKeys` order). */
  #compareFirst(b: number, t: Uint8Array, tl: number): number {
    const buf = this.bytes;
    // A block's first entry: shared (0), its length, its bytes.
    varintAt(buf, this.blockStarts[b]!, scratch);
    const len = varintAt(buf, scratch.pos, scratch);
    const start = scratch.pos;
    const n = Math.min(len, tl);
    for (let i = 0; i < n; i++) {
      const d = buf[start + i]! - t[i]!;
      if (d !== 0) return d;
    }
    return len - tl;
  }

  /** Entries in block `b`. */
  blockSize(b: number): number {
    return Math.min(BLOCK_ENTRIES, this.count - b * BLOCK_ENTRIES);
  }

  /** Bytes this run holds (buffer, offsets, filter, an estimate for the first keys; large values not counted). */
  get memoryBytes(): number {
    return this.bytes.length + this.blockStarts.byteLength + this.#filter.byteLength;
  }

  /** Bytes of the filter. */
  get filterBytes(): number {
    return this.#filter.byteLength;
  }

  /** Compares keys in `compareKeys` order; against an ASCII run's keys the built-in comparison is that order. */
  compare(a: string, b: string): number {
    if (this.ascii) return a === b ? 0 : a < b ? -1 : 1;
    return compareKeys(a, b);
  }

  /**
   * The last block whose first key is at most `key`, or -1 when `key` sorts
   * before the run. `kb`, when given, holds `key` encoded already.
   */
  blockFor(key: string, kb?: KeyBytes): number {
    let hi = this.blocks - 1;
    if (hi < 0) return -1;
    if (!isWellFormed(key)) {
      // UTF-8 cannot hold a lone surrogate: compare decoded strings (no stored key has one).
      let lo = 0;
      if (compareKeys(this.firstKey(0), key) > 0) return -1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >>> 1;
        if (compareKeys(this.firstKey(mid), key) <= 0) lo = mid;
        else hi = mid - 1;
      }
      return lo;
    }
    const enc = kb ?? blockScratch.set(key);
    return this.blockForBytes(enc.buf, enc.len);
  }

  /** `blockFor` of the key whose UTF-8 is `t[0..tl)`. */
  blockForBytes(t: Uint8Array, tl: number): number {
    let hi = this.blocks - 1;
    if (hi < 0) return -1;
    let lo = 0;
    if (this.#compareFirst(0, t, tl) > 0) return -1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.#compareFirst(mid, t, tl) <= 0) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** False when the run surely does not hold the key in `kb` (its Bloom filter); true when it may. */
  mayHold(kb: KeyBytes): boolean {
    const maybe = this.count > 0 && mayHold(this.#filter, kb.hash(), this.#probes);
    if (countingFilterProbes) noteFilterProbe(kb.buf[0]!, maybe ? FilterOutcome.AskedMaybe : FilterOutcome.AskedRejected);
    return maybe;
  }

  /**
   * The index of the entry holding `key` (encoded in `kb`), or -1; its value
   * starts at `found.valueAt`. Walks at most one block, comparing only the
   * bytes where an entry and the key can differ.
   */
  find(key: string, kb: KeyBytes, found: { valueAt: number }): number {
    return this.outside(key) ? -1 : this.findInside(key, kb, found);
  }

  /**
   * True when the run surely holds no `key` (well-formed) by its bounds
   * alone: it is empty, or ASCII and `key` sorts before its first key or
   * after its last. Two comparisons of strings, cheaper than encoding and
   * hashing the key for the filter: new keys (ULID-ordered ids and index
   * entries) mostly sort past every run. A run of other keys answers false
   * (its strings do not compare in key order).
   */
  outside(key: string): boolean {
    if (this.count === 0) return true;
    if (!this.ascii || (key <= this.lastKey && key >= this.#firstKey())) return false;
    if (countingFilterProbes) noteFilterProbe(Buffer.from(key, "utf8")[0] ?? 0, FilterOutcome.SkippedOutOfRange);
    return true;
  }

  /** `find` of a key `outside` did not turn away. */
  findInside(key: string, kb: KeyBytes, found: { valueAt: number }): number {
    if (!mayHold(this.#filter, kb.hash(), this.#probes)) {
      if (countingFilterProbes) this.#noteRejected(kb);
      return -1;
    }
    // An ASCII run's last key was compared already (`outside`).
    const index = !this.ascii && this.compare(key, this.lastKey) > 0 ? -1 : this.#findIn(this.blockFor(key, kb), kb, found);
    if (countingFilterProbes) noteFilterProbe(kb.buf[0]!, index >= 0 ? FilterOutcome.MaybeHeld : FilterOutcome.MaybeAbsent);
    return index;
  }

  /** `find` of the key in `kb` (its bytes and hash) without its string: a key from a segment's bytes. */
  findBytes(kb: KeyBytes, found: { valueAt: number }): number {
    if (this.count === 0) return -1;
    if (!mayHold(this.#filter, kb.hash(), this.#probes)) {
      if (countingFilterProbes) this.#noteRejected(kb);
      return -1;
    }
    // A key past the last one walks the last block and is not found there.
    const index = this.#findIn(this.blockForBytes(kb.buf, kb.len), kb, found);
    if (countingFilterProbes) noteFilterProbe(kb.buf[0]!, index >= 0 ? FilterOutcome.MaybeHeld : FilterOutcome.MaybeAbsent);
    return index;
  }

  /** Counts a "no" of the filter, telling apart a key the run's bounds would have turned away too (benchmarks only). */
  #noteRejected(kb: KeyBytes): void {
    const outside = this.blockForBytes(kb.buf, kb.len) < 0 || compareKeys(kb.buf.toString("utf8", 0, kb.len), this.lastKey) > 0;
    noteFilterProbe(kb.buf[0]!, outside ? FilterOutcome.RejectedOutOfRange : FilterOutcome.RejectedInRange);
  }

  /** The index of the key in `kb` within block `b` (none when -1), as `find` says. */
  #findIn(b: number, kb: KeyBytes, found: { valueAt: number }): number {
    if (b < 0) return -1;
    const buf = this.bytes;
    const t = kb.buf;
    const tl = kb.len;
    let pos = this.blockStarts[b]!;
    const n = this.blockSize(b);
    // m: bytes the previous entry shares with the key, which it sorts before.
    let m = 0;
    let len = 0;
    let valueAt = 0;
    for (let i = 0; i < n; i++) {
      const h = readHeader(buf, pos, len, entry);
      const shared = entry.shared;
      const suffix = entry.suffix;
      const start = entry.start;
      len = shared + suffix;
      const same = (h & SAME_VALUE) !== 0;
      if (!same) valueAt = start + suffix;
      if (shared === m) {
        // This entry agrees with the key up to m: compare the rest.
        let j = m;
        const end = Math.min(len, tl);
        while (j < end && buf[start + j - shared] === t[j]) j++;
        if (j === len && j === tl) {
          found.valueAt = valueAt;
          return b * BLOCK_ENTRIES + i;
        }
        if (j === tl || (j < len && buf[start + j - shared]! > t[j]!)) return -1;
        m = j;
      } else if (shared < m) {
        // It differs from the previous entry (smaller than the key) where that one agreed with the key: it is larger.
        return -1;
      }
      // shared > m: it sorts like the previous entry, before the key.
      pos = same ? start + suffix : valueEnd(buf, valueAt, scratch);
    }
    return -1;
  }

  /** The value stored at `valueAt`. Held bytes come back as a fresh array the caller owns (large ones as the array stored). */
  value(valueAt: number): StoredValue {
    const buf = this.bytes;
    const tag = buf[valueAt]!;
    const n = varintAt(buf, valueAt + 1, scratch);
    if (tag === PAGED) return n;
    if (tag === TAIL) return -n;
    if (tag === REF) return this.refs[n]!;
    const start = scratch.pos;
    return this.#u8.slice(start, start + n);
  }

  /**
   * Where the value stored at `valueAt` lies, without copying it (a
   * checkpoint copies it straight into a segment): held bytes as
   * `span.bytes[span.at..span.at+span.len)` (the run's own bytes, or a large
   * value's array); a paged value or a key tail as `span.bytes` undefined
   * and `span.len` the run id (`SPAN_PAGED`) or the tail's length in bytes
   * (`SPAN_KEY_TAIL`). Returns the kind.
   */
  valueSpan(valueAt: number, span: ValueSpan): number {
    const buf = this.bytes;
    const tag = buf[valueAt]!;
    const n = varintAt(buf, valueAt + 1, scratch);
    if (tag === BYTES) {
      span.bytes = buf;
      span.at = scratch.pos;
      span.len = n;
      return (span.kind = SPAN_HELD);
    }
    if (tag === REF) {
      const v = this.refs[n]!;
      span.bytes = v;
      span.at = 0;
      span.len = v.byteLength;
      return (span.kind = SPAN_HELD);
    }
    span.bytes = undefined;
    span.at = 0;
    span.len = n;
    return (span.kind = tag === PAGED ? SPAN_PAGED : SPAN_KEY_TAIL);
  }
}

/** `KeyRun.valueSpan`'s kinds: held bytes, a paged value's run id, a value repeating its key's last bytes. */
export const SPAN_HELD = 0;
export const SPAN_PAGED = 1;
export const SPAN_KEY_TAIL = 2;

/** Where a run's value lies, as `KeyRun.valueSpan` answers it (one object, reused value after value). */
export interface ValueSpan {
  kind: number;
  bytes: Uint8Array | undefined;
  at: number;
  len: number;
}

/** What `KeyRunBuilder.rollback` restores. */
export interface BuilderMark {
  readonly offset: number;
  readonly count: number;
  readonly blocks: number;
  readonly refs: number;
  readonly ascii: boolean;
  readonly prev: Buffer;
  /** The value of the entry before the mark, encoded, for the next entry to repeat (empty: none). */
  readonly last: Buffer;
}

/** Builds a run from entries added in strictly ascending key order. */
export class KeyRunBuilder {
  readonly #out: Bytes;
  readonly #starts: number[] = [];
  readonly #refs: Uint8Array[] = [];
  #prev = Buffer.allocUnsafe(256);
  #prevLen = 0;
  /** `#hashAt[i]`: the hash state after the first i bytes of the previous key (`hashBytes` without its final unsigned shift). */
  #hashAt = initialHashes(257);
  /** `#hashAt[0..#hashedTo]` are the previous key's states; past it they are stale (keys whose hash a caller gave). */
  #hashedTo = 0;
  #count = 0;
  #ascii = true;
  /** Each key's hash, for the filter built at the end. */
  #hashes = new Uint32Array(0);
  /** The filter, filled as keys come when the builder was told how many to expect (so `finish` does not hash them all at once). */
  #filter: Uint32Array | undefined;
  /** That filter's bits per key (from the keys expected). */
  #filterBits = 0;
  /**
   * Hashes of keys added since the filter last took them: it takes them
   * `FILTER_BATCH` at a time, in a loop of nothing else, so the processor
   * has many of their scattered reads of the filter in flight at once.
   * Added one by one between the copies of each key, each read waited for
   * memory alone: the most of a 1M store's open (about 200 ms of 2M keys).
   */
  #filterBatch: Uint32Array | undefined;
  #batched = 0;
  readonly #kb = new KeyBytes();
  /** The next entry's value, encoded, when short (`#staged` bytes; 0: none, the caller writes it after the key). */
  #stage = Buffer.allocUnsafe(STAGED_BYTES);
  #staged = 0;
  /** The previous entry's value, encoded (`#lastLen` bytes; 0: none to repeat). */
  #last = Buffer.allocUnsafe(STAGED_BYTES);
  #lastLen = 0;

  /**
   * `capacity`: an estimate of the run's bytes. `expectedKeys`: at most this
   * many keys will come (more stay correct, with more false positives).
   * `boundBytes`, when given: at most this many bytes will come, written
   * into one buffer of that size (`Bytes`); more stay correct, copied once.
   */
  constructor(capacity = 4096, expectedKeys = 0, boundBytes = -1) {
    this.#out = boundBytes >= 0 && boundBytes <= MAX_BOUND_BYTES ? new Bytes(boundBytes, true) : new Bytes(capacity);
    if (expectedKeys > 0) {
      this.#filterBits = filterBitsPerKey(expectedKeys);
      this.#filter = newFilter(expectedKeys, this.#filterBits);
      this.#filterBatch = new Uint32Array(Math.min(FILTER_BATCH, expectedKeys));
    }
  }

  /** Adds the batched hashes to the filter. */
  #flushFilter(): void {
    const filter = this.#filter!;
    const batch = this.#filterBatch!;
    const probes = filterProbes(this.#filterBits);
    for (let i = 0; i < this.#batched; i++) addToFilter(filter, batch[i]!, probes);
    this.#batched = 0;
  }

  /** Entries added. */
  get count(): number {
    return this.#count;
  }

  /** Adds `key` with `value`; throws when keys are not strictly ascending. */
  add(key: string, value: StoredValue): void {
    const kb = this.#kb.set(key);
    const rest = this.#stageValue(value);
    this.#addKey(kb.buf, 0, kb.len, key);
    if (rest !== undefined) this.#addValue(rest);
  }

  /** Adds an entry of `src` (key bytes `key[0..keyLen)`, value at `valueAt` of `src.bytes`), copying its value as it is. */
  addFrom(src: KeyRun, key: Buffer, keyLen: number, valueAt: number): void {
    const buf = src.bytes;
    const tag = buf[valueAt]!;
    const end = valueEnd(buf, valueAt, scratch);
    if (tag !== REF && end - valueAt <= STAGED_BYTES) {
      const stage = this.#stage;
      for (let j = valueAt; j < end; j++) stage[j - valueAt] = buf[j]!;
      this.#staged = end - valueAt;
      this.#addKey(key, 0, keyLen, undefined);
      return;
    }
    this.#staged = 0;
    this.#addKey(key, 0, keyLen, undefined);
    const out = this.#out;
    if (tag === REF) {
      const ref = src.refs[varintAt(buf, valueAt + 1, scratch)]!;
      this.#addRef(ref);
      return;
    }
    out.copy(buf, valueAt, end - valueAt);
  }

  /**
   * Adds `key` (its UTF-8 at `key[from..from+len)`, no string made) with a
   * value paged to run `run`. `shared`, when given, is the number of bytes
   * the key shares with the previous one, from a caller that checked the
   * order (a key section): the comparison is then skipped. `hash`, when
   * not -1, is the key's filter hash (`KeyHasher` carried it already).
   */
  addPagedBytes(key: Buffer, from: number, len: number, run: number, shared = -1, hash = -1): void {
    this.#stageValue(run);
    this.#addKey(key, from, len, undefined, shared, hash);
  }

  /**
   * Adds `key` (its UTF-8 at `key[from..from+len)`) with the held value at
   * `value[valueAt..valueAt+valueLen)`, stored as `add` stores it: packed
   * (`packed`, as `add(key, packValue(...))`: a key tail when it repeats
   * one) or as bytes. Makes no key string, view or packed string, and never
   * keeps a view into `value`: a large value gets a copy of its own.
   * `shared` and `hash` as for `addPagedBytes`.
   */
  addHeldBytes(key: Buffer, from: number, len: number, value: Buffer, valueAt: number, valueLen: number, packed: boolean, shared = -1, hash = -1): void {
    if (valueLen <= MAX_INLINE_BYTES && packed && repeatsKeyTail(key, from, len, value, valueAt, valueLen)) {
      this.#stageTagged(TAIL, valueLen);
      this.#addKey(key, from, len, undefined, shared, hash);
      return;
    }
    if (valueLen + 2 <= STAGED_BYTES) {
      const stage = this.#stage;
      stage[0] = BYTES;
      stage[1] = valueLen;
      for (let j = 0; j < valueLen; j++) stage[2 + j] = value[valueAt + j]!;
      this.#staged = valueLen + 2;
      this.#addKey(key, from, len, undefined, shared, hash);
      return;
    }
    this.#staged = 0;
    this.#addKey(key, from, len, undefined, shared, hash);
    const out = this.#out;
    if (valueLen > MAX_INLINE_BYTES) {
      // A copy of its own, so the run never holds the segment's bytes.
      const own = new Uint8Array(valueLen);
      own.set(value.subarray(valueAt, valueAt + valueLen));
      this.#addRef(own);
      return;
    }
    out.ensure(1);
    out.buf[out.pos++] = BYTES;
    out.varint(valueLen);
    out.copy(value, valueAt, valueLen);
  }

  /**
   * `addHeldBytes` of a value that repeats the last `tailLen` bytes of its
   * key (1 to `len` of them, all ASCII), as a key section's key tail is read
   * (the section checks both): stored as a key tail without comparing the
   * bytes again.
   */
  addKeyTailBytes(key: Buffer, from: number, len: number, tailLen: number, shared = -1, hash = -1): void {
    if (tailLen > MAX_INLINE_BYTES) {
      this.addHeldBytes(key, from, len, key, from + len - tailLen, tailLen, true, shared, hash);
      return;
    }
    this.#stageTagged(TAIL, tailLen);
    this.#addKey(key, from, len, undefined, shared, hash);
  }

  /** Stages a `PAGED` or `TAIL` value (`#addKey` writes it, or marks it the same as the previous entry's). */
  #stageTagged(tag: number, n: number): void {
    const stage = this.#stage;
    stage[0] = tag;
    let at = 1;
    while (n >= 0x80) {
      stage[at++] = (n & 0x7f) | 0x80;
      n = Math.floor(n / 0x80);
    }
    stage[at++] = n;
    this.#staged = at;
  }

  /**
   * Stages `stored` when its encoding is short (`STAGED_BYTES`); otherwise
   * stages nothing and returns the value for `#addValue` to write after the key.
   */
  #stageValue(stored: StoredValue): string | Uint8Array | undefined {
    // Values waiting to be paged stay in the memtable (`holdUntilPaged`); should one come here, its bytes are written.
    const v = stored instanceof ArenaValue ? stored.bytes() : stored;
    if (typeof v === "number") {
      if (v >= 0) {
        if (!Number.isInteger(v) || v > 0xffffffff) throw new Error(`key run: paged run id ${v} does not fit 32 bits`);
        this.#stageTagged(PAGED, v);
      } else {
        if (!Number.isInteger(v) || v < -0xffffffff) throw new Error(`key run: key tail length ${-v} is not a whole number of 32 bits`);
        this.#stageTagged(TAIL, -v);
      }
      return undefined;
    }
    if (v.length + 2 > STAGED_BYTES) {
      this.#staged = 0;
      return v;
    }
    const stage = this.#stage;
    stage[0] = BYTES;
    stage[1] = v.length;
    if (typeof v === "string") stage.write(v, 2, "latin1");
    // A view of a detached or shrunk buffer reads as empty.
    else if (v.byteLength > 0) stage.set(v, 2);
    this.#staged = 2 + v.length;
    return undefined;
  }

  /**
   * Appends a key. `knownShared`, when not -1, is the number of bytes it
   * shares with the previous key, from a caller that checked the order
   * already (a key section gives both): the comparison is skipped.
   */
  #addKey(key: Uint8Array, from: number, len: number, keyString: string | undefined, knownShared = -1, knownHash = -1): void {
    const out = this.#out;
    const newBlock = this.#count % BLOCK_ENTRIES === 0;
    let shared = 0;
    if (this.#count > 0) {
      if (knownShared >= 0) shared = knownShared;
      else {
        const prev = this.#prev;
        const prevLen = this.#prevLen;
        shared = commonFrom(prev, prevLen, key, from, len, 0);
        // Strictly ascending: the first differing byte is larger, or the previous key is a proper prefix.
        if (shared === len || (shared < prevLen && key[from + shared]! < prev[shared]!)) {
          throw new Error(
            `key run: keys not strictly ascending at ${JSON.stringify(keyString ?? Buffer.from(key.subarray(from, from + len)).toString("utf8"))}`,
          );
        }
      }
    }
    // Bytes the key shares with the previous one, whatever the block: `#prev` and `#hashAt` hold them already.
    const lcp = shared;
    if (newBlock) {
      this.#starts.push(out.offset);
      shared = 0;
    }
    // The staged value, when it repeats the previous entry's of the block, is not written again.
    const staged = this.#staged;
    let same = !newBlock && staged > 0 && staged === this.#lastLen;
    if (same) {
      const stage = this.#stage;
      const last = this.#last;
      for (let j = 0; j < staged; j++)
        if (stage[j] !== last[j]) {
          same = false;
          break;
        }
    }
    const sameBit = same ? SAME_VALUE : 0;
    // The suffix copied and checked for ASCII in one loop, after a header of one byte when the key is as long as the one before.
    const suffixLen = len - shared;
    if (!newBlock && len === this.#prevLen && suffixLen <= SHORT_SUFFIX) {
      out.ensure(1 + suffixLen + staged);
      out.buf[out.pos++] = SHORT | sameBit | suffixLen;
    } else {
      out.ensure(1);
      out.buf[out.pos++] = sameBit | Math.min(shared, LONG_SHARED);
      if (shared >= LONG_SHARED) out.varint(shared);
      out.varint(suffixLen);
      out.ensure(suffixLen + staged);
    }
    let ob = out.buf;
    let high = 0;
    for (let j = from + shared; j < from + len; j++) {
      const c = key[j]!;
      high |= c;
      ob[out.pos++] = c;
    }
    if (high >= 0x80) this.#ascii = false;
    if (staged > 0) {
      if (!same) {
        ob = out.buf;
        const stage = this.#stage;
        for (let j = 0; j < staged; j++) ob[out.pos++] = stage[j]!;
      }
      // The stage becomes the last value; the old last is the next stage.
      const last = this.#last;
      this.#last = this.#stage;
      this.#stage = last;
      this.#staged = 0;
    }
    this.#lastLen = staged;
    if (this.#prev.length < len) {
      const grown = Buffer.allocUnsafe(len * 2);
      this.#prev.copy(grown, 0, 0, lcp);
      this.#prev = grown;
      const hashes = new Int32Array(len * 2 + 1);
      hashes.set(this.#hashAt.subarray(0, Math.min(lcp, this.#hashedTo) + 1));
      this.#hashAt = hashes;
    }
    const prev = this.#prev;
    let hash: number;
    if (knownHash >= 0) {
      for (let j = lcp; j < len; j++) prev[j] = key[from + j]!;
      hash = knownHash;
      if (this.#hashedTo > lcp) this.#hashedTo = lcp;
    } else {
      // The key's hash, carried on from the state after the bytes it shares with the previous key (and has states for).
      const hashAt = this.#hashAt;
      const start = Math.min(lcp, this.#hashedTo);
      for (let j = lcp; j < len; j++) prev[j] = key[from + j]!;
      let h = hashAt[start]!;
      for (let j = start; j < len; j++) {
        h = hashStep(h, prev[j]!);
        hashAt[j + 1] = h;
      }
      this.#hashedTo = len;
      hash = h >>> 0;
    }
    this.#prevLen = len;
    const batch = this.#filterBatch;
    if (batch !== undefined) {
      if (this.#batched === batch.length) this.#flushFilter();
      batch[this.#batched++] = hash;
      this.#count++;
      return;
    }
    if (this.#hashes.length === this.#count) {
      const want = Math.max(1024, this.#count * 2);
      const grown = spareHashes.take(want) ?? new Uint32Array(want);
      grown.set(this.#hashes.subarray(0, this.#count));
      // The outgrown array is not kept: a small spare would take the one place a finished builder's large one needs.
      this.#hashes = grown;
    }
    this.#hashes[this.#count] = hash;
    this.#count++;
  }

  /** Where the builder stands, for `rollback`: entries added after it can be taken back. */
  mark(): BuilderMark {
    return {
      offset: this.#out.offset,
      count: this.#count,
      blocks: this.#starts.length,
      refs: this.#refs.length,
      ascii: this.#ascii,
      prev: Buffer.from(this.#prev.subarray(0, this.#prevLen)),
      last: Buffer.from(this.#last.subarray(0, this.#lastLen)),
    };
  }

  /**
   * Takes back every entry added since `mark` was taken (open: a key section
   * found unusable part way through its walk). Their keys stay in the
   * filter, which then answers "maybe" for them: more false positives, never
   * a wrong answer.
   */
  rollback(mark: BuilderMark): void {
    this.#out.truncate(mark.offset);
    this.#count = mark.count;
    this.#starts.length = mark.blocks;
    this.#refs.length = mark.refs;
    this.#ascii = mark.ascii;
    if (this.#prev.length < mark.prev.length) {
      this.#prev = Buffer.allocUnsafe(mark.prev.length * 2);
      this.#hashAt = initialHashes(mark.prev.length * 2 + 1);
    }
    mark.prev.copy(this.#prev);
    this.#prevLen = mark.prev.length;
    this.#hashedTo = 0;
    // The next entry compares its value with the one before the mark, as it would have without the entries taken back
    // (else the run differs by a value written again from the one an open that never took back builds).
    mark.last.copy(this.#last);
    this.#lastLen = mark.last.length;
  }

  /** Writes a value `#stageValue` did not stage, after its key. */
  #addValue(v: string | Uint8Array): void {
    const out = this.#out;
    if (typeof v === "string") {
      out.ensure(1);
      out.buf[out.pos++] = BYTES;
      out.varint(v.length);
      out.ensure(v.length);
      out.pos += out.buf.write(v, out.pos, "latin1");
      return;
    }
    if (v.byteLength > MAX_INLINE_BYTES) {
      this.#addRef(v);
      return;
    }
    out.ensure(1);
    out.buf[out.pos++] = BYTES;
    out.varint(v.byteLength);
    // A view of a detached or shrunk buffer reads as empty, and copying from it throws.
    if (v.byteLength === 0) return;
    out.ensure(v.byteLength);
    out.buf.set(v, out.pos);
    out.pos += v.byteLength;
  }

  #addRef(v: Uint8Array): void {
    const out = this.#out;
    out.ensure(1);
    out.buf[out.pos++] = REF;
    out.varint(this.#refs.length);
    this.#refs.push(v);
  }

  /** The run; the builder must not be used afterwards. */
  finish(): KeyRun {
    const out = this.#out;
    const bytes = out.trimmed();
    const starts = new Uint32Array(this.#starts.length + 1);
    starts.set(this.#starts);
    starts[this.#starts.length] = out.offset;
    const lastKey = this.#prev.toString("utf8", 0, this.#prevLen);
    if (this.#batched > 0) this.#flushFilter();
    const bits = this.#filter === undefined ? filterBitsPerKey(this.#count) : this.#filterBits;
    const filter = this.#filter ?? buildFilter(this.#hashes, this.#count, bits);
    // The filter is built: nothing reads these hashes again, so the next builder may write over them.
    if (this.#hashes.length > 0) spareHashes.give(this.#hashes);
    this.#hashes = new Uint32Array(0);
    return new KeyRun(this.#count, bytes, starts, lastKey, this.#refs, this.#ascii, filter, filterProbes(bits));
  }
}

/**
 * Whether the value `v[at..at+n)` (at least one byte) equals the last n
 * bytes of the key `key[from..from+len)`, all of them ASCII: what
 * `packValue` stores as a key tail, decided on the bytes.
 */
function repeatsKeyTail(key: Uint8Array, from: number, len: number, v: Uint8Array, at: number, n: number): boolean {
  if (n === 0 || n > len) return false;
  const k = from + len - n;
  for (let i = 0; i < n; i++) {
    const c = key[k + i]!;
    if (c >= 0x80 || c !== v[at + i]) return false;
  }
  return true;
}

// Stored keys never have a lone surrogate; a bound or a looked-up key may.
export { isWellFormed };

/** Compares `a[0..al)` with `b[0..bl)` bytewise (the order of `compareKeys` for the UTF-8 of stored keys). */
export function compareBytes(a: Uint8Array, al: number, b: Uint8Array, bl: number): number {
  const n = Math.min(al, bl);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return al - bl;
}

/**
 * Walks the live entries of a run in ascending order. `advance()` decodes
 * the next live entry's key into `keyBuf` without making a string;
 * `keyString()` makes one.
 */
export class RunCursor {
  readonly run: KeyRun;
  readonly #live: RunLiveness;
  keyBuf = Buffer.allocUnsafe(256);
  keyLen = 0;
  /** Where the current entry's value starts in `run.bytes`. */
  valueAt = 0;
  /** The current entry's index in the run. */
  index = -1;
  /**
   * Bytes the current key shares with the one the cursor stood on before
   * `advance()` moved it, at least (a block's first entry is said to share
   * none); so, keys being in order, with any key between the two as well:
   * a merge compares the current key with what it wrote before from there.
   */
  shared = 0;
  #block = 0;
  #i = 0;
  #pos = 0;

  constructor(run: KeyRun, live: RunLiveness) {
    this.run = run;
    this.#live = live;
    this.#enter(live.nextLive(0));
  }

  /** Positions before the first live entry at or after `lo`; the next `advance()` lands on it. Returns whether one exists (and decodes it). */
  seek(lo: string, loBytes: KeyBytes): boolean {
    const wellFormed = isWellFormed(lo);
    if (wellFormed) loBytes.set(lo);
    const b = lo === "" ? 0 : Math.max(0, this.run.blockFor(lo, wellFormed ? loBytes : undefined));
    this.#enter(this.#live.nextLive(b));
    if (lo === "") return this.advance();
    if (!wellFormed) {
      // UTF-8 cannot encode a lone surrogate: compare as strings.
      while (this.advance()) if (compareKeys(this.keyString(), lo) >= 0) return true;
      return false;
    }
    while (this.advance()) if (compareBytes(this.keyBuf, this.keyLen, loBytes.buf, loBytes.len) >= 0) return true;
    return false;
  }

  /** Positions at the start of block `b`, live or not. */
  enterBlock(b: number): void {
    this.#enter(b);
  }

  #enter(b: number): void {
    this.#block = b;
    this.#i = 0;
    if (b < this.run.blocks) this.#pos = this.run.blockStarts[b]!;
  }

  /** Moves to the next live entry; false at the end. */
  advance(): boolean {
    const run = this.run;
    const buf = run.bytes;
    // Keys in order share with the first of them no more than each shares with the one before (dead ones included).
    let shared = this.keyLen;
    for (;;) {
      if (this.#block >= run.blocks) return false;
      if (this.#i >= run.blockSize(this.#block)) {
        this.#enter(this.#live.nextLive(this.#block + 1));
        continue;
      }
      cursorStats.decoded++;
      const h = readHeader(buf, this.#pos, this.keyLen, entry);
      const prefix = entry.shared;
      const suffix = entry.suffix;
      const start = entry.start;
      const len = prefix + suffix;
      if (prefix < shared) shared = prefix;
      if (this.keyBuf.length < len) {
        const grown = Buffer.allocUnsafe(len * 2);
        this.keyBuf.copy(grown, 0, 0, prefix);
        this.keyBuf = grown;
      }
      const kb = this.keyBuf;
      for (let j = 0; j < suffix; j++) kb[prefix + j] = buf[start + j]!;
      this.keyLen = len;
      if ((h & SAME_VALUE) !== 0) this.#pos = start + suffix;
      else {
        this.valueAt = start + suffix;
        this.#pos = valueEnd(buf, this.valueAt, scratch);
      }
      const index = this.#block * BLOCK_ENTRIES + this.#i++;
      if (this.#live.isDead(index)) continue;
      this.index = index;
      this.shared = shared;
      return true;
    }
  }

  /** The current key as a string. */
  keyString(): string {
    return this.keyBuf.toString(this.run.ascii ? "latin1" : "utf8", 0, this.keyLen);
  }
}

/** Walks the live entries of a run in descending order, a block at a time. */
export class RunReverseCursor {
  readonly #run: KeyRun;
  readonly #live: RunLiveness;
  #keys: string[] = [];
  #values: number[] = [];
  #at = -1;
  #block = -1;
  readonly #c: RunCursor;

  constructor(run: KeyRun, live: RunLiveness) {
    this.#run = run;
    this.#live = live;
    this.#c = new RunCursor(run, live);
  }

  /** The current key, or undefined past the start. */
  get key(): string | undefined {
    return this.#at >= 0 ? this.#keys[this.#at] : undefined;
  }

  /** The current value. */
  value(): StoredValue {
    return this.#run.value(this.#values[this.#at]!);
  }

  /** Positions on the last live entry at or before `hi` (the last of all when undefined). */
  seek(hi: string | undefined): void {
    const run = this.#run;
    const b = hi === undefined ? run.blocks - 1 : run.blockFor(hi);
    this.#load(b < 0 ? -1 : this.#live.prevLive(b), hi);
    if (this.#at < 0 && this.#block >= 0) this.#load(this.#live.prevLive(this.#block - 1), undefined);
  }

  /** Moves to the previous live entry. */
  next(): void {
    if (--this.#at >= 0) return;
    if (this.#block >= 0) this.#load(this.#live.prevLive(this.#block - 1), undefined);
  }

  /** Decodes the live entries of block `b` at or before `hi`. */
  #load(b: number, hi: string | undefined): void {
    this.#block = b;
    this.#keys = [];
    this.#values = [];
    this.#at = -1;
    if (b < 0) return;
    const c = this.#c;
    const end = b * BLOCK_ENTRIES + this.#run.blockSize(b);
    // The cursor walks live entries only; stop at the block's end.
    c.enterBlock(b);
    while (c.advance() && c.index < end) {
      const key = c.keyString();
      if (hi !== undefined && this.#run.compare(key, hi) > 0) break;
      this.#keys.push(key);
      this.#values.push(c.valueAt);
    }
    this.#at = this.#keys.length - 1;
  }
}
