/**
 * @module A MessagePack decode that defines every field of a map and every
 * element of an array, for bytes `assertPlainMessagePack` let through.
 *
 * msgpackr builds an array as `new Array(n)` and assigns each element: a
 * setter that `Array.prototype` or `Object.prototype` holds under an index
 * ("0", "1", ...) takes the element and leaves a hole, and a read-only one
 * there throws. Decoding maps as `Map`s (what the record decoders fall back
 * to for a setter named as a field) builds its arrays the same way, so a
 * decode under such a prototype needs a decoder that assigns nothing. It
 * gives what msgpackr's plain decode gives for the same bytes: strings,
 * numbers, booleans, null, 64-bit integers as bigints, binary as a fresh
 * `Uint8Array`, extension 0 as undefined and -1 as a `Date`. Slow and
 * simple: only a decode that found its objects missing a field comes here.
 */
import { defineOwn } from "../own-fields.js";

/** Thrown for bytes that end inside a value or hold what plain MessagePack cannot; decoders report it as corruption. */
export class OwnedDecodeError extends Error {}

const text = new TextDecoder();

/** The value `bytes` hold, each map an object owning its fields and each array owning its elements, whatever the prototypes hold. */
export function decodeOwning(bytes: Uint8Array): unknown {
  const reader = new Reader(bytes);
  return reader.value();
}

class Reader {
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  #pos = 0;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** Moves past `n` bytes, returning where they start; throws when the bytes end first. */
  #take(n: number): number {
    const at = this.#pos;
    if (at + n > this.#bytes.length) throw new OwnedDecodeError(`the MessagePack bytes end inside a value (at byte ${at}, ${n} more needed)`);
    this.#pos = at + n;
    return at;
  }

  value(): unknown {
    const b = this.#bytes[this.#take(1)]!;
    if (b <= 0x7f) return b;
    if (b >= 0xe0) return b - 0x100;
    if (b <= 0x8f) return this.#map(b & 0x0f);
    if (b <= 0x9f) return this.#array(b & 0x0f);
    if (b <= 0xbf) return this.#string(b & 0x1f);
    const v = this.#view;
    switch (b) {
      case 0xc0:
        return null;
      case 0xc2:
        return false;
      case 0xc3:
        return true;
      case 0xc4:
        return this.#binary(v.getUint8(this.#take(1)));
      case 0xc5:
        return this.#binary(v.getUint16(this.#take(2)));
      case 0xc6:
        return this.#binary(v.getUint32(this.#take(4)));
      case 0xc7:
        return this.#extension(v.getUint8(this.#take(1)));
      case 0xc8:
        return this.#extension(v.getUint16(this.#take(2)));
      case 0xc9:
        return this.#extension(v.getUint32(this.#take(4)));
      case 0xca:
        return v.getFloat32(this.#take(4));
      case 0xcb:
        return v.getFloat64(this.#take(8));
      case 0xcc:
        return v.getUint8(this.#take(1));
      case 0xcd:
        return v.getUint16(this.#take(2));
      case 0xce:
        return v.getUint32(this.#take(4));
      case 0xcf:
        return v.getBigUint64(this.#take(8));
      case 0xd0:
        return v.getInt8(this.#take(1));
      case 0xd1:
        return v.getInt16(this.#take(2));
      case 0xd2:
        return v.getInt32(this.#take(4));
      case 0xd3:
        return v.getBigInt64(this.#take(8));
      case 0xd4:
      case 0xd5:
      case 0xd6:
      case 0xd7:
      case 0xd8:
        return this.#extension(1 << (b - 0xd4));
      case 0xd9:
        return this.#string(v.getUint8(this.#take(1)));
      case 0xda:
        return this.#string(v.getUint16(this.#take(2)));
      case 0xdb:
        return this.#string(v.getUint32(this.#take(4)));
      case 0xdc:
        return this.#array(v.getUint16(this.#take(2)));
      case 0xdd:
        return this.#array(v.getUint32(this.#take(4)));
      case 0xde:
        return this.#map(v.getUint16(this.#take(2)));
      case 0xdf:
        return this.#map(v.getUint32(this.#take(4)));
      default:
        throw new OwnedDecodeError(`holds the reserved MessagePack byte 0x${b.toString(16)}`);
    }
  }

  #string(n: number): string {
    const at = this.#take(n);
    return text.decode(this.#bytes.subarray(at, at + n));
  }

  #binary(n: number): Uint8Array {
    const at = this.#take(n);
    return this.#bytes.slice(at, at + n);
  }

  #array(n: number): unknown[] {
    // Grown by define, never by assignment: a setter of an index on a prototype is never called.
    const out: unknown[] = [];
    for (let i = 0; i < n; i++) defineOwn(out, String(i), this.value());
    return out;
  }

  #map(n: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) {
      const key = this.value();
      if (key !== null && typeof key === "object") throw new OwnedDecodeError("holds a map key that is not a string or number");
      defineOwn(out, String(key), this.value());
    }
    return out;
  }

  /** Extension 0 (undefined, what msgpackr writes for it inside arrays) or -1 (a timestamp); `assertPlainMessagePack` refused every other. */
  #extension(n: number): unknown {
    const type = this.#view.getInt8(this.#take(1));
    const at = this.#take(n);
    if (type === 0) return undefined;
    if (type !== -1) throw new OwnedDecodeError(`holds MessagePack extension type ${type}`);
    const v = this.#view;
    if (n === 4) return new Date(v.getUint32(at) * 1000);
    if (n === 8) {
      const high = v.getUint32(at);
      const nanos = high >>> 2;
      const seconds = (high & 0x3) * 0x100000000 + v.getUint32(at + 4);
      return new Date(seconds * 1000 + nanos / 1e6);
    }
    if (n === 12) return new Date(Number(v.getBigInt64(at + 4)) * 1000 + v.getUint32(at) / 1e6);
    return new Date(Number.NaN);
  }
}
