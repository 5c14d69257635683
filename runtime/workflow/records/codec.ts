/**
 * @module MessagePack encoding of the runtime's records and of memo values.
 *
 * Maps with named fields (no msgpackr record extension), so a record stays
 * readable by any MessagePack decoder and by later versions that add fields.
 * Decoded binary values are returned as plain `Uint8Array`s, never as
 * Buffers sharing a pool.
 */
import { hash } from "node:crypto";
import { packrWithOwnLayouts } from "../../own-layouts.js";
import { decodeDefining } from "../../engine/defining-decode.js";
import { assertPlainMessagePack } from "../../engine/plain-messagepack.js";
import { prototypesHoldAnIndex } from "../../own-fields.js";
import { packPlain } from "../../queue/record-pack.js";

const packr = packrWithOwnLayouts({ useRecords: false, moreTypes: false });

/**
 * Encodes `value` into a fresh byte array that owns its memory. Plain data
 * (every record a step writes) is written directly, to the same bytes.
 */
export function encodeValue(value: unknown): Uint8Array {
  return packPlain(value) ?? new Uint8Array(packr.pack(value));
}

/**
 * Decodes bytes written by {@link encodeValue}; throws when they are not
 * MessagePack or hold an extension type other than undefined and timestamps
 * (plain data only: a bucket writer cannot plant a RegExp, Error or Set).
 * Every map decodes to an object owning each of its fields, and every array
 * owns each of its elements, whatever `Object.prototype` and
 * `Array.prototype` hold: the decoder assigns each field and element, and
 * when the objects own fewer fields than the bytes' maps hold (a setter
 * there took one), an array lacks an element (a setter named as its index
 * took it) or an assignment threw (on a read-only field there), the bytes
 * are decoded again by `decodeDefining`, which defines each one. So are
 * maps with a key `__proto_`, which may be a `__proto__` msgpackr renamed.
 */
export function decodeValue(bytes: Uint8Array): unknown {
  const entries = assertPlainMessagePack(bytes);
  // Defined at once, so that no setter of an index is called with an element (or the decoder's own lists).
  if (prototypesHoldAnIndex()) return decodeDefining(bytes);
  let v: unknown;
  try {
    v = packr.unpack(bytes);
  } catch (e) {
    try {
      return decodeDefining(bytes);
    } catch {
      throw e;
    }
  }
  ownKeysSeen = 0;
  v = normalize(v);
  // Fewer fields owned than the maps hold (NaN when an array lacks an element): a setter took one (or a map repeated a key).
  return ownKeysSeen === entries ? v : decodeDefining(bytes);
}

/**
 * `decodeValue` decoding by definition at once: for a caller that found
 * `Object.prototype` holding one of its record's field names, so that no
 * setter of those names is called.
 */
export function decodeValueDefining(bytes: Uint8Array): unknown {
  assertPlainMessagePack(bytes);
  return decodeDefining(bytes);
}

/** The fields `normalize` found the objects it walked to own, counted without a second walk; NaN once an array lacked an element. */
let ownKeysSeen = 0;

/**
 * Replaces Buffers with plain arrays of their own, in place: the decoder's
 * objects and arrays are fresh and this module's alone, so only what
 * changes is written (no copy of every record read per step). Adds the
 * fields of each plain object to `ownKeysSeen`.
 */
function normalize(v: unknown): unknown {
  if (v instanceof Uint8Array) return v.constructor === Uint8Array ? v : new Uint8Array(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      // An element the decoder's assignment handed to a setter of the prototypes is missing here.
      if (!Object.hasOwn(v, i)) ownKeysSeen = Number.NaN;
      const x = v[i];
      if (x !== null && typeof x === "object") v[i] = normalize(x);
    }
    return v;
  }
  if (v !== null && typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype) {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o);
    ownKeysSeen += keys.length;
    for (const k of keys) {
      // msgpackr renames a key `__proto__` (a field `JSON.parse` makes) to this: decoded again by definition, which keeps it.
      if (k === "__proto_") ownKeysSeen = Number.NaN;
      const x = o[k];
      if (x !== null && typeof x === "object") o[k] = normalize(x);
    }
  }
  return v;
}

/**
 * SHA-256 of `bytes` (a string as its UTF-8), as lowercase hex. The one-shot
 * `hash` makes no `Hash` object: under half the CPU of `createHash` for the
 * short inputs hashed on every submission (a run's input, a memo key).
 */
export function sha256Hex(bytes: Uint8Array | string): string {
  return hash("sha256", bytes, "hex");
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** UTF-8 bytes of `s`. */
export function utf8(s: string): Uint8Array {
  return encoder.encode(s);
}

/** The string of UTF-8 `bytes`. */
export function fromUtf8(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}
