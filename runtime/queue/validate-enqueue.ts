/**
 * @module Validation of enqueue options, shared by every enqueue path.
 */
import { ValidationError } from "../errors.js";
import { describeValue, errorText, isOptionBytes, isOptionObject, optionFields, quoteValue, readOptions } from "../option-values.js";
import { validatePriority } from "./config.js";
import { validateInstant } from "../time-bounds.js";
import { checkedHeaders } from "./headers.js";
import { isWellFormed, MAX_DEDUP_KEY_BYTES, utf8Exceeds, validateDedupKey, validateJobId, validatePositiveInt, validateQueueName } from "./names.js";
import type { DrawnIdEnqueueOptions, EnqueueItem, EnqueueOptions } from "./types.js";
import { validateDebouncePeriod } from "./admission.js";
import { DEBOUNCE_FIELDS, ENQUEUE_FIELDS, refuseUnknownDebounceFields, refuseUnknownEnqueueFields } from "./queue-option-fields.js";
import { heldPayload, payloadAtCall } from "./payload-at-call.js";

/**
 * Whether `Object.prototype` or `Function.prototype` holds a field named
 * as an enqueue option (set there for every object: see `isBaseField`),
 * when the options are read the slower way that skips it. Each name
 * written out, so each test is one cached lookup: this runs per job.
 */
function baseHoldsEnqueueField(): boolean {
  const base = Function.prototype;
  return "priority" in base || "runAt" in base || "dedupKey" in base || "maxAttempts" in base || "headers" in base || "jobId" in base || "debounce" in base;
}

/**
 * The options as they are now, validated: a copy taken field by field
 * (headers and debounce too), each read once, then checked. Callers stage
 * or commit the copy, so options changed after the call (an options object
 * reused for the next job, a header set for the next step) change nothing
 * of this job, and what is written is what was checked. Throws
 * `ValidationError` naming the first bad field, before anything is written.
 */
export function validateEnqueueOptions(opts: EnqueueOptions, payload: unknown): EnqueueOptions {
  if (!isOptionBytes(payload)) throw new ValidationError("a job payload must be a Uint8Array");
  if (!isOptionObject(opts)) throw new ValidationError(`enqueue options must be an object, got ${describeValue(opts)}`);
  // Options this function returned (frozen) are staged again as they are (a step's effects copied into a settlement's).
  if (CheckedOptions.made(opts)) return opts;
  refuseUnknownEnqueueFields(opts);
  // Each field read once, by name rather than by a loop over a field list: this runs for every job enqueued.
  let field = "priority";
  let priority: EnqueueOptions["priority"];
  let runAt: EnqueueOptions["runAt"];
  let dedupKey: EnqueueOptions["dedupKey"];
  let maxAttempts: EnqueueOptions["maxAttempts"];
  let jobId: EnqueueOptions["jobId"];
  let headers: EnqueueOptions["headers"];
  let debounce: EnqueueOptions["debounce"];
  try {
    if (baseHoldsEnqueueField()) {
      ({ priority, runAt, dedupKey, maxAttempts, jobId, headers, debounce } = readOptions(opts, ENQUEUE_FIELDS, "EnqueueOptions") as EnqueueOptions);
    } else {
      priority = opts.priority;
      field = "runAt";
      runAt = opts.runAt;
      field = "dedupKey";
      dedupKey = opts.dedupKey;
      field = "maxAttempts";
      maxAttempts = opts.maxAttempts;
      field = "jobId";
      jobId = opts.jobId;
      field = "headers";
      headers = opts.headers;
      field = "debounce";
      debounce = opts.debounce;
    }
  } catch (err) {
    if (err instanceof ValidationError) throw err;
    throw new ValidationError(`reading EnqueueOptions.${field} threw: ${errorText(err)}`);
  }
  const own = new CheckedOptions(MINT);
  if (priority !== undefined) {
    validatePriority(priority, "EnqueueOptions.priority");
    own.priority = priority;
  }
  if (runAt !== undefined) {
    validateInstant("EnqueueOptions.runAt", runAt);
    own.runAt = runAt;
  }
  if (dedupKey !== undefined) {
    validateDedupKey(dedupKey);
    own.dedupKey = dedupKey;
  }
  if (maxAttempts !== undefined) {
    validatePositiveInt("EnqueueOptions.maxAttempts", maxAttempts);
    own.maxAttempts = maxAttempts;
  }
  if (jobId !== undefined) {
    validateJobId(jobId);
    own.jobId = jobId;
  }
  if (headers !== undefined) {
    keepHeaders(own, checkedHeaders(headers));
  }
  if (debounce !== undefined) {
    if (!isOptionObject(debounce)) throw new ValidationError(`EnqueueOptions.debounce must be an object { key, periodMs }, got ${describeValue(debounce)}`);
    refuseUnknownDebounceFields(debounce);
    const { key, periodMs } = readOptions(debounce, DEBOUNCE_FIELDS, "EnqueueOptions.debounce");
    validateDebounceKey(key);
    validateDebouncePeriod("EnqueueOptions.debounce.periodMs", periodMs);
    if (runAt !== undefined) {
      throw new ValidationError("EnqueueOptions.debounce cannot be combined with runAt: a debounced job runs when its window ends");
    }
    own.debounce = Object.freeze({ key, periodMs });
  }
  return Object.freeze(own);
}

