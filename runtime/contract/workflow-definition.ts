/**
 * @module Typed workflow definitions: the values generated code exports for
 * each `workflows:` entry of a spec, and the dispatcher and clients read.
 *
 * Like job definitions, a workflow definition is a frozen plain object whose
 * type parameters (input, result, error, headers and the handler interface)
 * are phantom: the validators enforce them at run time, the compiler at
 * build time. No IO here, so clients and workers share it.
 */

import { checkedDefinition } from "./definition-input.js";
import { compileFlowControl, type FlowControl, type FlowControlSpec } from "./flow-control.js";
import { ValidationError } from "../errors.js";
import type { HeaderSetDefinition, HeaderValues, SignalDefinition } from "./job-definition.js";
import type { Validator } from "./validator.js";

/** One step of a typed workflow, with types erased (the generated handler interface carries them). */
export interface WorkflowStepDefinition {
  /** The step's name in the spec, e.g. `await_payment`; it travels in the step envelope. */
  readonly name: string;
  /** The handler method that runs the step, e.g. `awaitPayment`. */
  readonly method: string;
  /** Validates the payload the step is entered with (the workflow input for the entry step). */
  readonly payload: Validator<unknown>;
  /** The signal whose arrival (or timeout) enters the step, when it waits for one. */
  readonly signal: SignalDefinition<string, unknown, unknown> | undefined;
  /** The default wait of a waiting step before it is entered without a signal. */
  readonly timeoutMs: number | undefined;
  /** The steps this step may continue to, by spec name. */
  readonly next: readonly string[];
  /** The workflows this step may start as child runs or wait for (`ctx.workflows`). */
  readonly starts: readonly ChildWorkflowRef[];
  /** The workflow (qualified name) whose child run's end enters this step, when it waits for one. */
  readonly child: string | undefined;
}

/** A workflow a step may start as a child run: where it sits in `ctx.workflows` and its qualified name. */
export interface ChildWorkflowRef {
  /** `[packageIdent, workflowIdent]`: `ctx.workflows.<package>.<workflow>`. */
  readonly path: readonly [string, string];
  /** The qualified name `<package>.<workflow>`. */
  readonly workflow: string;
}

/** A typed multi-step workflow: what a client submits and a handler implements. */
export interface WorkflowDefinition<
  Name extends string = string,
  Input = unknown,
  Result = unknown,
  Err = unknown,
  Headers extends HeaderValues = HeaderValues,
  Handler = unknown,
> {
  readonly kind: "workflow";
  /** The qualified name `<package>.<workflow>`; it travels in every step envelope. */
  readonly name: Name;
  readonly package: string;
  readonly description: string | undefined;
  readonly input: Validator<Input>;
  readonly result: Validator<Result>;
  /** The typed error a step may fail the run with (`ctx.fail`), when the spec declares one. */
  readonly error: Validator<Err> | undefined;
  readonly headers: HeaderSetDefinition<Headers>;
  /** The entry step: the first step listed in the spec; it receives the workflow input. */
  readonly entry: string;
  /** Every step, by spec name. */
  readonly steps: Readonly<Record<string, WorkflowStepDefinition>>;
  /** The signals the workflow's steps wait for, by generated identifier (`paymentReceived`). */
  readonly signals: Readonly<Record<string, SignalDefinition<string, unknown, unknown>>>;
  /** A hash of the workflow's normalised contract; changes when the contract does. */
  readonly contractHash: string;
  /** Its concurrency and rate limits (the spec's `concurrency`, `rate_limit`), if it declares any; they hold for its steps. */
  readonly flowControl?: FlowControl;
  /** Phantom: the handler interface, so `register(definition, handler)` checks the handler. */
  readonly __handler?: Handler;
}

/** A workflow definition with its types erased, as registries hold it. */
export type AnyWorkflowDefinition = WorkflowDefinition<string, unknown, unknown, unknown, HeaderValues, unknown>;

/** The spec of one step, as generated code passes it to {@link defineWorkflow}. */
export interface WorkflowStepSpec {
  readonly method: string;
  readonly payload: Validator<unknown>;
  readonly signal?: SignalDefinition<string, unknown, unknown>;
  readonly timeoutMs?: number;
  readonly next: readonly string[];
  readonly starts?: readonly ChildWorkflowRef[];
  /** The workflow whose child run's end enters the step. */
  readonly child?: string;
}

/**
 * Defines a typed workflow; generated code calls this once per workflow of a
 * spec. Checks that the entry exists, every transition names a step and every
 * waiting step has a signal and a timeout (the generator checks the same with
 * positions; this guards hand-written definitions).
 *
 * @example
 * const def = defineWorkflow<"shop.order", Input, Result, never, ShopHeaders, OrderHandler>({
 *   name: "shop.order", package: "shop", input, result, headers, entry: "start", contractHash: "0",
 *   steps: { start: { method: "start", payload: input, next: [] } },
 * });
 */
export function defineWorkflow<Name extends string, Input, Result, Err, Headers extends HeaderValues, Handler>(spec: {
  name: Name;
  package: string;
  description?: string;
  input: Validator<Input>;
  result: Validator<Result>;
  error?: Validator<Err>;
  headers: HeaderSetDefinition<Headers>;
  entry: string;
  steps: Readonly<Record<string, WorkflowStepSpec>>;
  signals?: Readonly<Record<string, SignalDefinition<string, unknown, unknown>>>;
  contractHash: string;
  flowControl?: FlowControlSpec;
}): WorkflowDefinition<Name, Input, Result, Err, Headers, Handler> {
  return checkedDefinition("defineWorkflow", spec, () => {
    const flowControl = compileFlowControl(spec.name, spec.headers.names, spec.flowControl);
    const problems: string[] = [];
    if (!Object.hasOwn(spec.steps, spec.entry)) problems.push(`entry step "${spec.entry}" is not one of its steps`);
    const steps: Record<string, WorkflowStepDefinition> = {};
    for (const [name, s] of Object.entries(spec.steps)) {
      for (const n of s.next) if (!Object.hasOwn(spec.steps, n)) problems.push(`step "${name}" continues to "${n}", which is not one of its steps`);
      if (s.signal !== undefined && s.timeoutMs === undefined) problems.push(`step "${name}" waits for a signal without a timeout`);
      if (s.signal !== undefined && s.child !== undefined) problems.push(`step "${name}" waits for both a signal and a child run`);
      steps[name] = Object.freeze({
        name,
        method: s.method,
        payload: s.payload,
        signal: s.signal,
        timeoutMs: s.timeoutMs,
        next: Object.freeze([...s.next]),
        starts: Object.freeze(
          (s.starts ?? []).map((r) => Object.freeze({ path: Object.freeze([r.path[0], r.path[1]]) as readonly [string, string], workflow: r.workflow })),
        ),
        child: s.child,
      });
    }
    if (problems.length > 0) throw new ValidationError(`workflow "${spec.name}" is not well formed; regenerate it from its spec`, problems);
    return Object.freeze({
      kind: "workflow",
      name: spec.name,
      package: spec.package,
      description: spec.description,
      input: spec.input,
      result: spec.result,
      error: spec.error,
      headers: spec.headers,
      entry: spec.entry,
      steps: Object.freeze(steps),
      signals: Object.freeze({ ...(spec.signals ?? {}) }),
      contractHash: spec.contractHash,
      ...(flowControl === undefined ? {} : { flowControl }),
    });
  });
}
