/**
 * @module Refuses MessagePack extension types in bytes read from the store.
 *
 * msgpackr decodes its extension types into live objects (RegExp, Error,
 * Set, Map, class instances, structured records) and offers no switch to
 * turn them off per decoder. Whoever can write the bucket could then hand
 * the application objects with behaviour through a planted record or memo
 * entry. This scan walks the encoded structure without building anything
 * and refuses every extension except the two our own encoders write:
 * type 0 (undefined inside arrays) and -1 (the standard timestamp, a Date).
 */

/** Thrown by {@link assertPlainMessagePack}; callers wrap it in their own corruption error. */
export class MessagePackExtensionError extends Error {}

/**
 * Throws `MessagePackExtensionError` when `bytes` holds an extension other
 * than undefined or a timestamp, or a reserved byte. Truncated input is left
 * to the decoder, which reports it. Returns how many key-value pairs its
 * maps hold in all: a decoder's objects own as many fields unless a setter
 * of `Object.prototype` took one (or a map repeats a key), see `ownKeyCount`.
 *
 * Runs on every record decode, so it allocates nothing: no closures, no
 * DataView, byte reads straight from the array (a read past the end is 0).
 */
export function assertPlainMessagePack(bytes: Uint8Array): number {
  const end = bytes.length;
  let pos = 0;
  let pending = 1;
  let entries = 0;
  while (pending > 0 && pos < end) {
    pending--;
    const b = bytes[pos]!;
    if (b <= 0x7f || b >= 0xe0 || b === 0xc0 || b === 0xc2 || b === 0xc3) pos += 1;
    else if (b <= 0x8f) {
      entries += b & 0x0f;
      pending += 2 * (b & 0x0f);
      pos += 1;
    } else if (b <= 0x9f) {
      pending += b & 0x0f;
      pos += 1;
    } else if (b <= 0xbf) pos += 1 + (b & 0x1f);
    else if (b === 0xc4 || b === 0xd9) pos += 2 + u8(bytes, pos + 1);
    else if (b === 0xc5 || b === 0xda) pos += 3 + u16(bytes, pos + 1);
    else if (b === 0xc6 || b === 0xdb) pos += 5 + u32(bytes, pos + 1);
    else if (b === 0xc7) {
      checkExtension(u8(bytes, pos + 2));
      pos += 3 + u8(bytes, pos + 1);
    } else if (b === 0xc8) {
      checkExtension(u8(bytes, pos + 3));
      pos += 4 + u16(bytes, pos + 1);
    } else if (b === 0xc9) {
      checkExtension(u8(bytes, pos + 5));
      pos += 6 + u32(bytes, pos + 1);
    } else if (b === 0xca || b === 0xce || b === 0xd2) pos += 5;
    else if (b === 0xcb || b === 0xcf || b === 0xd3) pos += 9;
    else if (b === 0xcc || b === 0xd0) pos += 2;
    else if (b === 0xcd || b === 0xd1) pos += 3;
    else if (b >= 0xd4 && b <= 0xd8) {
      checkExtension(u8(bytes, pos + 1));
      pos += 2 + (1 << (b - 0xd4));
    } else if (b === 0xdc) {
      pending += u16(bytes, pos + 1);
      pos += 3;
    } else if (b === 0xdd) {
      pending += u32(bytes, pos + 1);
      pos += 5;
    } else if (b === 0xde) {
      entries += u16(bytes, pos + 1);
      pending += 2 * u16(bytes, pos + 1);
      pos += 3;
    } else if (b === 0xdf) {
      entries += u32(bytes, pos + 1);
      pending += 2 * u32(bytes, pos + 1);
      pos += 5;
    } else throw new MessagePackExtensionError(`holds the reserved MessagePack byte 0x${b.toString(16)}`);
  }
  return entries;
}

// Big-endian reads; a read past the end is 0 (the decoder reports the truncation).
function u8(bytes: Uint8Array, at: number): number {
  return at < bytes.length ? bytes[at]! : 0;
}

function u16(bytes: Uint8Array, at: number): number {
  return at + 2 <= bytes.length ? (bytes[at]! << 8) | bytes[at + 1]! : 0;
}

function u32(bytes: Uint8Array, at: number): number {
  return at + 4 <= bytes.length ? bytes[at]! * 0x1000000 + ((bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) : 0;
}

/** Only type 0 (undefined inside arrays) and -1 (timestamp) are ours. */
function checkExtension(type: number): void {
  const signed = type > 127 ? type - 256 : type;
  if (signed !== 0 && signed !== -1) {
    throw new MessagePackExtensionError(`holds MessagePack extension type ${signed}; records read from the store must be plain data`);
  }
}
