/**
 * @module Typed schedules: a spec's `schedules:` entry as a definition
 * (target job or workflow, fixed typed input, headers, policies), turned
 * into the runtime's untyped `ScheduleSpec` and upserted.
 */
import { ValidationError } from "../errors.js";
import type { AnyWorkflowDefinition } from "../contract/workflow-definition.js";
import type { HeaderValues, JobDefinition } from "../contract/job-definition.js";
import type { Validator } from "../contract/validator.js";
import { encodeStepEnvelope } from "../contract/step-envelope.js";
import { encodeJobPayload } from "../jobs/job-codec.js";
import type { Schedules } from "../workflow/schedules/schedules.js";
import type { CatchUpPolicy, OverlapPolicy, ScheduleInfo, ScheduleSpec } from "../workflow/schedules/schedule-types.js";

/** A job or workflow definition a schedule can start. */
export type ScheduleTarget = { readonly kind: "job"; readonly name: string } | { readonly kind: "workflow"; readonly name: string };

type AnyScheduleTarget = JobDefinition<string, unknown, unknown, unknown, never> | AnyWorkflowDefinition;

/** One typed schedule, as generated from a spec's `schedules:`. */
export interface ScheduleDefinition {
  readonly kind: "schedule";
  readonly id: string;
  readonly package: string;
  readonly description?: string;
  readonly cron: string;
  readonly timezone: string;
  readonly target: ScheduleTarget;
  readonly input: unknown;
  readonly headers: Readonly<Record<string, string>>;
  readonly overlap: OverlapPolicy;
  readonly catchUp: CatchUpPolicy;
  readonly jitterMs: number;
  readonly priority?: number;
  readonly maxAttempts?: number;
}

/** Builds a schedule definition; `input` is typed by the target's input. */
export function defineSchedule<Input>(def: {
  readonly id: string;
  readonly package: string;
  readonly description?: string;
  readonly cron: string;
  readonly timezone: string;
  readonly target:
    | JobDefinition<string, Input, unknown, unknown, HeaderValues>
    | { readonly kind: "workflow"; readonly name: string; readonly input: { assert(v: unknown): asserts v is Input } };
  readonly input: NoInfer<Input>;
  readonly headers: Readonly<Record<string, string>>;
  readonly overlap: OverlapPolicy;
  readonly catchUp: CatchUpPolicy;
  readonly jitterMs: number;
  readonly priority?: number;
  readonly maxAttempts?: number;
}): ScheduleDefinition {
  return Object.freeze({ ...def, kind: "schedule" as const, target: def.target as unknown as ScheduleTarget });
}

/** The untyped spec of a typed schedule: the input checked against the target and encoded as its runs expect. */
export function scheduleSpecOf(def: ScheduleDefinition): ScheduleSpec {
  if (def === null || typeof def !== "object" || def.kind !== "schedule") throw new ValidationError("expected a schedule definition (from generated code)");
  const target: AnyScheduleTarget | undefined = def.target as AnyScheduleTarget | undefined;
  if (target?.kind !== "job" && target?.kind !== "workflow") throw new ValidationError(`schedule "${def.id}" has no job or workflow definition as its target`);
  const inputValidator: Validator<unknown> = target.input;
  const headersValidator: Validator<unknown> = target.headers.validator;
  inputValidator.assert(def.input);
  headersValidator.assert(def.headers);
  const input = target.kind === "job" ? encodeJobPayload(target.name, def.input) : encodeStepEnvelope(target.name, target.entry, def.input);
  return {
    id: def.id,
    cron: def.cron,
    timezone: def.timezone,
    run: {
      input,
      options: {
        headers: def.headers,
        ...(def.priority === undefined ? {} : { priority: def.priority }),
        ...(def.maxAttempts === undefined ? {} : { maxAttemptsPerStep: def.maxAttempts }),
        ...(target.flowControl === undefined ? {} : { flow: target.flowControl.flowOf(def.input, def.headers) }),
      },
    },
    overlap: def.overlap,
    catchUp: def.catchUp,
    jitterMs: def.jitterMs,
  };
}

/**
 * Creates or updates every schedule of `definitions` on `host` (a
 * `WorkflowRuntime` or a `JobRunner`, whose runtime then decides the ticks
 * while a worker runs). Idempotent: an unchanged schedule keeps its state.
 */
export async function upsertSchedules(
  host: { readonly schedules: Schedules } | { readonly runtime: { readonly schedules: Schedules } },
  definitions: Iterable<ScheduleDefinition> | Readonly<Record<string, ScheduleDefinition>>,
): Promise<ScheduleInfo[]> {
  const schedules = "schedules" in host ? host.schedules : host.runtime.schedules;
  const defs = Symbol.iterator in definitions ? [...(definitions as Iterable<ScheduleDefinition>)] : Object.values(definitions);
  // Every definition is checked before anything is written.
  const specs = defs.map(scheduleSpecOf);
  const out: ScheduleInfo[] = [];
  for (const s of specs) out.push(await schedules.upsert(s));
  return out;
}
