/**
 * @module The fields a submission's option objects take: a field that is
 * none of them (a misspelt `maxAttemptsPerstep`, a `runat`) is refused
 * before anything is written, rather than left to its default in silence.
 * Each list is checked against its type, so a new option cannot be left out.
 */
import { isOptionObject, refuseUnknownFields } from "../../option-values.js";
import type { RetryRunOptions, RunDebounce, RunFlow, RunOptions, RunSpec } from "./run-types.js";

const RUN_SPEC_FIELDS = Object.keys({ input: 0, runId: 0, options: 0, effects: 0 } satisfies Record<keyof RunSpec, 0>);
const RUN_OPTION_FIELDS = Object.keys({
  headers: 0,
  priority: 0,
  maxAttemptsPerStep: 0,
  runAt: 0,
  flow: 0,
  debounce: 0,
} satisfies Record<keyof RunOptions, 0>);
const RUN_FLOW_FIELDS = Object.keys({ rule: 0, concurrencyKey: 0, rateKey: 0 } satisfies Record<keyof RunFlow, 0>);
const RUN_DEBOUNCE_FIELDS = Object.keys({ key: 0, periodMs: 0 } satisfies Record<keyof RunDebounce, 0>);
const RETRY_RUN_FIELDS = Object.keys({ fromStep: 0 } satisfies Record<keyof RetryRunOptions, 0>);

/** Refuses a field of `spec` (an object) that a `RunSpec` does not take; its options are checked with `checkRunOptions`. */
export function refuseUnknownRunSpecFields(spec: object, what = "RunSpec"): void {
  refuseUnknownFields(spec, RUN_SPEC_FIELDS, `${what}.`, `the ${what}`);
}

/** Refuses a field of `o`, of its `flow` or of its `debounce` that `RunOptions` does not take (`path` names `o`). */
export function refuseUnknownRunOptionFields(o: object, path = "RunOptions"): void {
  refuseUnknownFields(o, RUN_OPTION_FIELDS, `${path}.`, path);
  const { flow, debounce } = o as RunOptions;
  if (isOptionObject(flow)) refuseUnknownFields(flow, RUN_FLOW_FIELDS, `${path}.flow.`, `${path}.flow`);
  if (isOptionObject(debounce)) refuseUnknownFields(debounce, RUN_DEBOUNCE_FIELDS, `${path}.debounce.`, `${path}.debounce`);
}

/** Refuses a field of `retryRun`'s options that `RetryRunOptions` does not take. */
export function refuseUnknownRetryFields(o: object): void {
  refuseUnknownFields(o, RETRY_RUN_FIELDS, "RetryRunOptions.", "RetryRunOptions");
}
