/**
 * @module `WorkflowDispatcher`: the one `StepRunner` of a runtime that runs
 * typed workflows and typed jobs, from any number of spec packages, over one
 * step queue. Each step's payload says what it is: a step envelope names its
 * workflow and step, a job payload names its job (see `step-envelope.ts` and
 * `job-codec.ts`); anything else goes to the fallback runner, if any.
 *
 * Every boundary is checked: the payload (and, for a waiting step, the
 * signal) on entry, the next step's payload, the result or typed error on
 * exit. A violation is a permanent `StepError` naming the path, so a bad
 * value dead-letters the step instead of being retried or stored. Handler
 * errors: a `StepError` keeps its kind; a `TaqubaError` that is not
 * `retryable` is permanent; anything else is transient (`StepError.kindOf`).
 *
 * Jobs reach their runner (for child submissions, `ctx.jobs` in workflow
 * steps, result retention) through a binding a `JobRunner` sets when it is
 * made over the runtime (`JobRunner.builder(...).build()` or
 * `JobRunner.over(queue, runtime, dispatcher)`); until then a submission from a
 * step throws `JobsNotAttachedError`.
 */

import type { FlowRule } from "../queue/admission.js";
import { stepSpanOf } from "../telemetry/tracing.js";
import { checkContracts, type ContractEntry } from "./contract-guard.js";
import { ValidationError } from "../errors.js";
import { describeValue, errorText, hasMethods, readOptionArray } from "../option-values.js";
import { checkedDefinition } from "../contract/definition-input.js";
import { MAX_RUN_HEADERS } from "../workflow/limits.js";
import type { StateKey } from "../jobs/job-context.js";
import type { HeaderValues, JobDefinition, JobHandler, JobRegistrar } from "../contract/job-definition.js";
import { canonicalJson } from "../contract/canonical-json.js";
import { JobStepRunner, type JobBinding, type Registration as JobRegistration } from "../jobs/job-step-runner.js";
import { checkJobRegistration } from "../jobs/job-submission.js";
import { formatIssue, type Validator } from "../contract/validator.js";
import { fromUtf8, utf8 } from "../workflow/records/codec.js";
import type { RunnerStartContext, Step, StepDescription, StepRunner } from "../workflow/steps/delivery.js";
import { StepOutcome } from "../workflow/steps/step-outcome.js";
import { StepError } from "../workflow/workflow-errors.js";
import { makeStepContext } from "./step-context.js";
import type { ChildWaitTimedOut } from "./child-workflows.js";
import { typedRunEnd } from "./workflow-client.js";
import { decodeStepEnvelope, encodeStepEnvelope, peekPayloadNames, type StepEnvelope } from "../contract/step-envelope.js";
import { transitionRecord } from "../contract/step-transition.js";
import type { AnyWorkflowDefinition, WorkflowDefinition, WorkflowStepDefinition } from "../contract/workflow-definition.js";

/** What generated `registerWorkflows` functions need from a dispatcher builder. */
export interface WorkflowRegistrar {
  register<Name extends string, Input, Result, Err, Headers extends HeaderValues, Handler>(
    definition: WorkflowDefinition<Name, Input, Result, Err, Headers, Handler>,
    handler: Handler,
  ): unknown;
}

interface Registration {
  readonly definition: AnyWorkflowDefinition;
  readonly handler: Record<string, unknown>;
}

/**
 * Configures a {@link WorkflowDispatcher}: register workflows and jobs (from
 * any number of spec packages; generated `registerWorkflows` and `register`
 * both accept it), then `build()`.
 */
export class WorkflowDispatcherBuilder implements WorkflowRegistrar, JobRegistrar {
  readonly #registry = new Map<string, Registration>();
  readonly #jobs = new Map<string, JobRegistration>();
  readonly #state = new Map<StateKey<unknown>, unknown>();
  #fallback: StepRunner | undefined;
  #allowDowngrade = false;

