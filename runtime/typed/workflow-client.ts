/**
 * @module The run-time half of generated workflow clients: submit with a
 * validated input and headers, status, cancel, and `wait` / `result` that
 * turn a run's end into a typed result or typed failure.
 *
 * Generated code declares the typed surface (`OrderFulfilClient`) and
 * builds it with {@link workflowClient}; the target is checked lazily, so a
 * package client over a job runner still type-checks its job half.
 */

import { StoreCorruptedError, TaqubaError, ValidationError } from "../errors.js";
import { packageText, type HeaderValues, type SignalDelivery, type SignalSender } from "../contract/job-definition.js";
import { checkedDefinition } from "../contract/definition-input.js";
import { hasMethods, isOptionObject, optionFields, readOptions, refuseUnknownFields } from "../option-values.js";
import type { Validator } from "../contract/validator.js";
import type { SettlementEffects } from "../queue/effects.js";
import { fromUtf8 } from "../workflow/records/codec.js";
import type { RunId } from "../workflow/runs/run-id.js";
import type { ResultUnavailableReason, RunEnd, RunErrorKind, RunOutcome, RunStatus, RunSpec, SubmitOutcome } from "../workflow/runs/run-types.js";
import { encodeStepEnvelope } from "../contract/step-envelope.js";
import type { AnyWorkflowDefinition, WorkflowDefinition } from "../contract/workflow-definition.js";
import { jsonErrorText } from "../redact.js";

/** What a workflow client needs from its target (a `WorkflowRuntime` or a `JobRunner` satisfies it). */
export interface WorkflowHost extends SignalSender {
  submit(spec: RunSpec): Promise<SubmitOutcome>;
  status(runId: RunId | string): Promise<RunStatus | null>;
  outcome(runId: RunId | string): Promise<RunOutcome | null>;
  wait(runId: RunId | string): Promise<RunEnd>;
  waitTimeout(runId: RunId | string, timeoutMs: number): Promise<RunEnd | null>;
  cancel(runId: RunId | string): Promise<boolean>;
}

/** Options of one workflow submission. */
export interface WorkflowSubmitOptions<Headers extends HeaderValues = HeaderValues> {
  /** Typed headers, threaded through every step; generated clients require them when the package declares required ones. */
  readonly headers?: Headers;
  /** The run id; a ULID when absent. Submission is idempotent on `(runId, input)`. */
  readonly runId?: RunId | string;
  /** Queue priority of every step. Default: the queue's. */
  readonly priority?: number;
  /** Attempt limit of every step. Default: the queue's. */
  readonly maxAttemptsPerStep?: number;
  /** Epoch ms before which the entry step is not claimable. */
  readonly runAt?: number;
  /** Caller KV writes applied atomically with the entry step's enqueue; dropped on a duplicate. */
  readonly effects?: SettlementEffects;
}

const WORKFLOW_SUBMIT_FIELDS = optionFields<WorkflowSubmitOptions>({
  headers: true,
  runId: true,
  priority: true,
  maxAttemptsPerStep: true,
  runAt: true,
  effects: true,
});

/** How a typed workflow run ended. */
export type WorkflowRunEnd<Result, Err> =
  | { readonly status: "succeeded"; readonly runId: RunId; readonly finalStep: number; readonly result: Result }
  | {
      readonly status: "failed";
      readonly runId: RunId;
      readonly finalStep: number;
      /** The typed error when a step failed the run through `ctx.fail`; undefined for step errors and dead letters. */
      readonly error: Err | undefined;
      /** Why the run failed, as the runtime recorded it. */
      readonly message: string;
      readonly errorKind: RunErrorKind | undefined;
    }
  | {
      readonly status: "cancelled";
      readonly runId: RunId;
      readonly finalStep: number;
      readonly reason: string | undefined;
      /** The run that replaced this one before it started, when a debounce did (`RunOptions.debounce`, a spec's `debounce`). */
      readonly supersededBy?: RunId;
    };

