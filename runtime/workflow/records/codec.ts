/**
 * @module MessagePack encoding of the runtime's records and of memo values.
 *
 * Maps with named fields (no msgpackr record extension), so a record stays
 * readable by any MessagePack decoder and by later versions that add fields.
 * Decoded binary values are returned as plain `Uint8Array`s, never as
 * Buffers sharing a pool.
 */
import { createHash } from "node:crypto";
import { Packr } from "msgpackr";
import { assertPlainMessagePack } from "../../engine/plain-messagepack.js";
import { ownObjects } from "../../queue/own-objects.js";
import { packPlain } from "../../queue/record-pack.js";

const packr = new Packr({ useRecords: false, moreTypes: false });
/** Decodes maps as `Map`s, for `ownObjects` (see `decodeValue`). */
const mapPackr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: false } as ConstructorParameters<typeof Packr>[0]);

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
 */
export function decodeValue(bytes: Uint8Array): unknown {
  assertPlainMessagePack(bytes);
  let v: unknown;
  try {
    v = packr.unpack(bytes);
  } catch (e) {
    // A read-only field of Object.prototype refused the decoder's assignment of a key of its name (own-objects.ts).
    try {
      v = ownObjects(mapPackr.unpack(bytes));
    } catch {
      throw e;
    }
  }
  return normalize(v);
}

/**
 * Replaces Buffers with plain arrays of their own, in place: the decoder's
 * objects and arrays are fresh and this module's alone, so only what
 * changes is written (no copy of every record read per step).
 */
function normalize(v: unknown): unknown {
  if (v instanceof Uint8Array) return v.constructor === Uint8Array ? v : new Uint8Array(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      if (x !== null && typeof x === "object") v[i] = normalize(x);
    }
    return v;
  }
  if (v !== null && typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype) {
    const o = v as Record<string, unknown>;
    for (const k of Object.keys(o)) {
      const x = o[k];
      if (x !== null && typeof x === "object") o[k] = normalize(x);
    }
  }
  return v;
}

/** SHA-256 of `bytes`, as lowercase hex. */
export function sha256Hex(bytes: Uint8Array | string): string {
  return createHash("sha256").update(bytes).digest("hex");
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
