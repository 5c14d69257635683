/**
 * @module Typed job, signal and header definitions: the values generated code
 * exports and the runner consumes.
 *
 * A definition is a plain frozen object whose type parameters carry the
 * job's input, output, error and header types (phantom types: nothing at run
 * time holds them, the validators check them). Because clients, runners and
 * handlers all take the definition value, a wrong job name, field, header or
 * signal payload is a compile error, and the same validators enforce it at
 * run time. This module holds no IO so clients and workers can share it.
 */

import { checkedDefinition } from "./definition-input.js";
import { TaqubaError, ValidationError } from "../errors.js";
import { describeValue, hasMethods, quoteValue } from "../option-values.js";
import { formatIssue, type Validator } from "./validator.js";
import { jsonErrorText } from "../redact.js";
import { compileKeyTemplate } from "./key-template.js";
import { compileFlowControl, type FlowControl, type FlowControlSpec } from "./flow-control.js";

export { compileKeyTemplate };

/** Header values as they travel with a job: strings by name. */
export type HeaderValues = { readonly [name: string]: string };

/** The typed header set a spec package declares for all its jobs. */
export interface HeaderSetDefinition<Headers extends HeaderValues = HeaderValues> {
  readonly kind: "headers";
  readonly package: string;
  /** Every declared header, sorted. */
  readonly names: readonly string[];
  /** The headers a submission must carry, sorted. */
  readonly required: readonly string[];
  /** The headers marked `sensitive: true` in the spec: redacted in logs and spans. */
  readonly sensitive: readonly string[];
  readonly validator: Validator<Headers>;
}

/** A typed job: what a client submits and what a handler implements. */
export interface JobDefinition<Name extends string = string, Input = unknown, Output = unknown, Err = unknown, Headers extends HeaderValues = HeaderValues> {
  readonly kind: "job";
  /** The qualified name `<package>.<job>` the runner files jobs under. */
  readonly name: Name;
  readonly package: string;
  readonly description: string | undefined;
  readonly input: Validator<Input>;
  readonly output: Validator<Output>;
  /** The typed error a handler may fail with (`ctx.fail`), when the spec declares one. */
  readonly error: Validator<Err> | undefined;
  readonly headers: HeaderSetDefinition<Headers>;
  /** Derives the deduplication key from the input, when the spec declares a template. */
  readonly idempotencyKey: ((input: Input) => string) | undefined;
  readonly maxAttempts: number | undefined;
  /** Queue priority of its runs (lower is claimed first); undefined for the queue's default. */
  readonly priority: number | undefined;
  /** A hash of the job's normalised contract (schemas, headers, key); changes when the contract does. */
  readonly contractHash: string;
  /** Its concurrency and rate limits (the spec's `concurrency`, `rate_limit`), if it declares any. */
  readonly flowControl?: FlowControl;
}

/** A typed signal: a correlation key built from typed parameters and a typed payload. */
export interface SignalDefinition<Name extends string = string, Params = unknown, Payload = unknown> {
  readonly kind: "signal";
  /** The qualified name `<package>.<signal>`. */
  readonly name: Name;
  readonly package: string;
  /** The correlation-key template, e.g. `payment:{order_id}`. */
  readonly keyTemplate: string;
  readonly params: Validator<Params>;
  readonly payload: Validator<Payload>;
  /** Builds the correlation key; validates the parameters first. */
  key(params: Params): string;
  /** Validates a payload and encodes it (UTF-8 JSON) for the wire. */
  encode(payload: Payload): Uint8Array;
  /** Decodes a received payload and validates it: old senders exist. */
  decode(bytes: Uint8Array): Payload;
}

/** A handler's outcome as a client sees it. */
export type JobOutcome<Output, Err> =
  | { readonly status: "succeeded"; readonly output: Output }
  | {
      readonly status: "failed";
      /** The typed error when the handler failed through `ctx.fail`; undefined for crashes and exhausted attempts. */
      readonly error: Err | undefined;
      readonly message: string;
    }
  | {
      readonly status: "cancelled";
      /** The job that replaced this one before it started, when a debounce did (a spec's `debounce`). */
      readonly supersededBy?: string;
    };

/** A submitted job, to await or look up its outcome, also after a restart. */
export interface JobHandle<Output, Err> {
  readonly jobId: string;
  /** False when the idempotency key matched an existing job and nothing new was enqueued. */
  readonly newlySubmitted: boolean;
  /** Waits for the job to end. */
  result(): Promise<JobOutcome<Output, Err>>;
  /** The outcome if the job has ended, else null; never waits. */
  fetchResult(): Promise<JobOutcome<Output, Err> | null>;
  /**
   * Waits for the job to end and resolves with its output; rejects with
   * `JobFailedError` (carrying the typed error) or `JobCancelledError`.
   */
  output(): Promise<Output>;
}