/**
 * What this module alone hands the checked classes' constructors. A caller
 * reaches them through a staged item (`item.constructor`, or a class
 * extending it); without this, `new` would give it a branded object the
 * commit takes unchecked.
 */
const MINT = Symbol("checked enqueue");

function refuseUnminted(mint: symbol): void {
  if (mint !== MINT)
    throw new ValidationError(
      "enqueue items and options are made by SettlementEffects.enqueue (or given as plain objects { queueName, payload, opts }), not by calling the constructor of a staged one",
    );
}

/**
 * Options `validateEnqueueOptions` made: frozen once filled in, so still as
 * they were checked. The private field is the brand (`#checked in x`): a
 * copy, a look-alike or an object inheriting from one lacks it, and
 * telling costs no weak-table insert or lookup. The fields are declared
 * only (none is defined until set), so a field left out is absent, as in
 * the caller's options.
 */
class CheckedOptions implements DrawnIdEnqueueOptions {
  declare priority?: number;
  declare runAt?: number;
  declare dedupKey?: string;
  declare maxAttempts?: number;
  declare jobId?: string;
  declare headers?: Record<string, string>;
  declare debounce?: { key: string; periodMs: number };
  declare jobIdDrawn?: true;
  readonly #checked = true;

  constructor(mint: symbol) {
    refuseUnminted(mint);
  }

  static made(x: object): boolean {
    return #checked in x;
  }
}
// A field left out reads as undefined, never as one set on `Object.prototype`: the commit reads these options by name.
Object.setPrototypeOf(CheckedOptions.prototype, null);

/** An enqueue item `checkedEnqueueItem` made, frozen (see `CheckedOptions` for the brand). */
class CheckedItem implements EnqueueItem {
  readonly #checked = true;
  /** `payload` is an exact copy made for this job alone (see `rebuiltEnqueueItem`); private, so the item's fields stay the three an `EnqueueItem` has. */
  readonly #payloadOwned: boolean;

  constructor(
    mint: symbol,
    readonly queueName: string,
    readonly payload: Uint8Array,
    readonly opts: EnqueueOptions,
    payloadOwned = false,
  ) {
    refuseUnminted(mint);
    this.#payloadOwned = payloadOwned;
  }

  static made(x: object): boolean {
    return #checked in x;
  }

  /** Whether `x` is an item made with an owned payload; false for anything else. */
  static ownsPayload(x: object): boolean {
    return #payloadOwned in x && (x as CheckedItem).#payloadOwned;
  }
}

/**
 * Whether `item`'s payload is an array made for its job alone, exactly its
 * bytes, which nothing else holds or changes: a chained claim hands it out
 * as it is (see `rebuiltEnqueueItem`). False for any other item.
 */
export function payloadOwnedBy(item: EnqueueItem): boolean {
  return CheckedItem.ownsPayload(item);
}

/**
 * An enqueue of `payload` to `queueName` with `opts`, checked and frozen
 * (see `validateEnqueueOptions`), for a commit to take without checking it
 * again (`ownEnqueueItem`). The item holds a copy of the payload's bytes as
 * they are now (see `heldPayload`): a staged enqueue commits later, and the
 * caller may change its array meanwhile.
 */
