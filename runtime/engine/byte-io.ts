/**
 * @module Growable byte writer and bounds-checked byte reader with unsigned
 * LEB128 varints: the primitives of the WAL and segment formats.
 *
 * Integers above 2^32 (epochs, sequence numbers) are written as varints,
 * which stay exact up to `Number.MAX_SAFE_INTEGER`.
 */

/** Thrown by `ByteReader` when the bytes end early or a field is malformed. */
export class DecodeError extends Error {}

export class ByteWriter {
  #buf: Buffer;
  pos = 0;

  constructor(initialCapacity = 1024) {
    this.#buf = Buffer.allocUnsafe(Math.max(16, initialCapacity));
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
    const next = Buffer.allocUnsafe(cap);
    this.#buf.copy(next, 0, 0, this.pos);
    this.#buf = next;
  }

  u8(v: number): void {
    this.ensure(1);
    this.#buf[this.pos++] = v;
  }

  u16(v: number): void {
    this.ensure(2);
    this.#buf.writeUInt16LE(v, this.pos);
    this.pos += 2;
  }

  u32(v: number): void {
    this.ensure(4);
    this.#buf.writeUInt32LE(v >>> 0, this.pos);
    this.pos += 4;
  }

  /** Writes a non-negative safe integer as a varint. */
  varint(v: number): void {
    this.ensure(8);
    const buf = this.#buf;
    while (v >= 0x80) {
      buf[this.pos++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    buf[this.pos++] = v;
  }

  /** Writes a length-prefixed UTF-8 string. */
  str(s: string): void {
    const n = Buffer.byteLength(s, "utf8");
    this.varint(n);
    this.ensure(n);
    this.#buf.write(s, this.pos, n, "utf8");
    this.pos += n;
  }

  /** Writes length-prefixed bytes. */
  blob(b: Uint8Array): void {
    this.varint(b.byteLength);
    this.raw(b);
  }

  raw(b: Uint8Array): void {
    this.ensure(b.byteLength);
    this.#buf.set(b, this.pos);
    this.pos += b.byteLength;
  }

  /** Overwrites a u32 at an earlier position (for headers filled in last). */
  patchU32(at: number, v: number): void {
    this.#buf.writeUInt32LE(v >>> 0, at);
  }
}

export class ByteReader {
  readonly buf: Buffer;
  pos: number;
  readonly end: number;

  constructor(bytes: Uint8Array, start = 0, end = bytes.byteLength) {
    this.buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
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

  u16(): number {
    this.#need(2);
    const v = this.buf.readUInt16LE(this.pos);
    this.pos += 2;
    return v;
  }

  u32(): number {
    this.#need(4);
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }

  varint(): number {
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

  /** The next `n` bytes as a view (see `blob`). */
  view(n: number): Uint8Array {
    this.#need(n);
    const out = new Uint8Array(this.buf.buffer, this.buf.byteOffset + this.pos, n);
    this.pos += n;
    return out;
  }

  raw(n: number): Buffer {
    this.#need(n);
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
}
