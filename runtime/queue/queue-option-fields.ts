/**
 * @module The fields the queue's per-call option objects take: enqueue
 * options (and their debounce), a batch's items, `kvScan`'s, `nack`'s and
 * `deadLetter`'s. A field that is none of them (a misspelt `priorty`,
 * `retryAfterMS`) is refused before anything is written, rather than left
 * to its default in silence.
 */
import { ValidationError } from "../errors.js";
import { describeValue, errorText, isOptionObject, optionFields, readOptions, refuseUnknownFields, unknownFieldsRefusal } from "../option-values.js";
import type { DeadLetterOptions, EnqueueItem, EnqueueOptions, NackOptions } from "./types.js";
import type { KvScanOptions, ListJobsOptions } from "./view.js";

/** The fields of `EnqueueOptions`, for the readers and the unknown-field check. */
export const ENQUEUE_FIELDS = optionFields<EnqueueOptions>({
  priority: true,
  runAt: true,
  dedupKey: true,
  maxAttempts: true,
  headers: true,
  jobId: true,
  debounce: true,
});
export const DEBOUNCE_FIELDS = optionFields<NonNullable<EnqueueOptions["debounce"]>>({ key: true, periodMs: true });
const ITEM_FIELDS = optionFields<EnqueueItem>({ queueName: true, payload: true, opts: true });
const KV_SCAN_FIELDS = optionFields<KvScanOptions>({ after: true, limit: true });
const LIST_JOBS_FIELDS = optionFields<ListJobsOptions>({ cursor: true, limit: true });
const DEAD_JOBS_FIELDS = optionFields<{ after?: string; limit?: number }>({ after: true, limit: true });
const NACK_FIELDS = optionFields<NackOptions>({ retryAfterMs: true, countAttempt: true, cause: true });
const DEAD_LETTER_FIELDS = optionFields<DeadLetterOptions>({ cause: true });
const WAIT_FIELDS = optionFields<{ timeoutMs?: number; signal?: AbortSignal }>({ timeoutMs: true, signal: true });

/** Refuses a field of enqueue options `opts` (an object) that they do not take. Reads no field: see `refuseUnknownDebounceFields`. */
export function refuseUnknownEnqueueFields(opts: object): void {
  refuseUnknownFields(opts, ENQUEUE_FIELDS, "EnqueueOptions.", "EnqueueOptions");
}

/** Refuses a field of `EnqueueOptions.debounce` (an object, as read once) that it does not take. */
export function refuseUnknownDebounceFields(debounce: object): void {
  refuseUnknownFields(debounce, DEBOUNCE_FIELDS, "EnqueueOptions.debounce.", "EnqueueOptions.debounce");
}

/**
 * `enqueueBatch`'s items as plain copies: the array's length and each entry
 * read once, and each item's fields, after refusing one that is not an
 * object or has a field an item does not take. A getter answering another
 * payload or queue on a second read cannot enqueue what the checks never
 * saw, and one that throws is a `ValidationError` naming the item and field.
 */
export function readEnqueueItems(items: readonly unknown[]): EnqueueItem[] {
  let n: unknown;
  try {
    n = items.length;
  } catch (err) {
    throw new ValidationError(`reading the length of enqueueBatch's items threw: ${errorText(err)}`);
  }
  // A Proxy can claim any length: past the largest an array has, it is no array's.
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0 || n > MAX_ARRAY_LENGTH)
    throw new ValidationError(`enqueueBatch's items claim a length of ${describeValue(n)}, which no array has`);
  const out: EnqueueItem[] = [];
  for (let i = 0; i < n; i++) {
    let item: unknown;
    try {
      // A hole would read whatever a prototype holds at that index: an item the caller never gave.
      if (!Object.hasOwn(items, i))
        throw new ValidationError(`enqueueBatch item ${i} is missing (a hole in the items): give an item there or leave the slot out`);
      item = items[i];
    } catch (err) {
      if (err instanceof ValidationError) throw err;
      throw new ValidationError(`reading enqueueBatch item ${i} threw: ${errorText(err)}`);
    }
    out.push(readEnqueueItem(item, i));
  }
  return out;
}

