/**
 * @module Growable byte writer and bounds-checked byte reader with unsigned
 * LEB128 varints: the primitives of the WAL and segment formats.
 *
 * Numbers above 2^32 (epochs, sequence numbers, offsets) are written as
 * varints or as fixed-width u64 header fields; both stay exact up to
 * `Number.MAX_SAFE_INTEGER`, the largest integer a JS number holds exactly.
 */

/** Bytes `ByteWriter.varint(v)` writes for a non-negative safe integer `v`. */
export function varintBytes(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 0x80);
    n++;
  }
  return n;
}

/** Writes `v` (a non-negative safe integer) as a varint at `at` of `buf`, which has room for 8 bytes there; returns the position after it. */
export function putVarint(buf: Uint8Array, at: number, v: number): number {
  while (v >= 0x80) {
    buf[at++] = (v % 0x80) | 0x80;
    v = Math.floor(v / 0x80);
  }
  buf[at++] = v;
  return at;
}

/**
 * Writes `s` length-prefixed at `at` of `buf` (room for `s.length + 1`
 * bytes there) when it is ASCII and shorter than 128 units (every key the
 * queue and workflows write), unit by unit: cheaper than Buffer's two native
 * calls (length, then write) for a few dozen bytes. Returns the position
 * after it, or -1 for any other string (then the bytes at `at` are garbage).
 */
export function putShortAscii(buf: Uint8Array, at: number, s: string): number {
  const len = s.length;
  if (len >= 0x80) return -1;
  let j = at + 1;
  for (let i = 0; i < len; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return -1;
    buf[j++] = c;
  }
  buf[at] = len;
  return j;
}

/** Thrown by `ByteReader` when the bytes end early or a field is malformed. */
export class DecodeError extends Error {}

/** `bytes` as a `Buffer` sharing its memory (no copy), for Buffer's fixed-width readers. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Writes a non-negative safe integer as two little-endian u32 halves at `at`. */
export function writeU64(buf: Buffer, at: number, v: number): void {
  buf.writeUInt32LE(v % 0x1_0000_0000, at);
  buf.writeUInt32LE(Math.floor(v / 0x1_0000_0000), at + 4);
}

/** Reads what `writeU64` wrote; exact up to `Number.MAX_SAFE_INTEGER`. */
export function readU64(buf: Buffer, at: number): number {
  return buf.readUInt32LE(at) + buf.readUInt32LE(at + 4) * 0x1_0000_0000;
}

/** ArrayBuffer's resizable form (ES2024; Node 20 has it, the configured lib does not declare it). */
interface ResizableArrayBuffer extends ArrayBuffer {
  resize(byteLength: number): void;
  readonly maxByteLength: number;
}
const ResizableArrayBufferCtor = ArrayBuffer as unknown as new (byteLength: number, opts: { maxByteLength: number }) => ResizableArrayBuffer;

/**
 * Past this initial capacity a writer reserves address space instead of
 * allocating: a segment builder is asked for room for a whole segment and
 * its index, which at the largest settings (1 GiB segments and blocks) is
 * about 3 GiB, while most segments are far smaller.
 */
const RESERVE_PAST_BYTES = 16 * 1024 * 1024;
/** What a reserving writer makes resident before the first write past it. */
const RESERVE_START_BYTES = 1024 * 1024;

/**
 * Appends to a buffer that grows by doubling; `pos` is the write position.
 * Asked for an initial capacity past `RESERVE_PAST_BYTES`, it reserves that
 * much address space (a resizable `ArrayBuffer`) and grows in place as bytes
 * are written, so only what is written becomes resident and no growth copies.
 */
export class ByteWriter {
  #buf: Buffer;
  #reserved: ResizableArrayBuffer | undefined;
  pos = 0;

  constructor(initialCapacity = 1024) {
    if (initialCapacity > RESERVE_PAST_BYTES) {
      this.#reserved = new ResizableArrayBufferCtor(RESERVE_START_BYTES, { maxByteLength: initialCapacity });
      this.#buf = Buffer.from(this.#reserved, 0, RESERVE_START_BYTES);
    } else this.#buf = Buffer.allocUnsafe(Math.max(16, initialCapacity));
  }

  /** Bytes it holds room for without growing. */
  get capacity(): number {
    return this.#buf.length;
  }

  /** Starts over at position 0, keeping the buffer (whatever was handed out of it before must be done with). */
  reset(): void {
    this.pos = 0;
  }

  /** The bytes written so far, as a view (not a copy). */
  bytes(): Buffer {
    return this.#buf.subarray(0, this.pos);
  }