/** Options of one submission. */
export interface JobSubmitOptions<Headers extends HeaderValues = HeaderValues> {
  /** Typed headers; generated clients require this when the package declares required headers. */
  readonly headers?: Headers;
  /**
   * Queue priority: LOWER numbers are claimed first (0 before 1000), an
   * integer in 0..2^32-1. Default: the definition's priority, else the step
   * queue's `defaultPriority` (1000).
   */
  readonly priority?: number;
  /** Epoch milliseconds before which the job is not claimed. Default: now. */
  readonly runAt?: number;
  /** Overrides the key derived from the definition's idempotency template. */
  readonly idempotencyKey?: string;
  /** Default: the definition's `maxAttempts`, else the queue's. */
  readonly maxAttempts?: number;
  /**
   * A signal correlation key: when the job ends, however it ends, its
   * outcome (a `JobNotice`, canonical JSON) is sent as a signal under this
   * key on the job's runtime, so a workflow step continued on that signal
   * resumes without holding a worker while the job runs. Sent at least once,
   * by a terminal notification committed with the job's termination; use a
   * key unique to the waiting run and job. Needs a runner from
   * `JobRunner.builder`. Default: no signal.
   */
  readonly notifySignal?: string;
}

/**
 * What a generated client needs from a job runner. The runner validates the
 * input and headers again on submit and on the worker side.
 */
export interface JobSubmitter {
  submit<Name extends string, Input, Output, Err, Headers extends HeaderValues>(
    definition: JobDefinition<Name, Input, Output, Err, Headers>,
    input: Input,
    options?: JobSubmitOptions<Headers>,
  ): Promise<JobHandle<Output, Err>>;
}

/** Where a signal was put: handed to a waiting step, or kept until one waits. */
export type SignalDelivery = "delivered" | "buffered";

/** What a generated client needs to send signals (a `WorkflowRuntime` satisfies it). */
export interface SignalSender {
  signal(correlationKey: string, payload: Uint8Array): Promise<SignalDelivery>;
}

/** What a handler receives beside its input. */
export interface JobContext<Headers extends HeaderValues = HeaderValues, Err = unknown> {
  readonly jobId: string;
  /** 1 on the first delivery. */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly headers: Headers;
  /** Aborted when the job is cancelled or the runner shuts down. */
  readonly cancelSignal: AbortSignal;
  /** Ends the job as failed with a typed error (validated, then stored); never retried. */
  fail(error: Err): never;
}

/** The implementation of one job. */
export interface JobHandler<Input = unknown, Output = unknown, Err = unknown, Headers extends HeaderValues = HeaderValues> {
  run(input: Input, ctx: JobContext<Headers, Err>): Promise<Output>;
}

/** What generated `register` functions need from a runner builder. */
export interface JobRegistrar {
  register<Name extends string, Input, Output, Err, Headers extends HeaderValues>(
    definition: JobDefinition<Name, Input, Output, Err, Headers>,
    handler: JobHandler<Input, Output, Err, Headers>,
  ): unknown;
}

/**
 * Thrown by `ctx.fail`: the handler ended its job with a typed error. The
 * runner validates `error` against the definition's error schema and stores
 * it as the job's outcome without retrying.
 */
export class JobFailure<Err = unknown> extends TaqubaError {
  constructor(
    readonly error: Err,
    message = "the job failed with a typed error",
  ) {
    // A symbol or revoked Proxy would throw a TypeError from the template below instead.
    if (typeof message !== "string") throw new ValidationError(`a JobFailure's message must be a string, got ${describeValue(message)}`);
    super("JOB_FAILURE", `${message}; see the error payload for details`);
  }
}

/** Defines the typed header set of a package. */
export function defineHeaders<Headers extends HeaderValues>(spec: {
  package: string;
  names: readonly string[];
  required: readonly string[];
  sensitive?: readonly string[];
  validator: Validator<Headers>;
}): HeaderSetDefinition<Headers> {
  return checkedDefinition("defineHeaders", spec, () => {
    return Object.freeze({
      kind: "headers",
      package: spec.package,
      names: Object.freeze([...spec.names]),
      required: Object.freeze([...spec.required]),
      sensitive: Object.freeze([...(spec.sensitive ?? [])]),
      validator: spec.validator,
    });
  });
}

/**
 * Defines a typed job; generated code calls this once per job of a spec.
 *
 * @example
 * export const emailSendJob: JobDefinition<"billing.email.send", EmailSendInput, EmailSendOutput, never, BillingHeaders> =
 *   defineJob({ name: "billing.email.send", package: "billing", input, output, headers, contractHash: "d86d75b39ee00f59" });
 */
