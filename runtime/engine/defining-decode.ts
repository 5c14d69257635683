/**
 * @module A MessagePack decoder for plain data that defines every field of
 * the objects and every element of the arrays it builds, never assigns.
 *
 * msgpackr fills an array it made with `new Array(length)` by assigning
 * each index, and an assignment to an index the array does not own yet
 * looks for it on `Array.prototype` and `Object.prototype`: a setter there
 * named `"0"` takes the first element of every array (the array then reads
 * the prototype's value there), and a read-only field or a getter alone
 * makes the decode throw. Its string and key caches fill arrays with
 * `push`, which does the same. No option of msgpackr builds arrays another
 * way, so the records' decoders come here when such a prototype is seen.
 *
 * Takes only what `assertPlainMessagePack` passes (its caller checks
 * first): nil, booleans, numbers, strings, binary, arrays, maps, and the
 * extensions undefined (type 0) and timestamp (type -1). Maps decode to
 * objects (keys as strings), as msgpackr's `mapsAsObjects` gives them;
 * 64-bit integers to `BigInt`s, as msgpackr's default; binary to a
 * `Uint8Array` of its own.
 */

/** Thrown by {@link decodeDefining} for bytes that are not one whole plain MessagePack value. */
export class DefiningDecodeError extends Error {}

const utf8 = new TextDecoder();

/** The value `bytes` hold, every object field and array element defined. */
export function decodeDefining(bytes: Uint8Array): unknown {
  const r = new Reader(bytes);
  const v = r.value();
  if (r.pos !== bytes.length) throw new DefiningDecodeError(`${bytes.length - r.pos} bytes follow the value`);
  return v;
}

/**
 * A list or map being filled. The decode links these to the one each sits
 * in instead of recursing, so any nesting the encoder wrote decodes here
 * too (a limit of 512 levels made a step value nested deeper unreadable
 * while a prototype held an index, though it read back without one); each
 * level takes a byte at least, so they are bounded by the bytes. Linked,
 * not kept in an array: a push assigns an index, which a setter on the
 * prototype would take.
 */
interface Open {
  readonly outer: Open | undefined;
  readonly into: unknown[] | Record<string, unknown>;
  readonly isMap: boolean;
  /** Elements, or fields, still to read. */
  left: number;
  /** A map's key read, its value not yet. */
  key: string | undefined;
  /** A list's next index. */
  next: number;
}

/** What `Reader.#item` answers when it read the head of a list or map that holds something: its items come next. */
const OPENED: unique symbol = Symbol("opened");

function define(into: object, key: string | number, value: unknown): void {
  Object.defineProperty(into, key, { value, writable: true, enumerable: true, configurable: true });
}

class Reader {
  pos = 0;
  /** The list or map `#item` opened last. */
  #opened: Open | undefined;
  readonly #bytes: Uint8Array;
  readonly #view: DataView;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** The next whole value: its lists and maps filled item by item, each placed in the one it belongs to as it ends. */
  value(): unknown {
    let top: Open | undefined;
    for (;;) {
      let v = this.#item(top);
      if (v === OPENED) {
        top = this.#opened;
        continue;
      }
      for (;;) {
        if (top === undefined) return v;
        if (top.isMap && top.key === undefined) {
          top.key = String(v);
          break;
        }
        define(top.into, top.isMap ? top.key! : top.next++, v);
        top.key = undefined;
        if (--top.left > 0) break;
        v = top.into;
        top = top.outer;
      }
    }
  }

