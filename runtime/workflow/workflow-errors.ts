/**
 * @module Errors of the workflow runtime.
 *
 * `StepError` is what a runner throws to steer retries; every other class
 * here reports a caller's mistake and is thrown before anything durable
 * changes.
 */
import { TaqubaError } from "../errors.js";
import { showLoneSurrogates } from "../option-values.js";
import { instantText } from "../time-bounds.js";

/** A run id that is empty, too long or uses characters outside `[A-Za-z0-9_-]`. */
export class InvalidRunIdError extends TaqubaError {
  constructor(
    readonly runId: string,
    problem: string,
  ) {
    super(
      "INVALID_RUN_ID",
      `invalid run id ${JSON.stringify(runId.slice(0, 200))}: ${problem}; pass an id of 1 to 128 characters of [A-Za-z0-9_-], or omit it to get a ULID`,
    );
  }
}

/** A submission reused the id of an active run with a different input. */
export class InputMismatchError extends TaqubaError {
  constructor(readonly runId: string) {
    super(
      "INPUT_MISMATCH",
      `run "${runId}" is already active with a different input; a run id is idempotent on its input, so pick a fresh run id for a new run`,
    );
  }
}

/**
 * A submission without a run id (or under an id a client drew) found every
 * id it drew already taken by another run, `draws` times: the id source
 * repeats ids (a stubbed or seeded generator), which a ULID drawn from the
 * clock and randomness never does. Nothing was submitted.
 */
export class RunIdDrawsTakenError extends TaqubaError {
  constructor(
    readonly queueName: string,
    readonly draws: number,
    readonly lastRunId: string,
  ) {
    super(
      "RUN_ID_DRAWS_TAKEN",
      `a submission to queue "${queueName}" drew ${draws} run ids and another run already held each one (the last "${lastRunId}"), so nothing was submitted; ` +
        "the run id source repeats ids (a stubbed or seeded id generator): fix it, or pass a run id of your own",
    );
  }
}

/** The runtime has no record of a run: never submitted, or terminated and swept. */
export class RunNotFoundError extends TaqubaError {
  constructor(readonly runId: string) {
    super("RUN_NOT_FOUND", `no record of run "${runId}": it was never submitted to this queue, or it terminated and its records were swept`);
  }
}

/**
 * `retryRun` (or `retryJob`) refused: the run is still active, it
 * succeeded, or the step asked for cannot be re-run (`reason` says which).
 * Nothing was changed.
 */
export class RunNotRetryableError extends TaqubaError {
  constructor(
    readonly runId: string,
    readonly reason: "active" | "succeeded" | "superseded" | "no_such_step" | "payload_not_kept" | "signal_key_taken",
    detail: string,
  ) {
    super("RUN_NOT_RETRYABLE", `run "${runId}" cannot be retried: ${detail}`);
  }
}

/** Every `RunNotDamagedError.reason`. */
const RUN_NOT_DAMAGED_REASONS = ["active", "ended", "changing", "index_unchecked", "active_kept"] as const;
export type RunNotDamagedReason = (typeof RUN_NOT_DAMAGED_REASONS)[number];

/** Whether `v` is one of `RUN_NOT_DAMAGED_REASONS`. */
export function isRunNotDamagedReason(v: unknown): v is RunNotDamagedReason {
  return (RUN_NOT_DAMAGED_REASONS as readonly unknown[]).includes(v);
}

/**
 * `repairRun` refused: the run's records all read (`reason` says whether it
 * is active or ended, or `changing` when its records kept changing under
 * the repair, or `index_unchecked` when no record placed its listing entry
 * and no scan looked for it, or `active_kept` when a removal was asked of
 * an active run without `endActive`). Nothing was changed: cancel or retry
 * it instead, or repair it again with `scanIndex` (or remove with `endActive`).
 */
