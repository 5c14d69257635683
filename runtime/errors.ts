/**
 * @module The error tree shared by every layer.
 *
 * Every error the SDK throws is a `TaqubaError` with a stable `code` (one
 * of `TAQUBA_ERROR_CODES`) and a `retryable` flag. `instanceof` is made to work across duplicate
 * copies of the package (two installs in one process, or tests that load a
 * module twice) through a `Symbol.for` brand instead of prototype identity.
 */

const BRAND = Symbol.for("taquba.error");

/**
 * Every code a `TaqubaError` carries. Each belongs to one class (the table
 * in docs/errors.md, checked by a test); `StepError` has one per kind.
 */
export const TAQUBA_ERROR_CODES = [
  // errors.ts: stores and the engine
  "PRECONDITION_FAILED",
  "VALIDATION",
  "STORE_CORRUPTED",
  "FENCED",
  "CLOSED",
  "STORE_UNAVAILABLE",
  "STORE_REQUEST_REFUSED",
  "MISSING_DEPENDENCY",
  "INJECTED_FAULT",
  "UNSUPPORTED_FORMAT",
  "UNSUPPORTED_STORE",
  "VALUE_NOT_WARMED",
  "COMPACTION_TOO_LARGE",
  // queue
  "CLAIM_LOST",
  "DUPLICATE_JOB_ID",
  "KV_VALUE_TOO_LARGE",
  "PAYLOAD_TOO_LARGE",
  "CANCEL_REQUESTED",
  "PAYLOAD_MISSING",
  "JOB_RECORD_DAMAGED",
  "STATS_PLAN_CHANGED",
  "PERMANENT",
  // workflow
  "INVALID_RUN_ID",
  "INPUT_MISMATCH",
  "RUN_ID_DRAWS_TAKEN",
  "RUN_NOT_FOUND",
  "RUN_NOT_RETRYABLE",
  "RUN_NOT_DAMAGED",
  "REPAIR_PLAN_CHANGED",
  "RESERVED_HEADER",
  "RESERVED_KEY",
  "INVALID_EFFECT",
  "EFFECTS_SEALED",
  "STEP_TRANSIENT",
  "STEP_PERMANENT",
  "GROUP_NOT_FOUND",
  "GROUP_ACTIVE",
  "GROUP_MEMBER_DAMAGED",
  "MEMO_UNAVAILABLE",
  "SCHEDULE_NOT_FOUND",
  "SCHEDULE_INPUT_FAILED",
  "CHILD_RESULT_UNAVAILABLE",
  // typed jobs and workflows
  "JOB_FAILURE",
  "JOB_FAILED",
  "JOB_CANCELLED",
  "JOB_NOT_FOUND",
  "JOBS_NOT_ATTACHED",
  "JOBS_ALREADY_ATTACHED",
  "STATE_NOT_REGISTERED",
  "CONTRACT_TOO_OLD",
  "WORKFLOW_RESULT_UNAVAILABLE",
  // clients in other processes
  "CLIENT_TIMEOUT",
  "MALFORMED_INBOX_REQUEST",
  "REQUEST_REFUSED",
  "GROUP_RECREATED",
  // webhooks
  "WEBHOOK_INVALID_REQUEST",
  "WEBHOOK_ADDRESS_REFUSED",
  "WEBHOOK_DELIVERY_FAILED",
  "WEBHOOK_REJECTED",
  "WEBHOOK_VERIFICATION_FAILED",
] as const;

/** The code of a `TaqubaError`: a closed set, so a `switch` over it is checked for exhaustiveness. */
export type TaqubaErrorCode = (typeof TAQUBA_ERROR_CODES)[number];

export class TaqubaError extends Error {
  /** A stable identifier such as `PRECONDITION_FAILED`; never a number. */
  readonly code: TaqubaErrorCode;
  /**
   * Whether repeating the operation may succeed. This one property decides
   * retries everywhere: a step whose handler throws a `TaqubaError` that is
   * not retryable fails at once instead of retrying.
   */
  readonly retryable: boolean;

  constructor(code: TaqubaErrorCode, message: string, opts: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = code;
    this.retryable = opts.retryable ?? false;
    this.name = new.target.name;
    // The names of every class from this one up to TaqubaError, so that
    // `instanceof` answers by name for errors made by another copy.
    const names: string[] = [];
    for (let c: unknown = new.target; typeof c === "function" && c !== Error; c = Object.getPrototypeOf(c)) {
      // Defined, not pushed: an index on Array.prototype (read-only, or a setter) would refuse the name or take it.
      Object.defineProperty(names, names.length, { value: (c as { name: string }).name, writable: true, enumerable: true, configurable: true });
    }
    Object.defineProperty(this, BRAND, { value: names, enumerable: false });
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    if (typeof value !== "object" || value === null) return false;
    const names = (value as { [BRAND]?: unknown })[BRAND];
    // \`this\` is the class \`instanceof\` was asked about, a subclass included: its name is what to look for.
    // biome-ignore lint/complexity/noThisInStatic: the receiver is the subclass being tested, not TaqubaError
    return Array.isArray(names) && names.includes(this.name);
  }
}

/** A create-if-absent put found the key already present. */
export class PreconditionFailedError extends TaqubaError {
  constructor(readonly key: string) {
    super("PRECONDITION_FAILED", `object "${key}" already exists; a create-if-absent put never overwrites`);
  }
}

