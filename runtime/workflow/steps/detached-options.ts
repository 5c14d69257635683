/**
 * @module The options of `Step.detached` and `Delivery.detached`, read once
 * and checked: a misspelt field (`stepNumbr`, `maxAttempt`) is refused
 * rather than left to its default, which would unit-test a runner on a step
 * other than the one its author meant.
 */
import { ValidationError } from "../../errors.js";
import { checkStoreArg } from "../../store/store-check.js";
import { describeValue, hasMethods, isInstance, isOptionBytes, isOptionObject, optionFields, readExactOptions } from "../../option-values.js";
import type { DetachedOptions } from "./delivery.js";

const DETACHED_FIELDS = optionFields<DetachedOptions>({
  runId: true,
  headers: true,
  jobId: true,
  attempt: true,
  maxAttempts: true,
  stepNumber: true,
  signal: true,
  cancelSignal: true,
  store: true,
  memoPrefix: true,
  kv: true,
});

/** `given` (absent: none) as `what` (`Step.detached`) takes it: a copy, each field read once; throws `ValidationError`. */
export function readDetachedOptions(given: DetachedOptions | undefined, what: string): DetachedOptions {
  if (given === undefined) return {};
  const o = readExactOptions(given, DETACHED_FIELDS, "DetachedOptions", `${what}'s options`) as DetachedOptions;
  const problems: string[] = [];
  const count = (field: "attempt" | "maxAttempts" | "stepNumber", min: number) => {
    const v = o[field];
    if (v !== undefined && (!Number.isSafeInteger(v) || v < min))
      problems.push(`DetachedOptions.${field} must be an integer from ${min} to ${Number.MAX_SAFE_INTEGER}, got ${describeValue(v)}`);
  };
  count("attempt", 1);
  count("maxAttempts", 1);
  count("stepNumber", 0);
  const text = (field: "jobId" | "memoPrefix") => {
    const v = o[field];
    if (v !== undefined && (typeof v !== "string" || v.length === 0))
      problems.push(`DetachedOptions.${field} must be a non-empty string, got ${describeValue(v)}`);
  };
  text("jobId");
  text("memoPrefix");
  if (o.signal !== undefined && o.signal !== null && !isOptionBytes(o.signal))
    problems.push(`DetachedOptions.signal must be a Uint8Array or null, got ${describeValue(o.signal)}`);
  if (o.cancelSignal !== undefined && !isInstance(o.cancelSignal, AbortSignal))
    problems.push(`DetachedOptions.cancelSignal must be an AbortSignal, got ${describeValue(o.cancelSignal)}`);
  if (o.store !== undefined && !hasMethods(o.store, ["get", "put", "delete", "list"]))
    problems.push(`DetachedOptions.store must be an ObjectStore (get, put, delete, list), got ${describeValue(o.store)}`);
  else if (o.store !== undefined) {
    try {
      checkStoreArg("DetachedOptions.store", o.store);
    } catch (e) {
      if (!(e instanceof ValidationError)) throw e;
      problems.push(e.message);
    }
  }
  for (const field of ["headers", "kv"] as const)
    if (o[field] !== undefined && !isOptionObject(o[field])) problems.push(`DetachedOptions.${field} must be an object, got ${describeValue(o[field])}`);
  if (problems.length > 0) throw new ValidationError(`${what}'s options are not valid`, problems);
  return o;
}