export class RunNotDamagedError extends TaqubaError {
  constructor(
    readonly runId: string,
    readonly reason: RunNotDamagedReason,
  ) {
    super(
      "RUN_NOT_DAMAGED",
      reason === "active_kept"
        ? `run "${runId}" was not removed: it is active and its records read; cancel it first (taquba runs cancel, cancel), ` +
            "or remove it with --end-active (endActive: true), which ends it failed and then removes it"
        : reason === "changing"
          ? `run "${runId}" was not repaired: its records changed while the repair read them, so a step is moving it; look at it again with taquba runs show`
          : reason === "index_unchecked"
            ? `run "${runId}" was not repaired: its records read, but neither its run record nor its end record holds its submission time, which places its listing entry, so that entry was not checked; ` +
              "repair it with --scan-index (scanIndex: true) to look for the entry through the whole run listing (one listing read per 1,000 runs)"
            : `run "${runId}" is not damaged: its records read, so there is nothing to repair; ${reason === "active" ? "cancel it (taquba runs cancel, cancel) to end it" : "retry it (taquba runs retry, retryRun) to run it again"}`,
    );
  }
}

/**
 * `repairRun` with `plan` refused: the run's records no longer give the
 * plan confirmed (a dry run's `RepairOutcome.plan`, a removal's with
 * `remove`); they changed since it was made, or between the repair's read
 * and its commit. Nothing was written: look at the run again, and confirm
 * the new plan.
 */
export class RepairPlanChangedError extends TaqubaError {
  constructor(readonly runId: string) {
    super(
      "REPAIR_PLAN_CHANGED",
      `run "${runId}" was not repaired or removed: the run changed since you looked, so the repair would not do what was confirmed; ` +
        "review the new plan (taquba runs repair --dry-run, dryRun: true; with --remove, remove: true for a removal) and confirm that one",
    );
  }
}

/**
 * `step.children.outcome(signal)`: the child's end says its result (or a
 * whole error text) stayed in the child's result record, and that record
 * cannot be read. `reason`: `removed` (the child's records are gone) or
 * `replaced` (the child was re-opened and its record of that end went with
 * it). The message says what happened and what to do.
 */
export class ChildResultUnavailableError extends TaqubaError {
  constructor(
    readonly childRunId: string,
    readonly reason: "removed" | "replaced",
    detail: string,
  ) {
    super("CHILD_RESULT_UNAVAILABLE", `the result of child run "${childRunId}" cannot be read: ${detail}`);
  }
}

/** No schedule of that id exists on the runtime's step queue. */
export class ScheduleNotFoundError extends TaqubaError {
  constructor(readonly scheduleId: string) {
    super("SCHEDULE_NOT_FOUND", `no schedule "${scheduleId}" exists on this step queue; create it with runtime.schedules.upsert (or from a spec's schedules)`);
  }
}

/**
 * A schedule's input handler could not give the input of a tick: it threw
 * (the cause), returned something other than bytes or too many bytes, or
 * this process has no handler for the schedule. No run was started.
 */
export class ScheduleInputError extends TaqubaError {
  constructor(
    readonly scheduleId: string,
    readonly tickMs: number,
    problem: string,
    cause?: unknown,
  ) {
    super(
      "SCHEDULE_INPUT_FAILED",
      `schedule "${scheduleId}" could not compute the input of its tick at ${instantText(tickMs)}: ${problem}; no run started (run the tick again with backfill once fixed)`,
      cause === undefined ? {} : { cause },
    );
  }
}

/** A user header used the `workflow.` prefix the runtime reserves for step jobs. */
export class ReservedHeaderError extends TaqubaError {
  constructor(readonly header: string) {
    super("RESERVED_HEADER", `header "${header}" uses the reserved prefix "workflow."; rename it, the runtime sets those headers itself`);
  }
}

/** A KV key used the `workflow/` prefix, or a memo key the runtime reserves. */
export class ReservedKeyError extends TaqubaError {
  constructor(
    readonly key: string,
    what: string,
  ) {
    super("RESERVED_KEY", `key "${key}" is reserved (${what}); choose a key outside it`);
  }
}

/** A staged KV operation broke a rule of the effects handle. */
export class InvalidEffectError extends TaqubaError {
  constructor(
    readonly key: string,
    problem: string,
  ) {
    super("INVALID_EFFECT", `cannot stage an effect on key "${key}": ${problem}`);
  }
}

/** An effects handle was used after its step returned. */
export class EffectsSealedError extends TaqubaError {
  constructor() {
    super("EFFECTS_SEALED", "the step's effects were already committed with its settlement; stage effects before the step returns");
  }
}

/** How a step error is retried: transient errors retry with backoff, permanent ones dead-letter at once. */
export type StepErrorKind = "transient" | "permanent";

function describe(cause: unknown): string {
  if (cause instanceof Error) return cause.message;
  if (typeof cause === "string") return cause;
  try {
    return JSON.stringify(cause) ?? String(cause);
  } catch {
    return String(cause);
  }
}

