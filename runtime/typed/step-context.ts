/**
 * @module What a typed workflow step's handler receives beside its payload:
 * the delivery (run id, headers, memo, effects, lease...), the typed signal
 * of a waiting step, and the builders of the transitions it may return.
 */

import type { JobHost } from "../jobs/job-context.js";
import type { HeaderValues } from "../contract/job-definition.js";
import type { LeaseHandle } from "../queue/types.js";
import type { Building } from "../queue/cancel-state.js";
import { filledWithoutPrototype } from "../own-fields.js";
import { isSharedLastAttemptAnswer } from "../queue/claimed-job.js";
import type { Step } from "../workflow/steps/delivery.js";
import type { EffectsHandle, KvReadHandle } from "../workflow/steps/effects-handle.js";
import type { Memo } from "../workflow/memo/memo.js";
import type { RunId } from "../workflow/runs/run-id.js";
import { makeTransition, type StepTransition, type TransitionRecord } from "../contract/step-transition.js";
import type { AnyWorkflowDefinition, WorkflowDefinition, WorkflowStepDefinition } from "../contract/workflow-definition.js";
import { childContinuation, childWorkflowsOf } from "./child-workflows.js";

/**
 * The context of one delivery of one step of workflow `Workflow`.
 * `Next` holds one continuation per step this step may continue to;
 * `Signal` is the waited-for signal's payload (or `null` when the wait
 * timed out) for a waiting step, the child's end for a step that waits for
 * a child run, `undefined` for any other. `Workflows` holds the workflows
 * the step may start as child runs (`ctx.workflows.<package>.<workflow>`).
 */
export interface WorkflowStepContext<
  Workflow extends string,
  Next,
  Result,
  Err,
  Headers extends HeaderValues,
  Signal = undefined,
  Workflows = Readonly<Record<never, never>>,
> {
  /** The qualified workflow name. */
  readonly workflow: Workflow;
  /** This step's name in the spec. */
  readonly stepName: string;
  /** The underlying seed step (bytes payload), for what the typed surface does not cover. */
  readonly step: Step;
  readonly runId: RunId;
  /** Zero-based number of this step in the run (loops and retries of earlier steps count). */
  readonly stepNumber: number;
  /** The submitter's headers, validated on submit. */
  readonly headers: Headers;
  /** This delivery's attempt, from 1. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** Whether a transient error thrown now dead-letters the step (and fails the run). */
  isLastAttempt(): boolean;
  /** Aborted when the run is cancelled from outside; return `ctx.cancel()` early when it fires. */
  readonly cancelSignal: AbortSignal;
  /** Extends the step's lease before a slow call. */
  readonly lease: LeaseHandle;
  /** Durable memo scoped to this run and step: memoize non-idempotent calls so a retry does not repeat them. */
  readonly memo: Memo;
  /** Durable memo shared by every step of the run. */
  readonly runMemo: Memo;
  /** Caller KV effects committed with this step's settlement, whatever transition it returns. */
  readonly effects: EffectsHandle;
  /** Committed caller KV reads. */
  readonly kv: KvReadHandle;
  /** The signal that entered a waiting step (validated), `null` when its wait timed out; `undefined` for other steps. */
  readonly signal: Signal;
  /**
   * The typed jobs of this runtime: `ctx.jobs.submit(def, input, { idempotencyKey })`
   * enqueues a job on the same step queue, `ctx.jobs.handle(def, id)` finds one.
   * A submission is not atomic with this step's settlement: derive its
   * idempotency key from the run id so a retried step finds the same job.
   * Throws `JobsNotAttachedError` when no `JobRunner` serves this runtime.
   */
  readonly jobs: JobHost;
  /**
   * The workflows this step may start as child runs, by package and
   * workflow: `await ctx.workflows.reports.renderPage.start(input)`, then
   * `child.onComplete(ctx.next.<step>, payload)` to wait for its end. Only
   * those the spec lists under the step's `starts`.
   */
  readonly workflows: Workflows;
  /** One continuation per declared next step: `ctx.next.ship(payload)`, `ctx.next.ship.after(ms, payload)`, `ctx.next.awaitPayment.onSignal(params, payload)`. */
  readonly next: Next;
  /** Ends the run as succeeded; the result is validated before it is stored. */
  succeed(result: Result): StepTransition<Workflow, never, Result, never>;
  /** Ends the run as failed with the workflow's typed error (validated, never retried). `never` when the spec declares none. */
  fail(error: Err): StepTransition<Workflow, never, never, Err>;
  /** Ends the run as cancelled (a verdict: no dead letter). */
  cancel(reason?: string): StepTransition<Workflow, never, never, never>;
}

/** A context with its types erased, as the dispatcher builds it. */
export type AnyStepContext = WorkflowStepContext<string, Record<string, unknown>, unknown, unknown, HeaderValues, unknown, unknown>;