  /** Registers the handler of one job; a second registration of the same name throws. */
  register<Name extends string, Input, Output, Err, Headers extends HeaderValues>(
    definition: JobDefinition<Name, Input, Output, Err, Headers>,
    handler: JobHandler<Input, Output, Err, Headers>,
  ): this;
  /** Registers the handler of one workflow (one method per step); a second registration of the same name throws. */
  register<Name extends string, Input, Result, Err, Headers extends HeaderValues, Handler>(
    definition: WorkflowDefinition<Name, Input, Result, Err, Headers, Handler>,
    handler: Handler,
  ): this;
  register(definition: unknown, handler: unknown): this {
    // A definition or handler whose reads throw is a ValidationError naming register, never a TypeError.
    return checkedDefinition("register", definition, () => this.#register(definition, handler));
  }

  #register(definition: unknown, handler: unknown): this {
    if ((definition as { kind?: unknown }).kind === "job") {
      const reg = checkJobRegistration(definition, handler);
      if (this.#jobs.has(reg.definition.name)) throw new ValidationError(`job "${reg.definition.name}" is registered twice; register each job once`);
      this.#jobs.set(reg.definition.name, reg);
      return this;
    }
    const def = definition as AnyWorkflowDefinition;
    if (def === null || typeof def !== "object" || def.kind !== "workflow")
      throw new ValidationError("register takes a workflow or job definition from generated code (or defineJob)");
    if (this.#registry.has(def.name)) throw new ValidationError(`workflow "${def.name}" is registered twice; register each workflow once`);
    const h = handler as Record<string, unknown>;
    const missing = Object.values(def.steps)
      .filter((s) => typeof h !== "object" || !hasMethods(h, [s.method]))
      .map((s) => `${s.method}(payload, ctx) for step "${s.name}"`);
    if (missing.length > 0) throw new ValidationError(`the handler of workflow "${def.name}" lacks a method per step`, missing);
    this.#registry.set(def.name, { definition: def, handler: h });
    return this;
  }

  /** Registers state job handlers reach through `jobContext(ctx).state(key)`. */
  state<T>(key: StateKey<T>, value: T): this {
    this.#state.set(key as StateKey<unknown>, value);
    return this;
  }

  /**
   * A hand-written runner for steps that are neither typed workflow
   * envelopes nor payloads of registered jobs, so untyped runs can share the
   * runtime. Default: none (such steps are dead-lettered with a message
   * saying so).
   */
  fallback(runner: StepRunner): this {
    if (!hasMethods(runner, ["runStep"])) throw new ValidationError(`fallback takes a StepRunner (with runStep(step)), got ${describeValue(runner)}`);
    this.#fallback = runner;
    return this;
  }

  /**
   * Lets a worker start although a newer contract of one of its
   * definitions already ran over the store (an intended rollback). Default:
   * such a start fails with `ContractTooOldError`.
   */
  allowContractDowngrade(allow = true): this {
    this.#allowDowngrade = allow;
    return this;
  }

  build(): WorkflowDispatcher {
    const contracts: ContractEntry[] = [
      ...[...this.#jobs.values()].map((r) => ({ name: r.definition.name, hash: r.definition.contractHash })),
      ...[...this.#registry.values()].map((r) => ({ name: r.definition.name, hash: r.definition.contractHash })),
    ].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return new WorkflowDispatcher(
      new Map(this.#registry),
      new JobStepRunner(new Map(this.#jobs), new Map(this.#state)),
      this.#fallback,
      contracts,
      this.#allowDowngrade,
      [...this.#jobs.values(), ...this.#registry.values()].flatMap((r) => r.definition.headers.sensitive),
      Object.fromEntries(
        [...this.#jobs.values(), ...this.#registry.values()].flatMap((r) => {
          const f = r.definition.flowControl;
          return f === undefined || !f.hasLimits ? [] : [[f.rule, f.limits] as const];
        }),
      ),
    );
  }
}

/** What a step's payload is, from one JSON parse. */
type Classified =
  | { readonly kind: "workflow"; readonly env: StepEnvelope }
  | { readonly kind: "job"; readonly env: { job: string; input: unknown } }
  | { readonly kind: "other" };

function classify(bytes: Uint8Array): Classified {
  let v: unknown;
  try {
    v = JSON.parse(fromUtf8(bytes));
  } catch {
    return { kind: "other" };
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) return { kind: "other" };
  const r = v as Record<string, unknown>;
  if (typeof r.workflow === "string" && typeof r.step === "string" && "payload" in r) return { kind: "workflow", env: v as StepEnvelope };
  if (typeof r.job === "string" && !("workflow" in r)) return { kind: "job", env: { job: r.job, input: r.input } };
  return { kind: "other" };
}

function invalid(what: string, issues: readonly string[]): StepError {
  return StepError.permanent(new ValidationError(`${what} is invalid`, issues));
}

function check(validator: Validator<unknown>, value: unknown, what: string): void {
  const issues = validator.validate(value);
  if (issues.length > 0) throw invalid(what, issues.map(formatIssue));
}

function json(value: unknown, what: string): string {
  try {
    return canonicalJson(value);
  } catch (e) {
    throw StepError.permanent(new ValidationError(`${what} cannot be stored as JSON: ${e instanceof Error ? e.message : String(e)}`));
  }
}

/** A fallback runner's `sensitiveHeaders`, read once: a getter that throws, or anything but an array of names, is refused. */
function sensitiveOf(runner: StepRunner): string[] {
  let v: unknown;
  try {
    v = runner.sensitiveHeaders;
  } catch (err) {
    throw new ValidationError(`reading the fallback runner's sensitiveHeaders threw: ${errorText(err)}`);
  }
  if (v === undefined) return [];
  const names = readOptionArray("the fallback runner's sensitiveHeaders", v, "an array of header names", MAX_RUN_HEADERS);
  const bad = names.findIndex((n) => typeof n !== "string");
  if (bad >= 0) throw new ValidationError(`the fallback runner's sensitiveHeaders[${bad}] must be a header name (a string), got ${describeValue(names[bad])}`);
  return names as string[];
}

/**
 * Runs the steps of every registered typed workflow and typed job.
 *
 * @example
 * // One runtime, one step queue, workflows and jobs of several packages:
 * const runner = orders.registerWorkflows(billing.register(JobRunner.builder(queue, store), jobHandlers), workflowHandlers).build();
 * const worker = runner.spawn();
 * // Or over a runtime built by hand (a terminal hook, other options):
 * const dispatcher = orders.registerWorkflows(WorkflowDispatcher.builder(), { orderFulfil: new OrderFulfil() }).build();
 * const runtime = WorkflowRuntime.builder(queue, store, dispatcher, NoopTerminalHook).build();
 * const jobs = JobRunner.over(queue, runtime, dispatcher); // only needed when steps or callers submit jobs
 */
export class WorkflowDispatcher implements StepRunner {
  /** Starts registering workflows and jobs. */
  static builder(): WorkflowDispatcherBuilder {
    return new WorkflowDispatcherBuilder();
  }

  readonly #jobs: JobStepRunner;

  /** @internal Use the builder. */
  constructor(
    private readonly registry: ReadonlyMap<string, Registration>,
    jobs: JobStepRunner,
    private readonly fallbackRunner: StepRunner | undefined,
    /** The registered definitions' contract hashes, by name. */
    readonly contracts: readonly ContractEntry[] = [],
    private readonly allowDowngrade = false,
    specSensitive: readonly string[] = [],
    private readonly specFlowRules: Readonly<Record<string, FlowRule>> = {},
  ) {
    this.#jobs = jobs;
    const names = new Set<string>([...specSensitive, ...(fallbackRunner === undefined ? [] : sensitiveOf(fallbackRunner))]);
    this.sensitiveHeaders = [...names].sort();
  }

  /** The headers the registered definitions' specs mark `sensitive: true`: redacted in logs and spans. */
  readonly sensitiveHeaders: readonly string[];

  /** The concurrency and rate limits the registered definitions' specs declare, by qualified name (plus the fallback runner's). */
  flowRules(): Readonly<Record<string, FlowRule>> {
    return { ...(this.fallbackRunner?.flowRules?.() ?? {}), ...this.specFlowRules };
  }

  /**
   * Refuses to start a worker older than the contract that last ran over
   * the store (see `checkContracts`), and records this one's contracts.
   */
  async beforeStart(ctx: RunnerStartContext): Promise<void> {
    await checkContracts(ctx.queue, ctx.queueName, this.contracts, this.allowDowngrade);
    await this.fallbackRunner?.beforeStart?.(ctx);
  }

  /** The qualified names of the registered workflows, sorted. */
  get workflows(): readonly string[] {
    return [...this.registry.keys()].sort();
  }

  /** The qualified names of the registered jobs, sorted. */
  get jobs(): readonly string[] {
    return this.#jobs.names;
  }

  /** @internal Set once by the `JobRunner` made over this dispatcher's runtime; throws `JobsAlreadyAttachedError` for a second runner. */
  attachJobs(binding: JobBinding): void {
    this.#jobs.bind(binding);
  }

  /** @internal Whether a `JobRunner` is attached. */
  get jobsAttached(): boolean {
    return this.#jobs.binding !== undefined;
  }

  /** Names a typed step (workflow and step) or job payload for listings; other payloads go to the fallback runner. */
  describe(payload: Uint8Array): StepDescription | undefined {
    return peekPayloadNames(payload) ?? this.fallbackRunner?.describe?.(payload);
  }

  async runStep(step: Step): Promise<StepOutcome> {
    const c = classify(step.payload);
    if (c.kind === "job" && (this.#jobs.size > 0 || this.fallbackRunner === undefined)) {
      stepSpanOf(step.jobId, step.attempt)?.updateName(c.env.job).setAttribute("taquba.job.type", c.env.job);
      return this.#jobs.runJob(step, c.env);
    }
    if (c.kind !== "workflow") {
      if (this.fallbackRunner !== undefined) return this.fallbackRunner.runStep(step);
      try {
        decodeStepEnvelope(step.payload);
      } catch (e) {
        throw StepError.permanent(e);
      }
      throw StepError.permanent(new ValidationError("the step payload is neither a typed workflow envelope nor a job payload"));
    }
    const env = c.env;
    const reg = this.registry.get(env.workflow);
    if (reg === undefined) {
      throw StepError.permanent(
        new Error(
          `no handler is registered for workflow "${env.workflow}" on this runtime; register it on the dispatcher (or the JobRunner builder) before build()`,
        ),
      );
    }
    const def = reg.definition;
    // The step name comes from the stored envelope: own properties only, so "constructor" or "__proto__" is an unknown step.
    const stepDef = Object.hasOwn(def.steps, env.step) ? def.steps[env.step] : undefined;
    stepSpanOf(step.jobId, step.attempt)?.updateName(`${def.name}.${env.step}`).setAttributes({ "taquba.workflow": def.name, "taquba.step.name": env.step });
    if (stepDef === undefined) {
      throw StepError.permanent(
        new Error(`workflow "${def.name}" has no step "${env.step}"; the run was started by code generated from another version of its spec`),
      );
    }
    check(stepDef.payload, env.payload, `${def.name} step ${stepDef.name} payload`);
    const signal = await this.#signal(def, stepDef, step);
    const { ctx, owner } = makeStepContext(def, stepDef, step, signal, this.#jobs.jobs, (name) => this.registry.get(name)?.definition);
    const method = reg.handler[stepDef.method] as (payload: unknown, ctx: unknown) => Promise<unknown>;
    let returned: unknown;
    try {
      returned = await method.call(reg.handler, env.payload, ctx);
    } catch (e) {
      // Not retryable (a PermanentError, a ValidationError, a runtime with no job runner): retrying cannot help.
      throw StepError.from(e);
    }
    const t = transitionRecord(owner, returned);
    if (t === undefined) {
      throw StepError.permanent(
        new TypeError(
          `step "${stepDef.name}" of workflow "${def.name}" returned something other than a transition built from its own context; return ctx.next.<step>(...), ctx.succeed(...), ctx.fail(...) or ctx.cancel()`,
        ),
      );
    }
    switch (t.kind) {
      case "continue": {
        const target = Object.hasOwn(def.steps, t.to) ? def.steps[t.to] : undefined;
        if (target === undefined || !stepDef.next.includes(t.to)) {
          throw StepError.permanent(new Error(`step "${stepDef.name}" of workflow "${def.name}" may not continue to "${t.to}"; declare it under its "next"`));
        }
        check(target.payload, t.payload, `${def.name} step ${target.name} payload`);
        const bytes = encodeStepEnvelope(def.name, target.name, t.payload);
        if (t.when.kind === "immediate") return StepOutcome.continueNow(bytes);
        if (t.when.kind === "after") return StepOutcome.continueAfter(bytes, t.when.delayMs);
        if (t.when.kind === "onChild") {
          if (target.child === undefined) throw StepError.permanent(new Error(`step "${target.name}" of workflow "${def.name}" waits for no child run`));
          try {
            // The spec's timeout_ms bounds the wait; without one it lasts the longest wait there is.
            return StepOutcome.continueOnChild(bytes, step.children.completionKey(t.when.childRunId), target.timeoutMs);
          } catch (e) {
            throw StepError.permanent(e);
          }
        }
        const sig = target.signal;
        if (sig === undefined) throw StepError.permanent(new Error(`step "${target.name}" of workflow "${def.name}" waits for no signal`));
        let key: string;
        try {
          key = sig.key(t.when.params);
        } catch (e) {
          throw StepError.permanent(e);
        }
        return StepOutcome.continueOnSignal(bytes, key, t.when.timeoutMs ?? (target.timeoutMs as number));
      }
      case "succeed":
        check(def.result, t.result, `${def.name} result`);
        return StepOutcome.succeed(utf8(json(t.result, `${def.name} result`)));
      case "fail": {
        if (def.error === undefined) {
          throw StepError.permanent(
            new ValidationError(
              `workflow "${def.name}" declares no error type, so it cannot fail with a typed error; declare "error" in its spec or throw instead`,
            ),
          );
        }
        check(def.error, t.error, `${def.name} error`);
        return StepOutcome.fail(json(t.error, `${def.name} error`));
      }
      case "cancel":
        return StepOutcome.cancel(t.reason);
    }
  }

  /**
   * The validated signal of a waiting step: its payload, `null` on timeout;
   * the child's typed end for a step that waits for a child; `undefined`
   * for other steps.
   */
  async #signal(def: AnyWorkflowDefinition, stepDef: WorkflowStepDefinition, step: Step): Promise<unknown> {
    if (stepDef.child !== undefined) return this.#childEnd(def, stepDef, step, stepDef.child);
    const sig = stepDef.signal;
    if (sig === undefined) return undefined;
    if (step.signal === null) return null;
    if (step.signal === undefined) {
      throw StepError.permanent(
        new Error(
          `step "${stepDef.name}" of workflow "${def.name}" waits for a signal but was entered without a signal wait; continue to it with ctx.next.<step>.onSignal(...)`,
        ),
      );
    }
    try {
      return sig.decode(step.signal);
    } catch (e) {
      throw StepError.permanent(e);
    }
  }

  async #childEnd(def: AnyWorkflowDefinition, stepDef: WorkflowStepDefinition, step: Step, child: string): Promise<unknown> {
    const waited = step.children.waitedChild();
    if (step.signal === null && stepDef.timeoutMs !== undefined && waited !== undefined) {
      const timedOut: ChildWaitTimedOut = { status: "timed_out", runId: waited };
      return Object.freeze(timedOut);
    }
    if (!(step.signal instanceof Uint8Array)) {
      throw StepError.permanent(
        new Error(
          step.signal === null
            ? `step "${stepDef.name}" of workflow "${def.name}" waited for its child run longer than the longest wait; the child has not ended`
            : `step "${stepDef.name}" of workflow "${def.name}" waits for a child run but was entered without one; continue to it with child.onComplete(ctx.next.<step>, payload)`,
        ),
      );
    }
    const childDef = this.registry.get(child)?.definition;
    if (childDef === undefined) {
      throw StepError.permanent(
        new Error(`workflow "${child}" is not registered on this runtime, so the end of its child run cannot be read; register it on this dispatcher`),
      );
    }
    // A store fault reading an omitted result is retried like any step error.
    const o = await step.children.outcome(step.signal);
    try {
      return typedRunEnd(childDef, {
        termination: {
          runId: o.runId,
          status: o.status,
          finalStep: o.finalStep,
          terminatedAtMs: 0,
          ...(o.error === undefined ? {} : { error: o.error }),
          ...(o.errorKind === undefined ? {} : { errorKind: o.errorKind }),
        },
        outcome: o,
      });
    } catch (e) {
      throw StepError.permanent(e);
    }
  }
}
