/**
 * @module The queue's own limit on a job's payload, checked when a job is
 * enqueued (plain, batch, with effects, or by a settlement's effects) before
 * anything is staged or written. Without it a payload was refused only by
 * the engine's 1 GiB commit limit, after the queue had already copied it.
 */
import { ValidationError } from "../errors.js";
import { describeValue } from "../option-values.js";
import { PayloadTooLargeError } from "./errors.js";
import type { EnqueueItem } from "./types.js";
import { payloadSize } from "./payload-at-call.js";

/** Default `OpenOptions.maxPayloadBytes`: 64 MiB, as a workflow run's input, step payload or result. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 64 * 1024 * 1024;

/**
 * Largest `maxPayloadBytes` accepted: 1 GiB. An inline payload must fit in
 * one engine commit (at most 1 GiB), and an offloaded one is held whole in
 * memory, with a framed copy, when it is written and when it is claimed.
 */
export const MAX_PAYLOAD_BYTES_LIMIT = 2 ** 30;

/** `OpenOptions.maxPayloadBytes` checked, with its default filled in; throws `ValidationError` naming it. */
export function resolvePayloadLimit(given: unknown): number {
  if (given === undefined) return DEFAULT_MAX_PAYLOAD_BYTES;
  if (typeof given !== "number" || !Number.isSafeInteger(given) || given < 1 || given > MAX_PAYLOAD_BYTES_LIMIT) {
    throw new ValidationError(`OpenOptions.maxPayloadBytes must be an integer from 1 to ${MAX_PAYLOAD_BYTES_LIMIT} (1 GiB), got ${describeValue(given)}`);
  }
  return given;
}

/** Throws `PayloadTooLargeError` for the first of `items` whose payload is over `max` bytes. */
export function checkPayloadSizes(items: readonly EnqueueItem[], max: number): void {
  for (const i of items) checkPayloadSize(i, max);
}

/** Throws `PayloadTooLargeError` when `item`'s payload is over `max` bytes. */
export function checkPayloadSize(item: EnqueueItem, max: number): void {
  // The size read from the array itself: a subclass or own property cannot report less than its bytes.
  const size = payloadSize(item.payload);
  if (size > max) throw new PayloadTooLargeError(item.queueName, size, max);
}