/** An argument was malformed. Nothing durable was changed. */
export class ValidationError extends TaqubaError {
  /** One entry per violation, each naming where and what. */
  readonly issues: readonly string[];
  constructor(message: string, issues: readonly string[] = []) {
    super("VALIDATION", issues.length > 0 ? `${message}:\n  - ${issues.join("\n  - ")}` : message);
    this.issues = issues;
  }
}

/** A stored object failed its checksum or could not be decoded. */
export class StoreCorruptedError extends TaqubaError {
  /** The code of this class's errors: a subclass naming one kind of damaged record has a code of its own (each code is one class's). */
  static readonly errorCode: TaqubaErrorCode = "STORE_CORRUPTED";

  /** `advice` says what to do when the usual answer (restore a backup or remove the store's data) is not the best one. */
  constructor(
    readonly objectKey: string,
    /** What is wrong with the object, without its key or advice. */
    readonly detail: string,
    advice = "restore it from a backup or remove the store's data, nothing was replayed from it",
  ) {
    super((new.target as typeof StoreCorruptedError).errorCode, `object "${objectKey}" is corrupted (${detail}); ${advice}`);
  }
}

/** Another process opened the same store as writer; this one must stop. */
export class FencedError extends TaqubaError {
  /** What found this writer fenced, without the advice around it. */
  readonly detail: string;
  /**
   * `message` replaces the usual one (a newer writer opened the store) when
   * something else refused the writer: an open whose store itself refuses
   * its writes, as an owner's lease guard does once the lease was lost.
   */
  constructor(detail: string, opts: { message?: string; cause?: unknown } = {}) {
    super(
      "FENCED",
      opts.message ?? `this writer was fenced by a newer writer on the same store (${detail}); close it and let the newer process own the store`,
      opts.cause === undefined ? {} : { cause: opts.cause },
    );
    this.detail = detail;
  }
}

/** The engine or queue is closed (or poisoned by a failed write). */
export class ClosedError extends TaqubaError {
  constructor(what: string, cause?: unknown) {
    // A fenced writer must not be reopened while the newer owner runs: that would fence the owner in turn.
    const advice = cause instanceof FencedError ? "" : "; reopen it to recover the durable state";
    super("CLOSED", `${what} is closed${cause instanceof Error ? ` after: ${cause.message}` : ""}${advice}`, {
      cause,
    });
  }
}

/** A request to the object store failed after its retries. */
export class StoreUnavailableError extends TaqubaError {
  /** `hint`: what to do, when the store knows better than the usual reachability and credentials. */
  constructor(operation: string, key: string, cause: unknown, hint = "check the store's reachability and credentials") {
    super("STORE_UNAVAILABLE", `object store ${operation} of "${key}" failed: ${cause instanceof Error ? cause.message : String(cause)}; ${hint}`, {
      retryable: true,
      cause,
    });
  }
}

/**
 * The object store refused a request in a way retrying cannot fix: the
 * bucket or container is missing, the credentials are refused, or the
 * request was malformed. The message names the bucket or container.
 */
export class StoreRequestError extends TaqubaError {
  constructor(operation: string, key: string, detail: string, cause?: unknown) {
    super("STORE_REQUEST_REFUSED", `object store ${operation} of "${key}" was refused: ${detail}`, { cause });
  }
}

/** An optional package a feature needs is not installed. */
export class MissingDependencyError extends TaqubaError {
  constructor(feature: string, packageName: string, cause?: unknown) {
    super("MISSING_DEPENDENCY", `${feature} needs the package "${packageName}", which is not installed; run: npm install ${packageName}`, {
      cause,
    });
  }
}

/**
 * `Engine.get` or `Engine.scan` met a value a checkpoint paged out to the
 * store and the block cache no longer holds: reads are synchronous, so a
 * paged value must be warmed first (`engine.warm(keys)`, awaited until it
 * returns undefined) and read in the same turn.
 */
export class ValueNotWarmedError extends TaqubaError {
  constructor(
    /** The engine key whose value was read. */
    readonly key: string,
  ) {
    super(
      "VALUE_NOT_WARMED",
      `the value of key ${JSON.stringify(key)} is paged out to the store and was read without warming it first: loop \`for (let p = engine.warm(keys); p; p = engine.warm(keys)) await p;\` over the keys you read, then read and commit in the same turn (see docs/engine.md)`,
    );
  }
}

/**
 * A compaction running while incremental checkpoints publish takes its
 * segment numbers from a block of `segments`, and needed more: the state
 * is that many segments of `maxSegmentBytes` or more. The compaction
 * failed without publishing: nothing durable changed.
 */
export class CompactionTooLargeError extends TaqubaError {
  constructor(
    /** Segments the compaction could number. */
    readonly segments: number,
    /** The engine's `maxSegmentBytes`. */
    readonly maxSegmentBytes: number,
  ) {
    super(
      "COMPACTION_TOO_LARGE",
      `a compaction needs more than ${segments} segments of ${maxSegmentBytes} bytes (EngineOptions.maxSegmentBytes); reopen the engine with a larger maxSegmentBytes (up to 1 GiB) so the whole state fits in fewer segments`,
    );
  }
}

/** The object store lacks a capability taquba relies on; it refuses to run on it and changed nothing. */
export class UnsupportedStoreError extends TaqubaError {
  constructor(
    /** The missing capability, e.g. `conditional create (If-None-Match: *)`. */
    readonly capability: string,
    detail: string,
  ) {
    super(
      "UNSUPPORTED_STORE",
      `the object store does not support ${capability}: ${detail}; without it two writers could both acknowledge commits and lose each other's data, so taquba refuses to run on it. Use a store that supports it (see docs/reliability.md)`,
    );
  }
}