/** Most entries an array holds. */
const MAX_ARRAY_LENGTH = 2 ** 32 - 1;

function readEnqueueItem(item: unknown, i: number): EnqueueItem {
  if (!isOptionObject(item)) throw new ValidationError(`enqueueBatch item ${i} must be an object { queueName, payload, opts? }, got ${describeValue(item)}`);
  refuseUnknownFields(item, ITEM_FIELDS, `enqueueBatch item ${i}: `, `enqueueBatch item ${i}`);
  if (baseHoldsItemField()) return readOptions(item, ITEM_FIELDS, `enqueueBatch item ${i}`) as EnqueueItem;
  // No base prototype holds these names: read by name (each once), as the general reader costs 10 % of a batch's reading.
  let field = "queueName";
  try {
    const { queueName } = item as EnqueueItem;
    field = "payload";
    const { payload } = item as EnqueueItem;
    field = "opts";
    const { opts } = item as EnqueueItem;
    // Every field an own one, even when undefined: a name set on Object.prototype later is not read through the copy.
    return { queueName, payload, opts };
  } catch (err) {
    throw new ValidationError(`enqueueBatch item ${i} could not be read`, [`reading enqueueBatch item ${i}.${field} threw: ${errorText(err)}`]);
  }
}

/** Whether `Object.prototype` or `Function.prototype` holds a field named as an item's (see `isBaseField`); each name written out, so each test is one cached lookup. */
function baseHoldsItemField(): boolean {
  const base = Function.prototype;
  return "queueName" in base || "payload" in base || "opts" in base;
}

/** Refuses `kvScan`'s options when they are not an object, or have a field they do not take. */
export function refuseUnknownKvScanFields(opts: unknown): void {
  refuseNonObject(opts, "KvScanOptions");
  refuseUnknownFields(opts, KV_SCAN_FIELDS, "KvScanOptions.", "KvScanOptions");
}

/** Refuses `listJobs`'s options (`deadJobs`'s when `dead`) when they are not an object, or have a field they do not take. */
export function refuseUnknownListFields(opts: unknown, dead: boolean): void {
  refuseNonObject(opts, dead ? "deadJobs' options" : "ListJobsOptions");
  if (dead) refuseUnknownFields(opts, DEAD_JOBS_FIELDS, "deadJobs' options.", "deadJobs' options");
  else refuseUnknownFields(opts, LIST_JOBS_FIELDS, "ListJobsOptions.", "ListJobsOptions");
}

/**
 * Refuses options `opts` of a listing (`name`) that are not an object: a
 * number, text or array read as one has none of the fields asked for, and
 * the listing ran with its defaults in silence.
 */
function refuseNonObject(opts: unknown, name: string): asserts opts is object {
  if (!isOptionObject(opts)) throw new ValidationError(`${name} must be an object, got ${describeValue(opts)}`);
}

/** Refuses a field of `waitForCompletion`'s options that they do not take. */
export function refuseUnknownWaitFields(opts: object): void {
  refuseUnknownFields(opts, WAIT_FIELDS, "waitForCompletion's options.", "waitForCompletion's options");
}

/** The refusal of a field of `nack`'s options (`deadLetter`'s when `deadLetter`) that they do not take, if any. */
export function settleOptionsRefusal(opts: unknown, deadLetter: boolean): ValidationError | undefined {
  if (opts === undefined) return undefined;
  if (!isOptionObject(opts)) return new ValidationError(`${deadLetter ? "DeadLetterOptions" : "NackOptions"} must be an object, got ${describeValue(opts)}`);
  return deadLetter
    ? unknownFieldsRefusal(opts, DEAD_LETTER_FIELDS, "DeadLetterOptions.", "DeadLetterOptions")
    : unknownFieldsRefusal(opts, NACK_FIELDS, "NackOptions.", "NackOptions");
}
