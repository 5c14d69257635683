/**
 * @module The fields a submission's option objects take: a field that is
 * none of them (a misspelt `maxAttemptsPerstep`, a `runat`) is refused
 * before anything is written, rather than left to its default in silence.
 * Each list is checked against its type, so a new option cannot be left out.
 */
import { isOptionObject, optionFields, refuseUnknownFields } from "../../option-values.js";
import type { RetryRunOptions, RunDebounce, RunFlow, RunOptions, RunSpec } from "./run-types.js";

const RUN_SPEC_FIELDS = optionFields<RunSpec>({ input: true, runId: true, options: true, effects: true });
const RUN_OPTION_FIELDS = optionFields<RunOptions>({ headers: true, priority: true, maxAttemptsPerStep: true, runAt: true, flow: true, debounce: true });
const RUN_FLOW_FIELDS = optionFields<RunFlow>({ rule: true, concurrencyKey: true, rateKey: true });
const RUN_DEBOUNCE_FIELDS = optionFields<RunDebounce>({ key: true, periodMs: true });
const RETRY_RUN_FIELDS = optionFields<RetryRunOptions>({ fromStep: true });

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