export function checkedEnqueueItem(queueName: string, payload: Uint8Array, opts: EnqueueOptions | undefined): EnqueueItem {
  validateQueueName(queueName);
  const own = validateEnqueueOptions(opts ?? {}, payload);
  return Object.freeze(new CheckedItem(MINT, queueName, heldPayload(payload, queueName, own.jobId), own));
}

/**
 * `checkedEnqueueItem` for an enqueue that encodes its record in this turn:
 * a plain array is taken as it is (see `payloadAtCall`), since nothing can
 * change it before then. Copy the item's payload (`heldItem`) before
 * holding it past the turn.
 */
export function enqueuedNowItem(queueName: string, payload: Uint8Array, opts: EnqueueOptions | undefined): EnqueueItem {
  validateQueueName(queueName);
  const own = validateEnqueueOptions(opts ?? {}, payload);
  return Object.freeze(new CheckedItem(MINT, queueName, payloadAtCall(payload, queueName, own.jobId), own));
}

/** `item` (one `enqueuedNowItem` made) holding a copy of its payload, for a store after this turn. */
export function heldItem(item: EnqueueItem): EnqueueItem {
  const payload = heldPayload(item.payload, item.queueName, item.opts?.jobId);
  return Object.freeze(new CheckedItem(MINT, item.queueName, payload, item.opts ?? Object.freeze(new CheckedOptions(MINT))));
}

/**
 * What a caller re-enqueuing a job the queue checked builds from it: the
 * workflow's next step copies its step job's headers (checked when that job
 * was enqueued, under the run's tighter header limits) into a fresh object
 * with a few short headers of its own, names it with an id the queue drew
 * and a dedup key made of a checked run id, and carries the job's priority
 * and attempts.
 */
export interface RebuiltEnqueueOptions {
  readonly jobId: string;
  /** `jobId` was drawn by `nextJobId` of the queue this item is committed to (see `DrawnIdEnqueueOptions`); only the options' own field counts. */
  readonly jobIdDrawn?: boolean;
  readonly dedupKey: string;
  readonly priority: number;
  readonly maxAttempts: number;
  readonly headers: Record<string, string>;
  readonly runAt?: number;
}

/**
 * @internal `checkedEnqueueItem` for `RebuiltEnqueueOptions`: the strings
 * (headers, job id, dedup key) are not checked again, since every one was
 * checked or drawn by a queue before (the header pass cost 0.8 % of a step's
 * CPU); the numbers are, at the price of a comparison each. `opts.headers` is
 * frozen and taken as it is: the caller built it for this item alone. Not
 * exported by the package: a caller cannot stage unchecked options.
 * `payloadOwned`: the caller made `payload` for this job alone, an array
 * exactly its bytes that nothing else holds, reads or changes after (the
 * workflow's copy of a runner's returned payload), so the job claimed in
 * its settlement's commit is handed that very array (see `payloadOwnedBy`).
 */
export function rebuiltEnqueueItem(queueName: string, payload: Uint8Array, opts: RebuiltEnqueueOptions, payloadOwned = false): EnqueueItem {
  if (!(payload instanceof Uint8Array)) throw new ValidationError("a job payload must be a Uint8Array");
  const { jobId, jobIdDrawn, dedupKey, priority, maxAttempts, headers, runAt } = opts;
  validatePriority(priority, "EnqueueOptions.priority");
  validatePositiveInt("EnqueueOptions.maxAttempts", maxAttempts);
  const own = new CheckedOptions(MINT);
  own.priority = priority;
  if (runAt !== undefined) {
    validateInstant("EnqueueOptions.runAt", runAt);
    own.runAt = runAt;
  }
  own.dedupKey = dedupKey;
  own.maxAttempts = maxAttempts;
  own.jobId = jobId;
  // Never one set on Object.prototype: that would skip the look-up of an id the queue did not draw.
  if (jobIdDrawn === true && Object.hasOwn(opts, "jobIdDrawn")) own.jobIdDrawn = true;
  keepHeaders(own, headers);
  return Object.freeze(new CheckedItem(MINT, queueName, payload, Object.freeze(own), payloadOwned));
}

/** Sets `headers` (frozen, taken as they are) on `own` unless there are none: none is stored as none (the record's field left out), not as an empty object. */
function keepHeaders(own: CheckedOptions, headers: Record<string, string>): void {
  for (const _ in headers) {
    own.headers = Object.freeze(headers);
    return;
  }
}

