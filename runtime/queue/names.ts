/**
 * @module Validation of every name and identifier the queue accepts from
 * callers. Checks run before any write, so bad input changes nothing.
 */
import { ValidationError } from "../errors.js";
import { validateDelay } from "../time-bounds.js";
import { isPositiveCount } from "../value-ranges.js";
import { isWellFormed, validateObjectKey } from "../store/keys.js";
import { KvValueTooLargeError } from "./errors.js";
import { describeValue, quoteValue } from "../option-values.js";

/** Largest caller KV value, in bytes (256 KiB). Values are never offloaded. */
export const MAX_KV_VALUE_SIZE = 256 * 1024;

/** Longest caller KV key, in UTF-8 bytes. */
export const MAX_KV_KEY_BYTES = 1024;

/** Longest queue name, in characters (all ASCII). */
export const MAX_QUEUE_NAME_LEN = 128;

/** Longest caller-chosen job id, in bytes. */
export const MAX_JOB_ID_LEN = 128;

/** Longest dedup key, in UTF-8 bytes. */
export const MAX_DEDUP_KEY_BYTES = 512;

// Queue names appear inside engine keys between '/' separators, so they may
// not contain '/'; the remaining alphabet keeps them readable in listings.
const QUEUE_NAME_RE = /^[A-Za-z0-9._:-]+$/;
const JOB_ID_RE = /^[A-Za-z0-9_-]+$/;

/**
 * A queue name is 1-128 characters of `[A-Za-z0-9._:-]`, and not `.` or `..`.
 */
export function validateQueueName(name: unknown): asserts name is string {
  if (typeof name !== "string" || name.length === 0 || name.length > MAX_QUEUE_NAME_LEN || !QUEUE_NAME_RE.test(name) || name === "." || name === "..") {
    throw new ValidationError(`invalid queue name ${quoteValue(name)}; use 1-${MAX_QUEUE_NAME_LEN} characters of letters, digits, '.', '_', ':' and '-'`);
  }
}

/** A caller job id is 1-128 bytes of `[A-Za-z0-9_-]`. */
export function validateJobId(id: unknown): asserts id is string {
  if (typeof id !== "string" || id.length === 0 || id.length > MAX_JOB_ID_LEN || !JOB_ID_RE.test(id)) {
    throw new ValidationError(`invalid job id ${quoteValue(id)}; use 1-${MAX_JOB_ID_LEN} characters of letters, digits, '_' and '-'`);
  }
}

/**
 * The store name given to `Queue.open` prefixes every object the queue
 * writes (`<name>/db/...`, `<name>/payloads/...`), so it must be a valid
 * object key without a trailing '/'.
 */
export function validateStoreName(name: unknown): asserts name is string {
  if (typeof name !== "string") throw new ValidationError(`the queue store name must be a string, got ${describeValue(name)}`);
  try {
    validateObjectKey(`${name}/x`);
  } catch (e) {
    throw new ValidationError(`invalid queue store name ${quoteValue(name)}; it becomes an object key prefix`, e instanceof ValidationError ? e.issues : []);
  }
}

/** Whether `s` has no lone surrogates (so it survives UTF-8 encoding unchanged): the store's check, for the queue's callers. */
export { isWellFormed };

export function utf8Length(s: string): number {
  return Buffer.byteLength(s, "utf8");
}

/**
 * Whether well-formed `s` takes more than `max` UTF-8 bytes. A UTF-16 code
 * unit takes 1 to 3 bytes, so most keys are decided by their length alone
 * (every KV read and write and every enqueue checks its keys).
 */
export function utf8Exceeds(s: string, max: number): boolean {
  if (s.length > max) return true;
  if (s.length * 3 <= max) return false;
  return utf8Length(s) > max;
}

/** A caller KV key: 1-1024 UTF-8 bytes of well-formed text. */
export function validateKvKey(key: unknown): asserts key is string {
  if (typeof key !== "string" || key.length === 0 || !isWellFormed(key) || utf8Exceeds(key, MAX_KV_KEY_BYTES)) {
    throw new ValidationError(`invalid KV key ${quoteValue(key)}; use 1-${MAX_KV_KEY_BYTES} bytes of well-formed UTF-8 text`);
  }
}

/** A KV prefix may be empty (the whole namespace) but must be well-formed text. */
export function validateKvPrefix(prefix: unknown): asserts prefix is string {
  if (typeof prefix !== "string" || !isWellFormed(prefix) || utf8Length(prefix) > MAX_KV_KEY_BYTES) {
    throw new ValidationError(`invalid KV prefix ${quoteValue(prefix)}; use at most ${MAX_KV_KEY_BYTES} bytes of well-formed UTF-8 text`);
  }
}

/** A KV value must be bytes of at most `MAX_KV_VALUE_SIZE`. */
export function validateKvValue(key: string, value: unknown): asserts value is Uint8Array {
  if (!(value instanceof Uint8Array)) throw new ValidationError(`the value for KV key ${quoteValue(key)} must be a Uint8Array`);
  if (value.byteLength > MAX_KV_VALUE_SIZE) throw new KvValueTooLargeError(key, value.byteLength, MAX_KV_VALUE_SIZE);
}

/** A dedup key: 1-512 bytes of well-formed text. */
export function validateDedupKey(key: unknown): asserts key is string {
  if (typeof key !== "string" || key.length === 0 || !isWellFormed(key) || utf8Exceeds(key, MAX_DEDUP_KEY_BYTES)) {
    throw new ValidationError(`invalid dedupKey ${quoteValue(key)}; use 1-${MAX_DEDUP_KEY_BYTES} bytes of well-formed UTF-8 text`);
  }
}

/** Positive integer (attempt counts). */
export function validatePositiveInt(what: string, n: unknown): asserts n is number {
  if (!isPositiveCount(n)) throw new ValidationError(`${what} must be a positive integer, got ${describeValue(n)}`);
}

/** Non-negative duration or instant in milliseconds. */
export function validateMillis(what: string, n: unknown): asserts n is number {
  validateDelay(what, n);
}