  /** A scalar, an empty list or map, or `OPENED` with the list or map in `#opened`, inside `open`. */
  #item(open: Open | undefined): unknown {
    const b = this.#u8();
    if (b <= 0x7f) return b;
    if (b >= 0xe0) return b - 0x100;
    if (b <= 0x8f) return this.#open(b & 0x0f, true, open);
    if (b <= 0x9f) return this.#open(b & 0x0f, false, open);
    if (b <= 0xbf) return this.#str(b & 0x1f);
    switch (b) {
      case 0xc0:
        return null;
      case 0xc2:
        return false;
      case 0xc3:
        return true;
      case 0xc4:
        return this.#bin(this.#u8());
      case 0xc5:
        return this.#bin(this.#u16());
      case 0xc6:
        return this.#bin(this.#u32());
      case 0xc7:
        return this.#ext(this.#u8());
      case 0xc8:
        return this.#ext(this.#u16());
      case 0xc9:
        return this.#ext(this.#u32());
      case 0xca:
        return this.#view.getFloat32(this.#take(4));
      case 0xcb:
        return this.#view.getFloat64(this.#take(8));
      case 0xcc:
        return this.#u8();
      case 0xcd:
        return this.#u16();
      case 0xce:
        return this.#u32();
      case 0xcf:
        return this.#view.getBigUint64(this.#take(8));
      case 0xd0:
        return this.#view.getInt8(this.#take(1));
      case 0xd1:
        return this.#view.getInt16(this.#take(2));
      case 0xd2:
        return this.#view.getInt32(this.#take(4));
      case 0xd3:
        return this.#view.getBigInt64(this.#take(8));
      case 0xd4:
        return this.#ext(1);
      case 0xd5:
        return this.#ext(2);
      case 0xd6:
        return this.#ext(4);
      case 0xd7:
        return this.#ext(8);
      case 0xd8:
        return this.#ext(16);
      case 0xd9:
        return this.#str(this.#u8());
      case 0xda:
        return this.#str(this.#u16());
      case 0xdb:
        return this.#str(this.#u32());
      case 0xdc:
        return this.#open(this.#u16(), false, open);
      case 0xdd:
        return this.#open(this.#u32(), false, open);
      case 0xde:
        return this.#open(this.#u16(), true, open);
      case 0xdf:
        return this.#open(this.#u32(), true, open);
      default:
        throw new DefiningDecodeError(`holds the reserved MessagePack byte 0x${b.toString(16)}`);
    }
  }

  #open(n: number, isMap: boolean, outer: Open | undefined): unknown {
    // Every element takes a byte at least, a field two: a length past the end is refused before anything is made for it.
    if ((isMap ? 2 * n : n) > this.#bytes.length - this.pos) throw new DefiningDecodeError(`${isMap ? "a map" : "an array"} is longer than the bytes left`);
    const into: unknown[] | Record<string, unknown> = isMap ? {} : [];
    if (n === 0) return into;
    this.#opened = { outer, into, isMap, left: n, key: undefined, next: 0 };
    return OPENED;
  }

  #str(n: number): string {
    const at = this.#take(n);
    return utf8.decode(this.#bytes.subarray(at, at + n));
  }

  #bin(n: number): Uint8Array {
    const at = this.#take(n);
    // A copy, and a plain Uint8Array even when the bytes are a Buffer (whose slices share its memory).
    return new Uint8Array(this.#bytes.subarray(at, at + n));
  }

  /** Undefined (type 0) or a timestamp (type -1), the two extensions the scan lets through. */
  #ext(n: number): unknown {
    const type = this.#view.getInt8(this.#take(1));
    const at = this.#take(n);
    if (type === 0) return undefined;
    if (type !== -1) throw new DefiningDecodeError(`holds MessagePack extension type ${type}`);
    if (n === 4) return new Date(this.#view.getUint32(at) * 1000);
    if (n === 8) {
      const hi = this.#view.getUint32(at);
      const lo = this.#view.getUint32(at + 4);
      // 30 bits of nanoseconds, then 34 bits of seconds.
      return new Date(((hi & 0x3) * 0x100000000 + lo) * 1000 + Math.floor(hi / 4 / 1e6));
    }
    if (n === 12) return new Date(Number(this.#view.getBigInt64(at + 4)) * 1000 + Math.floor(this.#view.getUint32(at) / 1e6));
    throw new DefiningDecodeError(`holds a timestamp of ${n} bytes`);
  }

  /** The position of the next `n` bytes, taken; refused when fewer are left. */
  #take(n: number): number {
    const at = this.pos;
    if (n > this.#bytes.length - at) throw new DefiningDecodeError("ends inside a value");
    this.pos = at + n;
    return at;
  }

  #u8(): number {
    return this.#bytes[this.#take(1)]!;
  }

  #u16(): number {
    return this.#view.getUint16(this.#take(2));
  }

  #u32(): number {
    return this.#view.getUint32(this.#take(4));
  }
}