/** What a run's submission builds its first step's options from (see `drawnStepOptions`). */
export interface SubmittedStepOptions {
  readonly jobId: string;
  readonly dedupKey: string;
  readonly headers: Record<string, string>;
  readonly priority?: number | undefined;
  readonly maxAttempts?: number | undefined;
  readonly runAt?: number | undefined;
}

/**
 * @internal `drawnIdOptions` for options a run's submission built from what
 * it checked: the run's headers (checked under the run's tighter limits)
 * with short ones of the runtime's own, in a fresh object built for these
 * options alone (frozen and taken as it is), a job id `nextJobId` of this
 * queue drew and a dedup key made of a checked run id. As in
 * `rebuiltEnqueueItem`, the strings are not checked again and the numbers
 * are. Not exported by the package: a caller cannot stage unchecked options.
 */
export function drawnStepOptions(opts: SubmittedStepOptions): EnqueueOptions {
  const { jobId, dedupKey, headers, priority, maxAttempts, runAt } = opts;
  const own = new CheckedOptions(MINT);
  if (priority !== undefined) {
    validatePriority(priority, "EnqueueOptions.priority");
    own.priority = priority;
  }
  if (runAt !== undefined) {
    validateInstant("EnqueueOptions.runAt", runAt);
    own.runAt = runAt;
  }
  own.dedupKey = dedupKey;
  if (maxAttempts !== undefined) {
    validatePositiveInt("EnqueueOptions.maxAttempts", maxAttempts);
    own.maxAttempts = maxAttempts;
  }
  own.jobId = jobId;
  keepHeaders(own, headers);
  own.jobIdDrawn = true;
  return Object.freeze(own);
}

/** The payload `drawnIdOptions` checks options against: only the options are checked there. */
const NO_PAYLOAD = new Uint8Array(0);

/**
 * @internal `opts` checked (see `validateEnqueueOptions`), with its `jobId`
 * marked as drawn by `nextJobId` of the queue the options are committed to
 * (see `DrawnIdEnqueueOptions`): a run's first step or a redriven step, whose
 * records name the id before the enqueue. The insert then looks the id up
 * only when a caller's id noted since the draw may equal it. Never for an id
 * a caller chose, nor one drawn by another queue: that one is looked up.
 */
export function drawnIdOptions(opts: EnqueueOptions): EnqueueOptions {
  const checked = validateEnqueueOptions(opts, NO_PAYLOAD);
  if (checked.jobId === undefined) return checked;
  const own = new CheckedOptions(MINT);
  // The checked copy's own fields, as they are: no field read from the caller's object again.
  Object.assign(own, checked);
  own.jobIdDrawn = true;
  return Object.freeze(own);
}

/**
 * `item` when `checkedEnqueueItem` made it, else a checked copy: an item
 * pushed into `SettlementEffects.enqueues` by hand was never checked.
 * Throws `ValidationError` as the enqueue would.
 */
export function ownEnqueueItem(item: EnqueueItem): EnqueueItem {
  if (item === null || typeof item !== "object") throw new ValidationError("an enqueue item must be an object { queueName, payload, opts }");
  if (CheckedItem.made(item)) return item;
  // A field that throws is named in the refusal's issues.
  const { queueName, payload, opts } = readOptions(item, ITEM_KEYS, "an enqueue item of the effects") as EnqueueItem;
  return checkedEnqueueItem(queueName, payload, opts);
}

/** The payload of `item` when `checkedEnqueueItem` (or a builder like it) made it, read from its own frozen field; else undefined, and nothing of `item` is read. */
export function checkedPayloadOf(item: EnqueueItem): Uint8Array | undefined {
  return item !== null && typeof item === "object" && CheckedItem.made(item) ? item.payload : undefined;
}

const ITEM_KEYS = optionFields<EnqueueItem>({ queueName: true, payload: true, opts: true });

/** A debounce key is text as a dedup key is: 1-512 bytes of well-formed UTF-8. */
export function validateDebounceKey(key: unknown): asserts key is string {
  if (typeof key !== "string" || key.length === 0 || !isWellFormed(key) || utf8Exceeds(key, MAX_DEDUP_KEY_BYTES)) {
    throw new ValidationError(`invalid debounce key ${quoteValue(key)}; use 1-${MAX_DEDUP_KEY_BYTES} bytes of well-formed UTF-8 text`);
  }
}