export function defineJob<Name extends string, Input, Output, Err, Headers extends HeaderValues>(spec: {
  name: Name;
  package: string;
  description?: string;
  input: Validator<Input>;
  output: Validator<Output>;
  error?: Validator<Err>;
  headers: HeaderSetDefinition<Headers>;
  idempotencyKey?: string;
  maxAttempts?: number;
  priority?: number;
  contractHash: string;
  flowControl?: FlowControlSpec;
}): JobDefinition<Name, Input, Output, Err, Headers> {
  return checkedDefinition("defineJob", spec, () => {
    const key = spec.idempotencyKey === undefined ? undefined : compileKeyTemplate(spec.idempotencyKey);
    const flowControl = compileFlowControl(spec.name, spec.headers.names, spec.flowControl);
    return Object.freeze({
      kind: "job",
      name: spec.name,
      package: spec.package,
      description: spec.description,
      input: spec.input,
      output: spec.output,
      error: spec.error,
      headers: spec.headers,
      idempotencyKey: key === undefined ? undefined : (input: Input) => key(input),
      maxAttempts: spec.maxAttempts,
      priority: spec.priority,
      contractHash: spec.contractHash,
      ...(flowControl === undefined ? {} : { flowControl }),
    });
  });
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * Defines a typed signal; generated code calls this once per signal of a spec.
 *
 * @example
 * const paid = defineSignal({ name: "billing.paid", package: "billing", keyTemplate: "paid:{order_id}", params, payload });
 * await runtime.signal(paid.key({ order_id: "o-1" }), paid.encode({ amount_cents: 500 }));
 */
export function defineSignal<Name extends string, Params, Payload>(spec: {
  name: Name;
  package: string;
  keyTemplate: string;
  params: Validator<Params>;
  payload: Validator<Payload>;
}): SignalDefinition<Name, Params, Payload> {
  return checkedDefinition("defineSignal", spec, () => {
    const key = compileKeyTemplate(spec.keyTemplate);
    const params: Validator<Params> = spec.params;
    const payload: Validator<Payload> = spec.payload;
    return Object.freeze({
      kind: "signal",
      name: spec.name,
      package: spec.package,
      keyTemplate: spec.keyTemplate,
      params,
      payload,
      key(values: Params): string {
        params.assert(values);
        return key(values);
      },
      encode(value: Payload): Uint8Array {
        payload.assert(value);
        return encoder.encode(JSON.stringify(value));
      },
      decode(bytes: Uint8Array): Payload {
        let value: unknown;
        try {
          value = JSON.parse(decoder.decode(bytes));
        } catch (e) {
          throw new ValidationError(`${payload.name} is not UTF-8 JSON; send it through the generated signal sender`, [
            formatIssue({ path: "", message: jsonErrorText(e) }),
          ]);
        }
        payload.assert(value);
        return value;
      },
    });
  });
}

/**
 * Wraps a handler so that the worker side of every boundary is checked: the
 * input again (jobs may predate the code), the output and any typed error
 * before the runner stores them. Generated `register` functions use it.
 */
export function validatingHandler<Name extends string, Input, Output, Err, Headers extends HeaderValues>(
  definition: JobDefinition<Name, Input, Output, Err, Headers>,
  handler: JobHandler<Input, Output, Err, Headers>,
): JobHandler<Input, Output, Err, Headers> {
  const checkError = (error: unknown): void => {
    if (definition.error === undefined) {
      throw new ValidationError(
        `job "${definition.name}" declares no error type, so it cannot fail with a typed error; declare "error" in its spec or throw instead`,
      );
    }
    const validator: Validator<Err> = definition.error;
    validator.assert(error);
  };
  return {
    async run(input: Input, ctx: JobContext<Headers, Err>): Promise<Output> {
      definition.input.assert(input);
      const checked = new Proxy(ctx, {
        get(target, property) {
          if (property !== "fail") return Reflect.get(target, property, target);
          return (error: Err): never => {
            checkError(error);
            return target.fail(error);
          };
        },
      });
      let output: Output;
      try {
        output = await handler.run(input, checked);
      } catch (e) {
        if (e instanceof JobFailure) checkError(e.error);
        throw e;
      }
      definition.output.assert(output);
      return output;
    },
  };
}

function isSubmitter(target: unknown): target is JobSubmitter {
  return hasMethods(target, ["submit"]);
}

function isSignalSender(target: unknown): target is SignalSender {
  return hasMethods(target, ["signal"]);
}

/** @internal The package name generated code passes, as a message shows it (a caller may pass anything, a symbol or 10 MB). */
export function packageText(pkg: unknown): string {
  return typeof pkg === "string" ? quoteValue(pkg).slice(1, -1) : describeValue(pkg);
}

/** The target of a generated client as a `JobSubmitter`, or a clear error when it is not one. */
export function requireSubmitter(target: unknown, pkg: string): JobSubmitter {
  if (!isSubmitter(target)) {
    const p = packageText(pkg);
    throw new ValidationError(`the ${p} client was made over an object without submit(); pass a job runner to ${p}.client() to submit jobs`);
  }
  return target;
}

/** The target of a generated client as a `SignalSender`, or a clear error when it is not one. */
export function requireSignalSender(target: unknown, pkg: string): SignalSender {
  if (!isSignalSender(target)) {
    const p = packageText(pkg);
    throw new ValidationError(`the ${p} client was made over an object without signal(); pass a workflow runtime to ${p}.client() to send signals`);
  }
  return target;
}
