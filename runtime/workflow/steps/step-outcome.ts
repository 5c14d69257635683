/**
 * @module What a runner decides at the end of a step.
 *
 * Both types are plain tagged unions so they encode into replay records and
 * compare structurally; the companion objects only build them.
 */
import { ValidationError } from "../../errors.js";
import { checkCorrelationKey } from "../limits.js";
import { isWellFormed } from "../../queue/names.js";
import { describeValue, quoteValue } from "../../option-values.js";
import { MAX_DELAY_MS, validateDelay } from "../../time-bounds.js";

/**
 * When the next step of a continuing run becomes claimable.
 *
 * @example
 * Trigger.after(60_000);
 * Trigger.onSignal("payment:o-1", 7 * 24 * 3600_000);
 */
export type Trigger =
  | { readonly kind: "immediate" }
  | { readonly kind: "after"; readonly delayMs: number }
  | { readonly kind: "onSignal"; readonly correlationKey: string; readonly timeoutMs: number };

function checkDuration(name: string, ms: number): number {
  return validateDelay(name, ms);
}

/** Constructors for {@link Trigger}. */
export const Trigger = {
  /** Claimable at once. */
  immediate(): Trigger {
    return { kind: "immediate" };
  },
  /** Claimable `delayMs` after the step settles. */
  after(delayMs: number): Trigger {
    return { kind: "after", delayMs: checkDuration("Trigger.after delay", delayMs) };
  },
  /** Claimable when a signal for `correlationKey` arrives, or after `timeoutMs` with no signal. */
  onSignal(correlationKey: string, timeoutMs: number): Trigger {
    if (typeof correlationKey !== "string" || correlationKey.length === 0) {
      throw new ValidationError("a signal correlation key must be a non-empty string");
    }
    // The bound of `WorkflowRuntime.signal`, checked here so the runner learns it, not a later settlement.
    checkCorrelationKey(correlationKey);
    return { kind: "onSignal", correlationKey, timeoutMs: checkDuration("Trigger.onSignal timeout", timeoutMs) };
  },
} as const;

/**
 * Checks a fail or cancel reason: the run's result record keeps it as UTF-8,
 * which would turn a lone surrogate into U+FFFD without a word.
 */
export function checkReason(what: string, reason: unknown): string {
  if (typeof reason !== "string") throw new ValidationError(`${what}'s reason must be a string, got ${describeValue(reason)}`);
  if (!isWellFormed(reason)) {
    throw new ValidationError(
      `${what}'s reason ${quoteValue(reason)} is not well-formed text (it has a lone surrogate, which UTF-8 cannot store); fix the string`,
    );
  }
  return reason;
}

/**
 * A runner's verdict on a step. `continue` enqueues the next step with
 * `payload`; `succeed`, `fail` and `cancel` terminate the run and acknowledge
 * normally (a `fail` is a verdict, not an infrastructure error, so it does
 * not dead-letter).
 *
 * @example
 * return StepOutcome.continueNow(next);
 * return StepOutcome.succeed(new TextEncoder().encode("done"));
 */
export type StepOutcome =
  | { readonly kind: "continue"; readonly payload: Uint8Array; readonly when: Trigger }
  | { readonly kind: "succeed"; readonly result: Uint8Array }
  | { readonly kind: "fail"; readonly reason: string }
  | { readonly kind: "cancel"; readonly reason: string };

/** Constructors for {@link StepOutcome}. */
export const StepOutcome = {
  /** Continue with `payload`, claimable when `when` fires. */
  continue(payload: Uint8Array, when: Trigger): StepOutcome {
    return { kind: "continue", payload, when };
  },
  /** Continue with `payload` at once. */
  continueNow(payload: Uint8Array): StepOutcome {
    return { kind: "continue", payload, when: Trigger.immediate() };
  },
  /** Continue with `payload` after `delayMs`. */
  continueAfter(payload: Uint8Array, delayMs: number): StepOutcome {
    return { kind: "continue", payload, when: Trigger.after(delayMs) };
  },
  /** Continue with `payload` once a signal for `correlationKey` arrives, or after `timeoutMs`. */
  continueOnSignal(payload: Uint8Array, correlationKey: string, timeoutMs: number): StepOutcome {
    return { kind: "continue", payload, when: Trigger.onSignal(correlationKey, timeoutMs) };
  },
  /**
   * Continue with `payload` once the child run whose start returned
   * `completionKey` ends (`step.children.start(...)`); the next step's
   * signal is the child's end, read with `step.children.outcome(step.signal)`.
   * The wait has no timeout short of {@link MAX_DELAY_MS} unless given.
   */
  continueOnChild(payload: Uint8Array, completionKey: string, timeoutMs: number = MAX_DELAY_MS): StepOutcome {
    return { kind: "continue", payload, when: Trigger.onSignal(completionKey, timeoutMs) };
  },
  /** Terminate the run as succeeded with `result`. */
  succeed(result: Uint8Array): StepOutcome {
    return { kind: "succeed", result };
  },
  /** Terminate the run as failed with `reason` (well-formed text: it is stored as UTF-8). */
  fail(reason: string): StepOutcome {
    return { kind: "fail", reason: checkReason("StepOutcome.fail", reason) };
  },
  /** Terminate the run as cancelled with `reason` (well-formed text: it is stored as UTF-8). */
  cancel(reason: string): StepOutcome {
    return { kind: "cancel", reason: checkReason("StepOutcome.cancel", reason) };
  },
} as const;