/** The queries and commands every workflow client has; generated clients add a typed `submit` and `signals`. */
export interface WorkflowClient<Result, Err> {
  /** The run's status, or null for an unknown run. */
  status(runId: RunId | string): Promise<RunStatus | null>;
  /** Waits for the run to end; the result and typed error are validated. Throws `RunNotFoundError` for an unknown run. */
  wait(runId: RunId | string): Promise<WorkflowRunEnd<Result, Err>>;
  /** {@link WorkflowClient.wait} bounded by `timeoutMs`; null when the run has not ended by then. */
  waitTimeout(runId: RunId | string, timeoutMs: number): Promise<WorkflowRunEnd<Result, Err> | null>;
  /** The run's end if it has ended, else null; never waits. */
  result(runId: RunId | string): Promise<WorkflowRunEnd<Result, Err> | null>;
  /** Requests cancellation; false when the run is unknown or already ended. */
  cancel(runId: RunId | string): Promise<boolean>;
}

/**
 * A succeeded run whose result the runtime cannot report. `reason` says
 * what happened to its result record: `"removed"` (gone from the memo
 * store), `"damaged"` (stored but unreadable, or of another termination),
 * or `"unknown"` (the end was read without its record, e.g. from a
 * reader that does not tell).
 */
export class WorkflowResultUnavailableError extends TaqubaError {
  constructor(
    readonly runId: string,
    readonly reason: ResultUnavailableReason | "unknown" = "unknown",
  ) {
    super("WORKFLOW_RESULT_UNAVAILABLE", `run "${runId}" succeeded but its result cannot be read: ${RESULT_UNAVAILABLE[reason]}`);
  }
}

const RESULT_UNAVAILABLE: Readonly<Record<ResultUnavailableReason | "unknown", string>> = {
  removed:
    "its result record is gone from the memo store while its end is still recorded (removed by memoStore.clearMemosForRun, by a memo-retention sweep clearing the run, " +
    "or by the object store itself, such as a lifecycle rule on the memo prefix); it cannot be read again: submit the run under a new id if its result is needed",
  damaged:
    "its result record is stored but cannot be read (damaged, lacking the result, or of another end of the run); inspect the object under the memo prefix, " +
    "or submit the run under a new id if its result is needed",
  unknown: "the end was reported without its result record; read it again with the runtime's wait or outcome, which say why",
};

function isHost(target: unknown): target is WorkflowHost {
  return hasMethods(target, ["submit", "wait", "status", "cancel"]);
}

/** The target of a generated client as a `WorkflowHost`, or a clear error when it is not one. */
export function requireWorkflowHost(target: unknown, pkg: string): WorkflowHost {
  if (!isHost(target)) {
    const p = packageText(pkg);
    throw new ValidationError(
      `the ${p} client was made over an object that cannot run workflows; pass a JobRunner or a WorkflowRuntime to ${p}.client() to submit workflows`,
    );
  }
  return target;
}

function assertValid(validator: Validator<unknown>, value: unknown): void {
  validator.assert(value);
}

function parseJson(text: string, what: string, key: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new StoreCorruptedError(key, `${what} is not JSON: ${jsonErrorText(e)}`);
  }
}

/** @internal Turns a run's end into its typed form. */
export function typedRunEnd<Result, Err>(def: AnyWorkflowDefinition, end: RunEnd): WorkflowRunEnd<Result, Err> {
  const t = end.termination;
  const base = { runId: t.runId, finalStep: t.finalStep };
  switch (t.status) {
    case "succeeded": {
      const bytes = end.outcome?.result;
      if (bytes === undefined) throw new WorkflowResultUnavailableError(t.runId, end.outcome === null ? (end.resultUnavailable ?? "unknown") : "damaged");
      const result = parseJson(fromUtf8(bytes), `the result of run "${t.runId}"`, t.runId);
      assertValid(def.result, result);
      return { status: "succeeded", ...base, result: result as Result };
    }
    case "failed": {
      // The result record holds the whole text; the terminal record's may be cut short.
      const message = end.outcome?.error ?? t.error ?? "the run failed";
      let error: Err | undefined;
      // Only a runner verdict carries a typed error: its reason is the error as canonical JSON.
      if (t.errorKind === "runner" && def.error !== undefined) {
        const value = parseJson(message, `the typed error of run "${t.runId}"`, t.runId);
        assertValid(def.error, value);
        error = value as Err;
      }
      return { status: "failed", ...base, error, message, errorKind: t.errorKind };
    }
    case "cancelled":
      return { status: "cancelled", ...base, reason: t.error, ...(t.supersededBy === undefined ? {} : { supersededBy: t.supersededBy }) };
  }
}

