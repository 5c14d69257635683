/**
 * @module Submit-side checks of typed jobs, shared by `JobRunner.submit` and
 * `JobGroup.submit`: everything is validated before anything is written.
 */
import { validateInstant } from "../time-bounds.js";
import { ValidationError } from "../errors.js";
import { isWellFormed } from "../queue/names.js";
import { utf8 } from "../workflow/records/codec.js";
import type { RunOptions } from "../workflow/runs/run-types.js";
import { encodeJobPayload } from "./job-codec.js";
import { checkNotifyKey, JOB_NOTIFY_HEADER } from "./job-notice.js";
import type { Registration } from "./job-step-runner.js";
import type { JobGroupSubmitOptions } from "./job-group.js";
import type { HeaderValues, JobDefinition, JobSubmitOptions } from "../contract/job-definition.js";
import { describeValue, hasMethods, isOptionObject, NO_OPTIONS, optionFields, readOptions, refuseUnknownFields } from "../option-values.js";

/** A definition with its types erased, as submit-side checks see it. */
export type AnyDefinition = JobDefinition<string, unknown, unknown, unknown, never>;

export function positiveInt(name: string, n: number): number {
  if (!Number.isInteger(n) || n < 1) throw new ValidationError(`${name} must be an integer >= 1, got ${describeValue(n)}`);
  return n;
}

export function checkDefinition(def: unknown): void {
  if (def === null || typeof def !== "object" || (def as { kind?: unknown }).kind !== "job") {
    throw new ValidationError("expected a job definition (from defineJob or generated code)");
  }
}

/** @internal Checks one `register(definition, handler)` of a job and returns its registration; throws `ValidationError`. */
export function checkJobRegistration(definition: unknown, handler: unknown): Registration {
  checkDefinition(definition);
  const def = definition as AnyDefinition;
  if (typeof handler !== "object" || !hasMethods(handler, ["run"])) {
    throw new ValidationError(`the handler of job "${def.name}" must have a run(input, ctx) method`);
  }
  return { definition: def, handler: handler as Registration["handler"] };
}

const JOB_SUBMIT_FIELDS = optionFields<JobSubmitOptions>({
  headers: true,
  priority: true,
  runAt: true,
  idempotencyKey: true,
  maxAttempts: true,
  notifySignal: true,
});
const JOB_GROUP_SUBMIT_FIELDS = optionFields<JobGroupSubmitOptions<HeaderValues>>({ headers: true, priority: true, runAt: true, maxAttempts: true });

/**
 * @internal Checks a submission's headers and options and turns them into run options; throws `ValidationError`.
 * `fields` and `what`: the options a group's submission takes, and their name in a refusal.
 */
export function prepareRunOptions(
  def: AnyDefinition,
  options: JobSubmitOptions<HeaderValues> | undefined,
  fields: readonly string[] = JOB_SUBMIT_FIELDS,
  what = "JobSubmitOptions",
): RunOptions {
  checkDefinition(def);
  if (isOptionObject(options)) refuseUnknownFields(options, fields, `${what}.`, what);
  // Each field read once into a copy: what is checked is what is submitted, and a field set on Object.prototype is none.
  const o: JobSubmitOptions<HeaderValues> = isOptionObject(options) ? readOptions(options, fields, what) : (options ?? NO_OPTIONS);
  const headers: Record<string, string> = { ...(o.headers ?? {}) };
  def.headers.validator.assert(headers);
  if (o.priority !== undefined && !Number.isInteger(o.priority)) throw new ValidationError(`priority must be an integer, got ${describeValue(o.priority)}`);
  if (o.runAt !== undefined) validateInstant("runAt", o.runAt);
  if (o.maxAttempts !== undefined) positiveInt("maxAttempts", o.maxAttempts);
  if (
    o.idempotencyKey !== undefined &&
    (typeof o.idempotencyKey !== "string" || o.idempotencyKey.length === 0 || !isWellFormed(o.idempotencyKey) || utf8(o.idempotencyKey).byteLength > 512)
  ) {
    throw new ValidationError(`idempotencyKey must be 1 to 512 bytes of well-formed text, got ${describeValue(o.idempotencyKey)}`);
  }
  // Added after the package's validator ran: it is the runtime's header, not the package's.
  const notify: Record<string, string> = o.notifySignal === undefined ? {} : { [JOB_NOTIFY_HEADER]: checkNotifyKey(o.notifySignal) };
  const priority = o.priority ?? def.priority;
  const maxAttempts = o.maxAttempts ?? def.maxAttempts;
  return {
    headers: { ...(headers as Record<string, string>), ...notify },
    ...(priority === undefined ? {} : { priority }),
    ...(maxAttempts === undefined ? {} : { maxAttemptsPerStep: maxAttempts }),
    ...(o.runAt === undefined ? {} : { runAt: o.runAt }),
  };
}

