/**
 * @module Typed child workflows: `ctx.workflows.<package>.<workflow>` of a
 * step that declares `starts:` in its spec. `start(input, options)` starts
 * the workflow as a child run of this run (see `children/child-runs` for
 * identity, delivery of its end and the parent-close policy) and returns a
 * {@link ChildRun}; `child.onComplete(ctx.next.<step>, payload)` continues
 * to a step that declares `waits_for_child:` that workflow, which is entered
 * with the child's typed end as `ctx.signal`.
 */
import { ValidationError } from "../errors.js";
import type { HeaderValues } from "../contract/job-definition.js";
import { encodeStepEnvelope } from "../contract/step-envelope.js";
import type { ChildContinuation, StepTransition } from "../contract/step-transition.js";
import type { AnyWorkflowDefinition, WorkflowDefinition, WorkflowStepDefinition } from "../contract/workflow-definition.js";
import type { Validator } from "../contract/validator.js";
import type { ParentClosePolicy } from "../workflow/children/child-runs.js";
import type { RunId } from "../workflow/runs/run-id.js";
import type { Step } from "../workflow/steps/delivery.js";
import { StepError } from "../workflow/workflow-errors.js";
import type { WorkflowRunEnd } from "./workflow-client.js";
import { optionFields, readOptions, refuseUnknownFields } from "../option-values.js";

/** The end of a child run as the waiting step receives it (`ctx.signal`): the child's typed result, or why it failed or was cancelled. */
export type ChildOutcome<Result, Err> = WorkflowRunEnd<Result, Err>;

/**
 * What a step that waits for a child with a timeout (`timeout_ms` beside
 * `waits_for_child` in its spec) is entered with when the child has not
 * ended by then. The child keeps running: wait for it again with
 * `ctx.workflows.<package>.<workflow>.child(runId).onComplete(...)` (an end
 * that arrived meanwhile is delivered at once), or cancel it.
 */
export interface ChildWaitTimedOut {
  readonly status: "timed_out";
  /** The child run the step waited for. */
  readonly runId: RunId;
}

/** Options of `ctx.workflows.<package>.<workflow>.start`. */
export interface ChildStartOptions<Headers extends HeaderValues = HeaderValues> {
  /**
   * Names the child among those this step starts (1 to 64 of `[A-Za-z0-9_-]`);
   * with the parent's run id and the step number it makes the child's run id.
   * Default: the start's index within the step (`"0"`, `"1"`, ...).
   */
  readonly key?: string;
  /** The child's headers, validated against its workflow's header set. Default: none. */
  readonly headers?: Headers;
  readonly priority?: number;
  readonly maxAttemptsPerStep?: number;
  /** What happens to the child when this run fails or is cancelled while it runs. Default: `"cancel"`. */
  readonly parentClose?: ParentClosePolicy;
}

const CHILD_START_FIELDS = optionFields<ChildStartOptions>({ key: true, headers: true, priority: true, maxAttemptsPerStep: true, parentClose: true });

/** A child run of this run, started or found: continue to a step that waits for it with `onComplete`. */
export interface ChildRun<Result, Err> {
  /** The child's run id, derived from this run's id, the starting step and the key. */
  readonly runId: RunId;
  /** `false` when an earlier delivery of the step started it, or when it came from `child(runId)`. */
  readonly newlyStarted: boolean;
  /**
   * Continues to `next` (a step that declares `waits_for_child:` this
   * child's workflow) with `payload` once the child ends; the step is
   * entered with the child's end as `ctx.signal`.
   */
  onComplete<W extends string, To extends string, P>(next: ChildContinuation<W, To, P, Result, Err>, payload: P): StepTransition<W, To, never, never>;
}

type DefParts<D> = D extends WorkflowDefinition<string, infer I, infer R, infer E, infer H, unknown> ? { i: I; r: R; e: E; h: H } : never;

/** One workflow a step may start as a child run (`ctx.workflows.<package>.<workflow>`); `Def` is its generated definition's type. */
export interface ChildWorkflow<Def> {
  /** Starts the workflow as a child run of this run, or finds the one a previous delivery of this step started. */
  start(input: DefParts<Def>["i"], options?: ChildStartOptions<DefParts<Def>["h"]>): Promise<ChildRun<DefParts<Def>["r"], DefParts<Def>["e"]>>;
  /** A child of this run started by an earlier step, by run id (to wait for it). */
  child(runId: RunId | string): ChildRun<DefParts<Def>["r"], DefParts<Def>["e"]>;
}

/** `ChildContinuation` of a step that waits for a child of the workflow whose generated definition's type is `Def`. */
export type ChildWait<Workflow extends string, To extends string, Payload, Def> = ChildContinuation<
  Workflow,
  To,
  Payload,
  DefParts<Def>["r"],
  DefParts<Def>["e"]