/**
 * Builds the client of one workflow over `target` (checked on each call).
 * Generated clients call this and type the result.
 *
 * @example
 * const orderFulfil = workflowClient(orderFulfilWorkflow, runtime, "orders");
 * const { runId } = await orderFulfil.submit({ order_id: "o-1" }, { headers: { tenant_id: "acme" } });
 */
export function workflowClient<Name extends string, Input, Result, Err, Headers extends HeaderValues, Handler>(
  definition: WorkflowDefinition<Name, Input, Result, Err, Headers, Handler>,
  target: unknown,
  pkg: string,
): WorkflowClient<Result, Err> & {
  submit(input: Input, options?: WorkflowSubmitOptions<Headers>): Promise<SubmitOutcome>;
  readonly signals: Readonly<Record<string, (params: unknown, payload: unknown) => Promise<SignalDelivery>>>;
} {
  const def = definition as unknown as AnyWorkflowDefinition;
  // The target is checked at each call (see the module note); the package name and definition now.
  if (typeof pkg !== "string") throw new ValidationError(`workflowClient takes the package name as a string, got ${packageText(pkg)}`);
  const host = () => requireWorkflowHost(target, pkg);
  const signals = checkedDefinition("workflowClient", definition, () => {
    if (def.kind !== "workflow")
      throw new ValidationError(`workflowClient takes a workflow definition (from defineWorkflow), got one of kind ${packageText(def.kind)}`);
    const out: Record<string, (params: unknown, payload: unknown) => Promise<SignalDelivery>> = {};
    for (const [ident, sig] of Object.entries(def.signals)) {
      out[ident] = async (params, payload) => {
        const key = sig.key(params);
        const bytes = sig.encode(payload);
        return host().signal(key, bytes);
      };
    }
    return out;
  });
  return {
    async submit(input, given) {
      assertValid(def.input, input);
      if (given !== undefined && given !== null && typeof given !== "object") throw new ValidationError("submit options must be an object");
      if (isOptionObject(given)) refuseUnknownFields(given, WORKFLOW_SUBMIT_FIELDS, "WorkflowSubmitOptions.", "WorkflowSubmitOptions");
      // Each field read once into a copy: what is checked is what is submitted, and a field set on Object.prototype is none.
      const options = isOptionObject(given) ? (readOptions(given, WORKFLOW_SUBMIT_FIELDS, "WorkflowSubmitOptions") as typeof given) : given;
      const headers = options?.headers ?? {};
      assertValid(def.headers.validator, headers);
      const h = host();
      return h.submit({
        input: encodeStepEnvelope(def.name, def.entry, input),
        ...(options?.runId === undefined ? {} : { runId: options.runId }),
        options: {
          headers,
          ...(options?.priority === undefined ? {} : { priority: options.priority }),
          ...(options?.maxAttemptsPerStep === undefined ? {} : { maxAttemptsPerStep: options.maxAttemptsPerStep }),
          ...(options?.runAt === undefined ? {} : { runAt: options.runAt }),
          ...def.flowControl?.runOptionsOf(input, headers),
        },
        ...(options?.effects === undefined ? {} : { effects: options.effects }),
      });
    },
    status: (runId) => host().status(runId),
    async wait(runId) {
      return typedRunEnd<Result, Err>(def, await host().wait(runId));
    },
    async waitTimeout(runId, timeoutMs) {
      const end = await host().waitTimeout(runId, timeoutMs);
      return end === null ? null : typedRunEnd<Result, Err>(def, end);
    },
    async result(runId) {
      const h = host();
      const status = await h.status(runId);
      if (status === null || status.state !== "terminated") return null;
      const { state: _state, step: _step, ...termination } = status;
      return typedRunEnd<Result, Err>(def, { termination, outcome: await h.outcome(runId) });
    },
    cancel: (runId) => host().cancel(runId),
    signals: Object.freeze(signals),
  };
}
