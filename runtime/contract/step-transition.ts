/**
 * @module Typed transitions: what a workflow step's handler returns.
 *
 * A `StepTransition` carries, for the compiler only, the workflow it belongs
 * to, the steps it may continue to, and the result and error types it may
 * end the run with. All four are covariant, so a continuation to `ship`
 * (`To = "ship"`, result and error `never`) fits a step whose transitions
 * are `"ship" | "pack"`, while a continuation to a step not in that union,
 * a result of the wrong type or a typed error of the wrong type does not.
 * Transitions are built only by the step's context (`ctx.next.ship(...)`,
 * `ctx.succeed(...)`); the dispatcher recognises them by identity, so a
 * value cast into the type is refused at run time too.
 */

/** Phantom key of the compile-time half of a transition; no value has it at run time. */
declare const TRANSITION: unique symbol;

/** A transition out of a step of workflow `Workflow`: continue to one of `To`, or end with `Result` / `Err`. */
export interface StepTransition<Workflow extends string, To extends string, Result, Err> {
  readonly kind: "continue" | "succeed" | "fail" | "cancel";
  readonly [TRANSITION]: { readonly workflow: Workflow; readonly to: To; readonly result: Result; readonly error: Err };
}

/** Options of a continuation onto a waiting step. */
export interface SignalWaitOptions {
  /** How long to wait for the signal before the step is entered without one. Default: the step's `timeout_ms`. */
  readonly timeoutMs?: number;
}

/**
 * The way into a step that does not wait for a signal: call it to continue
 * at once, or `.after(delayMs, payload)` to continue after a delay.
 */
export interface Continuation<Workflow extends string, To extends string, Payload> {
  (payload: Payload): StepTransition<Workflow, To, never, never>;
  /** Continues with `payload` once `delayMs` has passed after this step settles. */
  after(delayMs: number, payload: Payload): StepTransition<Workflow, To, never, never>;
}

/**
 * The way into a step that waits for a signal: the step is entered when the
 * signal for the key built from `params` arrives, or when the timeout fires.
 */
export interface SignalContinuation<Workflow extends string, To extends string, Payload, Params> {
  /** Continues with `payload` on the signal keyed by `params`, or after the timeout with no signal. */
  onSignal(params: Params, payload: Payload, options?: SignalWaitOptions): StepTransition<Workflow, To, never, never>;
}

/** Phantom key of a child continuation's types; no value has it at run time. */
declare const CHILD_WAIT: unique symbol;

/**
 * The way into a step that waits for a child run's end (`waits_for_child`):
 * pass it to the child's `onComplete(next, payload)`. `Result` and `Err`
 * are the child workflow's, so only a child of that workflow can continue
 * here.
 */
export interface ChildContinuation<Workflow extends string, To extends string, Payload, Result, Err> {
  readonly [CHILD_WAIT]: {
    readonly workflow: Workflow;
    readonly to: To;
    readonly payload: (p: Payload) => Payload;
    readonly result: (r: Result) => Result;
    readonly error: (e: Err) => Err;
  };
}

/** @internal The run-time half of a transition, read by the dispatcher. */
export type TransitionRecord =
  | { readonly kind: "continue"; readonly to: string; readonly payload: unknown; readonly when: ContinueWhen }
  | { readonly kind: "succeed"; readonly result: unknown }
  | { readonly kind: "fail"; readonly error: unknown }
  | { readonly kind: "cancel"; readonly reason: string };

/** @internal When a continuation's next step becomes claimable. */
export type ContinueWhen =
  | { readonly kind: "immediate" }
  | { readonly kind: "after"; readonly delayMs: number }
  | { readonly kind: "onSignal"; readonly params: unknown; readonly timeoutMs: number | undefined }
  | { readonly kind: "onChild"; readonly childRunId: string };

/** Transition values built by contexts, each tied to the context that built it. */
const records = new WeakMap<object, { readonly owner: object; readonly record: TransitionRecord }>();

/** @internal Builds a transition value owned by `owner` (a step context). */
export function makeTransition(owner: object, record: TransitionRecord): StepTransition<string, never, never, never> {
  const value = Object.freeze({ kind: record.kind });
  records.set(value, { owner, record });
  return value as unknown as StepTransition<string, never, never, never>;
}

/** @internal The record behind a transition value built by `owner`, or undefined for any other value. */
export function transitionRecord(owner: object, value: unknown): TransitionRecord | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const found = records.get(value);
  return found !== undefined && found.owner === owner ? found.record : undefined;
}
