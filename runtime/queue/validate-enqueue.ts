/**
 * @module Validation of enqueue options, shared by every enqueue path.
 */
import { ValidationError } from "../errors.js";
import { validatePriority } from "./config.js";
import { validateInstant } from "../time-bounds.js";
import { validateHeaders } from "./headers.js";
import { validateDedupKey, validateJobId, validatePositiveInt } from "./names.js";
import type { EnqueueOptions } from "./types.js";

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
}
