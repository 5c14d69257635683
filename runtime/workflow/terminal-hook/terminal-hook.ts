/**
 * @module The terminal hook: user code that processes a run's termination.
 *
 * Termination reaches the hook as a queue job enqueued in the settlement
 * that terminated the run, so the hook sees only committed outcomes, at
 * least once.
 */
import type { TerminalEffects } from "../steps/effects-handle.js";
import type { RunOutcome } from "../runs/run-types.js";

/**
 * Processes terminations. Delivery is at-least-once, so implementations are
 * idempotent. Throw `StepError.transient` (or any error) to retry per the
 * queue's backoff up to the terminal step's attempt limit, and
 * `StepError.permanent` to dead-letter the notification.
 *
 * @example
 * const hook: TerminalHook = {
 *   async onTermination(outcome, effects) {
 *     effects.put(`app/runs/${outcome.runId}`, new TextEncoder().encode(outcome.status));
 *   },
 * };
 */
export interface TerminalHook {
  /** Whether this termination gets a notification job. Default: `true`. */
  observes?(outcome: RunOutcome): boolean;
  /** Processes one termination; `effects` commit with the notification's acknowledgement. */
  onTermination(outcome: RunOutcome, effects: TerminalEffects): Promise<void>;
}

/** A hook that observes nothing: runs terminate with no notification job. */
export const NoopTerminalHook: TerminalHook = Object.freeze({
  observes(): boolean {
    return false;
  },
  async onTermination(): Promise<void> {},
});

/**
 * Whether `hook` wants a notification for `outcome`. A throwing `observes`
 * counts as `true`: a spurious notification is recoverable, a termination
 * that cannot commit is not.
 */
export function hookObserves(hook: TerminalHook, outcome: RunOutcome): boolean {
  if (hook.observes === undefined) return true;
  try {
    return hook.observes(outcome) !== false;
  } catch {
    return true;
  }
}