  /** Makes room for `n` more bytes. */
  ensure(n: number): void {
    const need = this.pos + n;
    if (need <= this.#buf.length) return;
    let cap = this.#buf.length * 2;
    while (cap < need) cap *= 2;
    const r = this.#reserved;
    if (r !== undefined && need <= r.maxByteLength) {
      r.resize(Math.min(cap, r.maxByteLength));
      this.#buf = Buffer.from(r, 0, r.byteLength);
      return;
    }
    this.#reserved = undefined;
    const next = Buffer.allocUnsafe(cap);
    this.#buf.copy(next, 0, 0, this.pos);
    this.#buf = next;
  }

  u8(v: number): void {
    this.ensure(1);
    this.#buf[this.pos++] = v;
  }

  u32(v: number): void {
    this.ensure(4);
    this.#buf.writeUInt32LE(v >>> 0, this.pos);
    this.pos += 4;
  }

  /** Writes a non-negative safe integer as a varint. */
  varint(v: number): void {
    this.ensure(8);
    this.pos = putVarint(this.#buf, this.pos, v);
  }

  /**
   * Writes a length-prefixed UTF-8 string; returns its byte length. A short
   * ASCII string (every key the queue and workflows write) is copied unit by
   * unit: cheaper than Buffer's two native calls (length, then write) for
   * the few dozen bytes of a key; any other unit falls back to them.
   */
  str(s: string): number {
    const len = s.length;
    if (len < 0x80) {
      this.ensure(len + 1);
      const end = putShortAscii(this.#buf, this.pos, s);
      if (end >= 0) {
        this.pos = end;
        return len;
      }
    }
    const n = Buffer.byteLength(s, "utf8");
    this.varint(n);
    this.ensure(n);
    this.#buf.write(s, this.pos, n, "utf8");
    this.pos += n;
    return n;
  }

  /**
   * The bytes written so far, to hand out as a finished object: `bytes()`
   * unless this writer reserved address space, then a copy of fixed length
   * (fetch and other web APIs refuse a view of a resizable buffer as a
   * body, and a store may pass the object straight to one).
   */
  finished(): Buffer {
    const view = this.bytes();
    if (this.#reserved === undefined) return view;
    const out = Buffer.allocUnsafeSlow(view.length);
    view.copy(out);
    return out;
  }

  /** The buffer written into (valid until the next write that grows it; bytes past `pos` are garbage). */
  get buffer(): Buffer {
    return this.#buf;
  }

  /** Writes length-prefixed bytes. */
  blob(b: Uint8Array): void {
    this.varint(b.byteLength);
    this.raw(b);
  }

  /** Writes bytes as they are, without a length. */
  raw(b: Uint8Array): void {
    const n = b.byteLength;
    // Nothing to copy, and copying from a view of a detached or shrunk buffer (which reads as empty) throws.
    if (n === 0) return;
    this.ensure(n);
    this.#buf.set(b, this.pos);
    this.pos += n;
  }
}

/** Reads from `start` up to `end` of a buffer, throwing `DecodeError` past the end. */
export class ByteReader {
  readonly buf: Buffer;
  pos: number;
  readonly end: number;

  constructor(bytes: Uint8Array, start = 0, end = bytes.byteLength) {
    this.buf = asBuffer(bytes);
    this.pos = start;
    this.end = end;
  }

  get remaining(): number {
    return this.end - this.pos;
  }

  #need(n: number): void {
    if (this.pos + n > this.end) throw new DecodeError(`truncated: needed ${n} bytes at offset ${this.pos}, ${this.end - this.pos} left`);
  }

  u8(): number {
    this.#need(1);
    return this.buf[this.pos++]!;
  }

  u32(): number {
    this.#need(4);
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }

  varint(): number {
    // One byte, the usual case (key sections read three per entry).
    const at = this.pos;
    if (at < this.end) {
      const b = this.buf[at]!;
      if (b < 0x80) {
        this.pos = at + 1;
        return b;
      }
    }
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      this.#need(1);
      const b = this.buf[this.pos++]!;
      result += (b & 0x7f) * scale;
      if (b < 0x80) return result;
      scale *= 0x80;
    }
    throw new DecodeError(`varint longer than 8 bytes at offset ${this.pos}`);
  }

  str(): string {
    const n = this.varint();
    this.#need(n);
    const s = this.buf.toString("utf8", this.pos, this.pos + n);
    this.pos += n;
    return s;
  }

  /**
   * Length-prefixed bytes as a view into the source buffer, not a copy: one
   * object per value instead of an allocation and a copy. The views keep the
   * source object's buffer alive while any of its values is alive; callers
   * only pass buffers they own (objects just read from the store).
   */
  blob(): Uint8Array {
    return this.view(this.varint());
  }

  /** Moves past the next `n` bytes. */
  skip(n: number): void {
    this.#need(n);
    this.pos += n;
  }

  /** The next `n` bytes as a view (see `blob`). */
  view(n: number): Uint8Array {
    this.#need(n);
    const out = new Uint8Array(this.buf.buffer, this.buf.byteOffset + this.pos, n);
    this.pos += n;
    return out;
  }
}
