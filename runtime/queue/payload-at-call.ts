/**
 * @module A job's payload as the enqueue call saw it. A job stores the bytes
 * its payload held when `enqueue` (or `enqueueBatch`, `enqueueWithEffects`,
 * `SettlementEffects.enqueue`) was called: changing, growing, shrinking or
 * detaching the caller's buffer afterwards changes nothing stored, and the
 * size checked against `maxPayloadBytes` and the offload threshold is the
 * size stored.
 *
 * An enqueue whose records are encoded in the call's own turn (no payload
 * offloaded) reads a plain array's bytes there and needs no copy: the
 * caller's code cannot run in between. Bytes that can change within a turn
 * are copied at the call: a buffer another thread shares, one that can be
 * resized, a class or getter that may report another size than the bytes.
 * Payloads held past the call (staged effects, an offload awaiting its
 * write) are copied at the call too (`heldPayload`).
 */
import { ValidationError } from "../errors.js";
import { quoteValue } from "../option-values.js";
import { copyOwned, uint8ArraySize } from "./owned-bytes.js";

const typedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype) as object;
/** The built-in getter, which reads the array's own slot (a subclass or own property cannot answer it). */
const typedArrayBuffer = Object.getOwnPropertyDescriptor(typedArrayPrototype, "buffer")!.get as (this: Uint8Array) => ArrayBufferLike;
/** Throws for a SharedArrayBuffer: only an unshared ArrayBuffer has this slot. */
const arrayBufferResizable = Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, "resizable")!.get as (this: ArrayBufferLike) => boolean;

/**
 * Whether `payload`'s bytes can change only by the caller's own code: a
 * plain `Uint8Array` or `Buffer` over an unshared buffer of fixed size.
 */
export function fixedWithinTurn(payload: Uint8Array): boolean {
  const proto = Object.getPrototypeOf(payload) as unknown;
  if (proto !== Uint8Array.prototype && proto !== Buffer.prototype) return false;
  try {
    return !arrayBufferResizable.call(typedArrayBuffer.call(payload));
  } catch {
    // A SharedArrayBuffer: another thread may write or grow it at any time.
    return false;
  }
}

/** Which job a refused payload belongs to, in the caller's terms. */
function jobNamed(queueName: string, jobId: unknown): string {
  return typeof jobId === "string"
    ? `job ${quoteValue(jobId)} enqueued to queue ${quoteValue(queueName)}`
    : `the job enqueued to queue ${quoteValue(queueName)}`;
}

function notBytes(): ValidationError {
  return new ValidationError("a job payload must be a Uint8Array");
}

function bytesGone(queueName: string, jobId: unknown): ValidationError {
  return new ValidationError(
    `the payload of ${jobNamed(queueName, jobId)} is a view of a detached or shrunk ArrayBuffer, whose bytes are gone; pass a view of live bytes`,
  );
}

/**
 * `payload` for an enqueue that encodes its records in this turn: the
 * array itself when its bytes cannot change before then (see
 * `fixedWithinTurn`), else a plain copy of its bytes now. Throws
 * `ValidationError` for anything but a `Uint8Array` (a Proxy is not one)
 * and for a view whose bytes are gone (detached, or out of a shrunk
 * buffer), naming the job by queue and caller id.
 */
export function payloadAtCall(payload: unknown, queueName: string, jobId: unknown): Uint8Array {
  const size = uint8ArraySize(payload);
  if (size === undefined) throw notBytes();
  const bytes = payload as Uint8Array;
  if (fixedWithinTurn(bytes)) {
    // A view of a detached buffer reads as empty: only an empty one can be such a view.
    if (size === 0 && copyOwned(bytes) === undefined) throw bytesGone(queueName, jobId);
    return bytes;
  }
  const copy = copyOwned(bytes);
  if (copy === undefined) throw bytesGone(queueName, jobId);
  return copy;
}

/**
 * `payload` for an enqueue stored after this turn: a plain copy of its
 * bytes now, unless `payloadAtCall` already made one. Throws as it does.
 */
export function heldPayload(payload: unknown, queueName: string, jobId: unknown): Uint8Array {
  const now = payloadAtCall(payload, queueName, jobId);
  if (now !== payload) return now;
  const copy = copyOwned(now);
  if (copy === undefined) throw bytesGone(queueName, jobId);
  return copy;
}

/** The size of a payload `payloadAtCall` took, read from the array itself. */
export function payloadSize(payload: Uint8Array): number {
  return uint8ArraySize(payload) ?? 0;
}