/** @internal Validates an input and encodes it as a job run's payload; throws `ValidationError`. */
export function preparePayload(def: AnyDefinition, input: unknown): Uint8Array {
  def.input.assert(input);
  try {
    return encodeJobPayload(def.name, input);
  } catch (e) {
    throw new ValidationError(`the input of job "${def.name}" cannot be stored as JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/**
 * @internal Adds the definition's flow control (its rule, this
 * submission's keys and its debounce) to prepared run options; throws `ValidationError` when
 * a key's value is missing.
 */
export function withFlow(def: AnyDefinition, input: unknown, runOptions: RunOptions): RunOptions {
  const f = def.flowControl;
  return f === undefined ? runOptions : { ...runOptions, ...f.runOptionsOf(input, runOptions.headers ?? {}) };
}

/** A job group's submission, checked and prepared: its members and the options every member runs with. */
export interface PreparedGroupSubmission {
  readonly members: ReadonlyArray<{ readonly key: string; readonly input: Uint8Array }>;
  /** With the definition's flow rule and keys (from the headers: a group's members share one set of options). */
  readonly runOptions: RunOptions;
}

/**
 * @internal Checks a job group's inputs and options and prepares its
 * members, for `JobGroup.submit` and the client's job groups alike;
 * throws `ValidationError` before anything is written. `keyOf` names item
 * `i` (the definition's idempotency key, else `item-{i}`).
 */
export function prepareGroupSubmission(
  def: AnyDefinition,
  inputs: readonly unknown[],
  options: JobSubmitOptions<HeaderValues> | undefined,
  keyOf: (input: unknown, index: number) => string,
): PreparedGroupSubmission {
  checkDefinition(def);
  if (!Array.isArray(inputs)) throw new ValidationError("JobGroup.submit takes an array of inputs");
  if (options?.idempotencyKey !== undefined) {
    throw new ValidationError("a job group keys its members itself (the definition's idempotency key, else item-{i}); drop idempotencyKey");
  }
  if (options?.notifySignal !== undefined) {
    throw new ValidationError("a job group reports its members through results() and join(), not signals; drop notifySignal");
  }
  if (def.flowControl?.spec.debounce !== undefined) {
    throw new ValidationError(
      `job "${def.name}" is debounced (the last submission of a key wins), so the members of a group would replace each other; submit its jobs one by one`,
    );
  }
  if (def.flowControl?.readsInput === true) {
    throw new ValidationError(
      `job "${def.name}" keys its flow control (concurrency or rate limit) by input fields, and a group's members share one set of options; submit its jobs one by one, or key the limit by headers`,
    );
  }
  const runOptions = withFlow(def, undefined, prepareRunOptions(def, options, JOB_GROUP_SUBMIT_FIELDS, "JobGroupSubmitOptions"));
  const members = inputs.map((input, i) => {
    try {
      return { key: keyOf(input, i), input: preparePayload(def, input) };
    } catch (e) {
      if (e instanceof ValidationError) throw new ValidationError(`item ${i} of the group's submission is invalid: ${e.message}`, e.issues);
      throw e;
    }
  });
  return { members, runOptions };
}