/** @internal Builds the context of one delivery of `stepDef`. */
export function makeStepContext(
  definition: WorkflowDefinition<string, unknown, unknown, unknown, HeaderValues, unknown>,
  stepDef: WorkflowStepDefinition,
  step: Step,
  signal: unknown,
  jobs: JobHost,
  resolve: (name: string) => AnyWorkflowDefinition | undefined = () => undefined,
): { readonly ctx: AnyStepContext; readonly owner: object } {
  const owner = {};
  const next: Record<string, unknown> = {};
  for (const name of stepDef.next) {
    // Own properties only: a name like "constructor" must not reach Object.prototype.
    const target = Object.hasOwn(definition.steps, name) ? definition.steps[name] : undefined;
    if (target === undefined) continue;
    if (target.child !== undefined) {
      next[target.method] = childContinuation(target.child, name, (childRunId, payload) =>
        transitionOf(owner, { kind: "continue", to: name, payload, when: { kind: "onChild", childRunId } }),
      );
    } else if (target.signal !== undefined) {
      next[target.method] = Object.freeze({
        onSignal: (params: unknown, payload: unknown, options?: { timeoutMs?: number }) =>
          transitionOf(owner, { kind: "continue", to: name, payload, when: { kind: "onSignal", params, timeoutMs: options?.timeoutMs } }),
      });
    } else {
      const now = (payload: unknown) => transitionOf(owner, { kind: "continue", to: name, payload, when: { kind: "immediate" } });
      now.after = (delayMs: number, payload: unknown) => transitionOf(owner, { kind: "continue", to: name, payload, when: { kind: "after", delayMs } });
      next[target.method] = Object.freeze(now);
    }
  }
  const workflows = childWorkflowsOf(stepDef, step, resolve);
  const frozenNext = Object.freeze(next);
  const ctx = prototypeHoldsContextField()
    ? filledWithoutPrototype(stepContextFields, definition.name, stepDef.name, step, signal, jobs, workflows, frozenNext, owner)
    : new StepContextFields(definition.name, stepDef.name, step, signal, jobs, workflows, frozenNext, owner);
  // Transitions are tied to `owner`, so one built by another step's context is refused.
  return { ctx: Object.freeze(ctx), owner };
}

/**
 * A step context's fields, in their key order, unfrozen. Built by `new` for every typed step:
 * V8 then sizes the object for every field this constructor assigns, where a literal of the
 * first nine grew a separate property store four times over. Its prototype is
 * `Object.prototype` (set below), so the context is a plain object as before: the same
 * prototype, `constructor`, keys and descriptors.
 */
function stepContextFields(
  this: Building<AnyStepContext>,
  workflow: string,
  stepName: string,
  step: Step,
  signal: unknown,
  jobs: JobHost,
  workflows: AnyStepContext["workflows"],
  next: AnyStepContext["next"],
  owner: object,
): void {
  this.workflow = workflow;
  this.stepName = stepName;
  this.step = step;
  this.runId = step.runId;
  this.stepNumber = step.stepNumber;
  this.headers = step.headers;
  this.attempt = step.attempt;
  this.maxAttempts = step.maxAttempts;
  // The step's own when it is the claimed job's shared answer (it reads no `this`), not a closure per step.
  const last = step.isLastAttempt;
  this.isLastAttempt = isSharedLastAttemptAnswer(last) ? last : () => step.isLastAttempt();
  // Read through to the step, which makes its signal only when read: its getter reads the context's own `step`.
  Object.defineProperty(this, "cancelSignal", CANCEL_SIGNAL);
  this.lease = step.lease;
  this.memo = step.memo;
  this.runMemo = step.runMemo;
  this.effects = step.effects;
  this.kv = step.kv;
  this.signal = signal;
  this.jobs = jobs;
  this.workflows = workflows;
  this.next = next;
  this.succeed = (result: unknown) => transitionOf(owner, { kind: "succeed", result });
  this.fail = (error: unknown) => transitionOf(owner, { kind: "fail", error });
  this.cancel = (reason?: string) => transitionOf(owner, { kind: "cancel", reason: reason ?? "cancelled by the workflow" });
}

/**
 * The context's `cancelSignal`: the step's, read when it is read. One getter and
 * descriptor for every context (V8 then reuses one hidden-class transition), and
 * no slot of its own: the getter reads the context's `step` field, so a Proxy of a
 * context or an object inheriting from one reads it too. The queue's
 * `defineCancelSignal` also defines a hidden symbol slot, a second
 * `Object.defineProperty` call with a descriptor made per context.
 */
const CANCEL_SIGNAL: PropertyDescriptor = {
  get(this: { readonly step: Step }): AbortSignal {
    return this.step.cancelSignal;
  },
  enumerable: true,
};

/** A transition tied to the context of `owner`: a module function, so a context makes no closure of its own to build them. */
function transitionOf(owner: object, record: TransitionRecord): never {
  return makeTransition(owner, record) as never;
}
stepContextFields.prototype = Object.prototype;

/**
 * Whether `Object.prototype` holds the name of a field `stepContextFields`
 * assigns: a setter there would take it from the context (and a read-only
 * field refuse it). Each name written out: a few ns per step.
 */
function prototypeHoldsContextField(): boolean {
  const p = Object.prototype;
  return (
    "workflow" in p ||
    "stepName" in p ||
    "step" in p ||
    "runId" in p ||
    "stepNumber" in p ||
    "headers" in p ||
    "attempt" in p ||
    "maxAttempts" in p ||
    "isLastAttempt" in p ||
    "lease" in p ||
    "memo" in p ||
    "runMemo" in p ||
    "effects" in p ||
    "kv" in p ||
    "signal" in p ||
    "jobs" in p ||
    "workflows" in p ||
    "next" in p ||
    "succeed" in p ||
    "fail" in p ||
    "cancel" in p
  );
}
const StepContextFields = stepContextFields as unknown as new (...args: Parameters<typeof stepContextFields>) => Building<AnyStepContext>;