/**
 * What a step error may say to the outside world (a run's callback
 * receiver, say): the raw text of the cause often holds internal detail
 * (hosts, connection strings, stack frames), so only what is given here is
 * ever sent out.
 */
export interface StepErrorExposure {
  /** A message the application chose to expose, e.g. "the card was declined". */
  publicMessage?: string;
  /** A stable code the receiver can act on, e.g. "card_declined". Default: the cause's taquba error code, else STEP_PERMANENT / STEP_TRANSIENT. */
  code?: string;
}

/**
 * What a runner throws to fail a step. A transient error retries per the
 * queue's backoff up to the attempt limit and then dead-letters the step; a
 * permanent one dead-letters it at once. Any other thrown value is judged by
 * `retryable` alone (see `kindOf`).
 *
 * @example
 * throw StepError.permanent(new Error("order not found"));
 * // With text fit for the run's callback receiver (the cause's text is never sent):
 * throw StepError.permanent(err, { publicMessage: "the card was declined", code: "card_declined" });
 */
export class StepError extends TaqubaError {
  readonly kind: StepErrorKind;
  /** What may be shown outside the process; undefined when the application exposed nothing. */
  readonly publicMessage: string | undefined;
  /** The code shown outside the process (see {@link StepErrorExposure.code}). */
  readonly publicCode: string;

  private constructor(kind: StepErrorKind, cause: unknown, exposure: StepErrorExposure) {
    super(kind === "transient" ? "STEP_TRANSIENT" : "STEP_PERMANENT", describe(cause), { retryable: kind === "transient", cause });
    this.kind = kind;
    this.publicMessage = exposure.publicMessage;
    this.publicCode = exposure.code ?? (cause instanceof TaqubaError ? cause.code : this.code);
  }

  /** A failure that may pass on a retry (a timeout, a 503). */
  static transient(cause: unknown, exposure: StepErrorExposure = {}): StepError {
    return new StepError("transient", cause, exposure);
  }

  /** A failure no retry can fix (bad input, a 404). */
  static permanent(cause: unknown, exposure: StepErrorExposure = {}): StepError {
    return new StepError("permanent", cause, exposure);
  }

  /**
   * The kind of any thrown value: a `StepError`'s own kind; permanent for
   * any other `TaqubaError` that is not `retryable` (a `PermanentError`, a
   * `ValidationError`, a `JobsNotAttachedError`...); transient for the rest,
   * errors of other libraries included.
   */
  static kindOf(err: unknown): StepErrorKind {
    if (err instanceof StepError) return err.kind;
    return err instanceof TaqubaError && !err.retryable ? "permanent" : "transient";
  }

  /** Any thrown value as a `StepError` of the kind `kindOf` gives it. */
  static from(err: unknown): StepError {
    if (err instanceof StepError) return err;
    return new StepError(StepError.kindOf(err), err, {});
  }
}

/**
 * The text of any thrown value, for `lastError` and terminal records; a lone
 * surrogate in it is written as its escape (UTF-8 would store U+FFFD).
 */
export function errorText(err: unknown): string {
  return showLoneSurrogates(describe(err));
}

/**
 * The memo store did not answer a memo read or write after its retries.
 * Retryable: the worker puts the step back without counting an attempt,
 * and the step runs again (its earlier memo entries still replay).
 */
export class MemoUnavailableError extends TaqubaError {
  constructor(
    readonly runId: string,
    /** The step number, or `"run"` for the run memo. */
    readonly scope: number | "run",
    readonly memoKey: string,
    operation: "read" | "write",
    cause: unknown,
  ) {
    const where = scope === "run" ? "the run memo" : `the memo of step ${scope}`;
    const key = memoKey.length > 80 ? `${memoKey.slice(0, 80)}...` : memoKey;
    super(
      "MEMO_UNAVAILABLE",
      `could not ${operation} memo key ${JSON.stringify(key)} in ${where} of run "${runId}": ${describe(cause)}; the object store kept failing, so the step will run again without counting an attempt`,
      { retryable: true, cause },
    );
  }
}

/** Whether `err` (or the error it wraps, such as a `StepError` around it) is a memo store fault rather than the runner's own failure. */
export function isMemoFault(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (e instanceof MemoUnavailableError) return true;
  }
  return false;
}