>;

/** The end of a child of the workflow whose generated definition's type is `Def`. */
export type ChildOutcomeOf<Def> = ChildOutcome<DefParts<Def>["r"], DefParts<Def>["e"]>;

/** What a step that waits for a child of `Def`'s workflow with a timeout is entered with: the child's end, or {@link ChildWaitTimedOut}. */
export type ChildOutcomeOrTimeoutOf<Def> = ChildOutcomeOf<Def> | ChildWaitTimedOut;

/** Continuations into steps that wait for a child, by identity: what `onComplete` accepts. */
const childTargets = new WeakMap<
  object,
  { readonly workflow: string; readonly step: string; readonly make: (childRunId: string, payload: unknown) => unknown }
>();

/** @internal The continuation `ctx.next.<step>` of a step that waits for a child of `workflow`. */
export function childContinuation(workflow: string, step: string, make: (childRunId: string, payload: unknown) => unknown): object {
  const cont = Object.freeze({});
  childTargets.set(cont, { workflow, step, make });
  return cont;
}

function childRun(def: AnyWorkflowDefinition, runId: RunId, newlyStarted: boolean): ChildRun<unknown, unknown> {
  return Object.freeze({
    runId,
    newlyStarted,
    onComplete(next: unknown, payload: unknown) {
      const target = typeof next === "object" && next !== null ? childTargets.get(next) : undefined;
      if (target === undefined) {
        throw StepError.permanent(new TypeError("onComplete takes ctx.next.<step> of a step that declares waits_for_child in the spec"));
      }
      if (target.workflow !== def.name) {
        throw StepError.permanent(
          new ValidationError(`step "${target.step}" waits for a child of workflow "${target.workflow}", not of "${def.name}" (run "${runId}")`),
        );
      }
      return target.make(runId, payload) as StepTransition<string, never, never, never>;
    },
  }) as ChildRun<unknown, unknown>;
}

/** @internal `ctx.workflows` of one step: one {@link ChildWorkflow} per workflow its spec lets it start. */
export function childWorkflowsOf(
  stepDef: WorkflowStepDefinition,
  step: Step,
  resolve: (name: string) => AnyWorkflowDefinition | undefined,
): Readonly<Record<string, Readonly<Record<string, ChildWorkflow<unknown>>>>> {
  const out: Record<string, Record<string, ChildWorkflow<unknown>>> = {};
  for (const ref of stepDef.starts) {
    const def = (): AnyWorkflowDefinition => {
      const d = resolve(ref.workflow);
      if (d === undefined) {
        throw StepError.permanent(
          new ValidationError(
            `workflow "${ref.workflow}" is not registered on this runtime; register its package's workflows on the same dispatcher to start it`,
          ),
        );
      }
      return d;
    };
    const [pkg, wf] = ref.path;
    const group = (out[pkg] ??= {});
    group[wf] = Object.freeze({
      async start(input: unknown, given?: ChildStartOptions) {
        const d = def();
        if (given !== undefined && (given === null || typeof given !== "object")) throw new ValidationError("start options must be an object");
        if (given !== undefined) refuseUnknownFields(given, CHILD_START_FIELDS, "ChildStartOptions.", "ChildStartOptions");
        // Each field read once into a copy: a field set on Object.prototype is none.
        const options = given === undefined ? undefined : (readOptions(given, CHILD_START_FIELDS, "ChildStartOptions") as ChildStartOptions);
        const inputCheck: Validator<unknown> = d.input;
        inputCheck.assert(input);
        const headers = options?.headers ?? {};
        const headerCheck: Validator<unknown> = d.headers.validator;
        headerCheck.assert(headers);
        const started = await step.children.start({
          input: encodeStepEnvelope(d.name, d.entry, input),
          ...(options?.key === undefined ? {} : { key: options.key }),
          ...(options?.parentClose === undefined ? {} : { parentClose: options.parentClose }),
          options: {
            headers: headers as Record<string, string>,
            ...(options?.priority === undefined ? {} : { priority: options.priority }),
            ...(options?.maxAttemptsPerStep === undefined ? {} : { maxAttemptsPerStep: options.maxAttemptsPerStep }),
          },
        });
        return childRun(d, started.runId, started.newlyStarted);
      },
      child(runId: RunId | string) {
        const d = def();
        // Validates the id (and that it can be a child of this run) the way the wait will.
        step.children.completionKey(runId);
        return childRun(d, runId as RunId, false);
      },
    }) as unknown as ChildWorkflow<unknown>;
  }
  for (const g of Object.values(out)) Object.freeze(g);
  return Object.freeze(out);
}
