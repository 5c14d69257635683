/**
 * @module Validation of enqueue options, shared by every enqueue path.
 */
import { ValidationError } from "../errors.js";
import { quoteValue } from "../option-values.js";
import { validatePriority } from "./config.js";
import { validateInstant } from "../time-bounds.js";
import { validateHeaders } from "./headers.js";
import { isWellFormed, MAX_DEDUP_KEY_BYTES, utf8Exceeds, validateDedupKey, validateJobId, validatePositiveInt } from "./names.js";
import type { EnqueueOptions } from "./types.js";
import { validateDebouncePeriod } from "./admission.js";

/** Throws `ValidationError` naming the first bad field of an enqueue, before anything is written. */
export function validateEnqueueOptions(opts: EnqueueOptions, payload: unknown): void {
  if (!(payload instanceof Uint8Array)) throw new ValidationError("a job payload must be a Uint8Array");
  if (opts === null || typeof opts !== "object") throw new ValidationError("enqueue options must be an object");
  if (opts.priority !== undefined) validatePriority(opts.priority);
  if (opts.runAt !== undefined) validateInstant("EnqueueOptions.runAt", opts.runAt);
  if (opts.dedupKey !== undefined) validateDedupKey(opts.dedupKey);
  if (opts.maxAttempts !== undefined) validatePositiveInt("EnqueueOptions.maxAttempts", opts.maxAttempts);
  if (opts.jobId !== undefined) validateJobId(opts.jobId);
  if (opts.headers !== undefined) validateHeaders(opts.headers);
  if (opts.debounce !== undefined) {
    const d = opts.debounce;
    if (d === null || typeof d !== "object") throw new ValidationError("EnqueueOptions.debounce must be an object { key, periodMs }");
    validateDebounceKey(d.key);
    validateDebouncePeriod("EnqueueOptions.debounce.periodMs", d.periodMs);
    if (opts.runAt !== undefined) {
      throw new ValidationError("EnqueueOptions.debounce cannot be combined with runAt: a debounced job runs when its window ends");
    }
  }
}

/** A debounce key is text as a dedup key is: 1-512 bytes of well-formed UTF-8. */
export function validateDebounceKey(key: unknown): asserts key is string {
  if (typeof key !== "string" || key.length === 0 || !isWellFormed(key) || utf8Exceeds(key, MAX_DEDUP_KEY_BYTES)) {
    throw new ValidationError(`invalid debounce key ${quoteValue(key)}; use 1-${MAX_DEDUP_KEY_BYTES} bytes of well-formed UTF-8 text`);
  }
}
