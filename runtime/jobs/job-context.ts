/**
 * @module What a handler run by a `JobRunner` receives: the `JobContext` of
 * `job-definition.ts` plus the workflow delivery, the runner's registered
 * state and `submit` for child jobs.
 */
import { TaqubaError, ValidationError } from "../errors.js";
import { isOptionObject } from "../option-values.js";
import type { Delivery } from "../workflow/steps/delivery.js";
import { type Building, defineCancelSignal } from "../queue/cancel-state.js";
import { JobFailure, type HeaderValues, type JobContext, type JobDefinition, type JobSubmitOptions, type JobSubmitter } from "../contract/job-definition.js";
import type { RunnerJobHandle } from "./job-handle.js";

/** `JobRunner.submit`, as handlers reach it. */
export type SubmitJob = <Name extends string, Input, Output, Err, Headers extends HeaderValues>(
  definition: JobDefinition<Name, Input, Output, Err, Headers>,
  input: Input,
  options?: JobSubmitOptions<Headers>,
) => Promise<RunnerJobHandle<Output, Err>>;

/**
 * Submits and finds typed jobs on the runtime a step runs on (a `JobRunner`
 * satisfies it). Workflow steps reach it as `ctx.jobs`, job handlers as
 * `jobContext(ctx).submit`. It is also a `JobSubmitter`, so a generated
 * client can be made over it: `billing.client(ctx.jobs)`.
 */
export interface JobHost extends JobSubmitter {
  submit<Name extends string, Input, Output, Err, Headers extends HeaderValues>(
    definition: JobDefinition<Name, Input, Output, Err, Headers>,
    input: Input,
    options?: JobSubmitOptions<Headers>,
  ): Promise<RunnerJobHandle<Output, Err>>;
  /** A handle on an existing job by id, typed by its definition. */
  handle<Name extends string, Input, Output, Err, Headers extends HeaderValues>(
    definition: JobDefinition<Name, Input, Output, Err, Headers>,
    jobId: string,
  ): RunnerJobHandle<Output, Err>;
}

/**
 * A typed name for one piece of state registered on a runner (a database
 * pool, an HTTP client, the runner itself for child jobs).
 *
 * @example
 * const DB = new StateKey<Db>("db");
 * JobRunner.builder(queue, store).state(DB, db).register(def, handler).build();
 * // in a handler: const db = jobContext(ctx).state(DB);
 */
export class StateKey<T> {
  /** Phantom: carries `T` for the compiler only. */
  declare readonly __type?: T;
  constructor(readonly name: string) {}
}

/** A handler asked for state nobody registered. */
export class StateNotRegisteredError extends TaqubaError {
  constructor(readonly key: string) {
    super("STATE_NOT_REGISTERED", `no state registered under "${key}"; register it with JobRunnerBuilder.state before build()`);
  }
}

/** The context a `JobRunner` passes to handlers. */
export interface RunnerJobContext<Headers extends HeaderValues = HeaderValues, Err = unknown> extends JobContext<Headers, Err> {
  /** The job run's delivery: run id, memo, run memo, lease, staged KV effects and reads. */
  readonly delivery: Delivery;
  /** The state registered under `key`; throws `StateNotRegisteredError` when there is none. */
  state<T>(key: StateKey<T>): T;
  /** The state registered under `key`, or undefined. */
  tryState<T>(key: StateKey<T>): T | undefined;
  /**
   * Submits a child job through the same runner. Not atomic with this job's
   * settlement: give it an idempotency key so a retried parent submits it once.
   */
  readonly submit: SubmitJob;
}

/** Marks contexts made by a runner; read through property access so wrappers (proxies) keep it. */
const RUNNER_CONTEXT = Symbol("taquba.runnerJobContext");

/**
 * The runner context behind a `JobContext` typed by generated code.
 * Throws when `ctx` was not made by a `JobRunner` (a hand-built test context).
 */
export function jobContext<Headers extends HeaderValues, Err>(ctx: JobContext<Headers, Err>): RunnerJobContext<Headers, Err> {
  if (!isRunnerContext(ctx)) throw new ValidationError("this JobContext was not made by a JobRunner, so it has no delivery, state or submit");
  return ctx as RunnerJobContext<Headers, Err>;
}

/** Whether `ctx` carries the runner's mark; false for a primitive, a revoked Proxy or an object whose reads throw. */
function isRunnerContext(ctx: unknown): boolean {
  if (!isOptionObject(ctx)) return false;
  try {
    return (ctx as { [RUNNER_CONTEXT]?: unknown })[RUNNER_CONTEXT] === true;
  } catch {
    return false;
  }
}

/** @internal Builds the context of one delivery. */
export function makeJobContext(delivery: Delivery, state: ReadonlyMap<StateKey<unknown>, unknown>, submit: SubmitJob): RunnerJobContext<HeaderValues, unknown> {
  const ctx = {
    [RUNNER_CONTEXT]: true,
    jobId: delivery.runId,
    attempt: delivery.attempt,
    maxAttempts: delivery.maxAttempts,
    headers: delivery.headers,
  } as Partial<Building<RunnerJobContext<HeaderValues, unknown>>> & { [RUNNER_CONTEXT]: true };
  // Read through to the delivery, which makes its signal only when read (see `defineCancelSignal`).
  defineCancelSignal(ctx, delivery);
  ctx.delivery = delivery;
  ctx.fail = (error: unknown): never => {
    throw new JobFailure(error);
  };
  ctx.state = <T>(key: StateKey<T>): T => {
    if (!state.has(key)) throw new StateNotRegisteredError(key.name);
    return state.get(key) as T;
  };
  ctx.tryState = <T>(key: StateKey<T>): T | undefined => state.get(key) as T | undefined;
  ctx.submit = submit;
  return ctx as RunnerJobContext<HeaderValues, unknown>;
}
