/**
 * @module The fields a submission's option objects take: a field that is
 * none of them (a misspelt `maxAttemptsPerstep`, a `runat`) is refused
 * before anything is written, rather than left to its default in silence.
 * Each list is checked against its type, so a new option cannot be left out.
 */
import { ValidationError } from "../../errors.js";
import { describeValue, isOptionObject, isUnreadableObject, optionFields, readOptions, refuseUnknownFields } from "../../option-values.js";
import { checkRunHeaders } from "../limits.js";
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

/** Throws `ValidationError` for an object no question can be asked of (a revoked Proxy): every read of it would throw a TypeError. */
function refuseUnreadable(path: string, v: unknown): void {
  if (isUnreadableObject(v)) throw new ValidationError(`${path} must be an object, got ${describeValue(v)}`);
}

/**
 * A submission's spec, its options and their flow and debounce, each field
 * read once into a plain copy after refusing a field none of them takes: a
 * getter or Proxy that answers differently on a second read cannot pass the
 * checks with one value and be submitted with another, and one that throws
 * is a `ValidationError` naming the field. Anything that is no object is
 * returned as given, for the caller's own refusal.
 */
export function readRunSpec(given: unknown, what = "RunSpec"): unknown {
  refuseUnreadable(`the ${what}`, given);
  if (!isOptionObject(given)) return given;
  refuseUnknownRunSpecFields(given, what);
  const spec: Record<string, unknown> = readOptions(given, RUN_SPEC_FIELDS, what, `the ${what}`);
  spec.options = readRunOptions(spec.options);
  if (spec.options === undefined) delete spec.options;
  return spec;
}

/**
 * Run options as `readRunSpec` reads them, wherever they sit (a child's
 * start, a run group's submission; `path` names them): every field, those
 * of `flow` and `debounce` and each header read once into plain copies,
 * after refusing a field none of them takes. The copy's headers are checked
 * as a run's are (`checkRunHeaders`). Anything that is no object is
 * returned as given, for the caller's own refusal.
 */
export function readRunOptions(given: unknown, path = "RunOptions"): unknown {
  refuseUnreadable(path, given);
  if (!isOptionObject(given)) return given;
  refuseUnknownFields(given, RUN_OPTION_FIELDS, `${path}.`, path);
  const o: Record<string, unknown> = readOptions(given, RUN_OPTION_FIELDS, path);
  for (const [k, fields] of [
    ["flow", RUN_FLOW_FIELDS],
    ["debounce", RUN_DEBOUNCE_FIELDS],
  ] as const) {
    const sub = o[k];
    refuseUnreadable(`${path}.${k}`, sub);
    if (!isOptionObject(sub)) continue;
    refuseUnknownFields(sub, fields, `${path}.${k}.`, `${path}.${k}`);
    o[k] = readOptions(sub, fields, `${path}.${k}`);
  }
  if (o.headers !== undefined) o.headers = checkRunHeaders(o.headers, `${path}.headers`);
  return o;
}
