/**
 * @module Values a commit takes as they are. The engine keeps what the
 * queue commits without checking or copying it (`commitOwned`), so every
 * value put in a transaction must be an array the queue or the workflow
 * made for that write and holds nowhere else, or a constant nothing
 * changes (the empty index value, a one-byte carried count): `OwnedBytes`.
 * A caller's array becomes one only through `copyCallerValue`, which
 * checks it and copies it once; the type keeps a caller's `Uint8Array` out
 * of `Txn.put` by mistake.
 */
import { ValidationError } from "../errors.js";
import { quoteValue } from "../option-values.js";
import { KvValueTooLargeError } from "./errors.js";
import { MAX_KV_VALUE_SIZE } from "./names.js";

declare const ownedByTheQueue: unique symbol;

/** A plain `Uint8Array` made for one write, which nothing outside the queue or the workflow holds or changes. */
export type OwnedBytes = Uint8Array & { readonly [ownedByTheQueue]: true };

/**
 * `v`, declared owned: call it only on an array just made by an encoder of
 * the queue or the workflow (never a view of a shared buffer, never a
 * caller's array), and keep no reference that is changed afterwards.
 */
export function ownedBytes(v: Uint8Array): OwnedBytes {
  return v as OwnedBytes;
}

const typedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype) as object;
/** The built-in getters, which read an array's own slots: a subclass or an own property cannot answer them falsely, and a Proxy has no slots. */
const typedArrayTag = Object.getOwnPropertyDescriptor(typedArrayPrototype, Symbol.toStringTag)!.get as (this: unknown) => string | undefined;
const typedArrayByteLength = Object.getOwnPropertyDescriptor(typedArrayPrototype, "byteLength")!.get as (this: Uint8Array) => number;

/** The byte length of `value` read from the array itself, or undefined when it is not a `Uint8Array` (a Buffer is one; a Proxy is not). */
export function uint8ArraySize(value: unknown): number | undefined {
  return typedArrayTag.call(value) === "Uint8Array" ? typedArrayByteLength.call(value as Uint8Array) : undefined;
}

/**
 * A plain copy of `value` (a `Uint8Array`, see `uint8ArraySize`) read from
 * the array's own bytes, whatever its class or getters say; undefined when
 * they are gone (a view of a detached ArrayBuffer, or of one shrunk under it).
 */
export function copyOwned(value: Uint8Array): OwnedBytes | undefined {
  try {
    return new Uint8Array(value) as OwnedBytes;
  } catch {
    return undefined;
  }
}

/**
 * A caller's value for caller KV key `key`, checked and copied once into a
 * plain array of its own: what `kvPut` stages and what the commit takes.
 * Changing `value` later changes nothing committed. Throws
 * `ValidationError` for anything but a `Uint8Array` or a view of bytes
 * that are gone, and `KvValueTooLargeError` past `MAX_KV_VALUE_SIZE`.
 */
export function copyCallerValue(key: string, value: unknown): OwnedBytes {
  const size = uint8ArraySize(value);
  if (size === undefined) throw new ValidationError(`the value for KV key ${quoteValue(key)} must be a Uint8Array`);
  if (size > MAX_KV_VALUE_SIZE) throw new KvValueTooLargeError(key, size, MAX_KV_VALUE_SIZE);
  const copy = copyOwned(value as Uint8Array);
  if (copy === undefined) {
    throw new ValidationError(
      `the value for KV key ${quoteValue(key)} is a view of a detached or shrunk ArrayBuffer, whose bytes are gone; pass a view of live bytes`,
    );
  }
  return copy;
}
