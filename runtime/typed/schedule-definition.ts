/**
 * @module Typed schedules: a spec's `schedules:` entry as a definition
 * (target job or workflow, a fixed typed input or a typed input handler,
 * headers, policies), turned into the runtime's untyped `ScheduleSpec` and
 * upserted.
 */
import { ValidationError } from "../errors.js";
import { describeValue, errorText, hasMethods, quoteValue } from "../option-values.js";
import { checkedDefinition } from "../contract/definition-input.js";
import { ScheduleInputError } from "../workflow/workflow-errors.js";
import type { AnyWorkflowDefinition } from "../contract/workflow-definition.js";
import type { HeaderValues, JobDefinition } from "../contract/job-definition.js";
import type { Validator } from "../contract/validator.js";
import { encodeStepEnvelope } from "../contract/step-envelope.js";
import { encodeJobPayload } from "../jobs/job-codec.js";
import type { Schedules } from "../workflow/schedules/schedules.js";
import type { CatchUpPolicy, ComputedTickRun, OverlapPolicy, ScheduleInfo, ScheduleSpec, ScheduleTick } from "../workflow/schedules/schedule-types.js";

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
  /** The fixed input of every run; absent when `inputFrom` is `"handler"`. */
  readonly input?: unknown;
  /** `"handler"`: each tick's input is computed by a handler bound with `bindScheduleInput`. */
  readonly inputFrom?: "handler";
  /** The bound input handler (see `bindScheduleInput`). */
  readonly inputHandler?: TypedScheduleInputHandler<unknown>;
  readonly headers: Readonly<Record<string, string>>;
  readonly overlap: OverlapPolicy;
  readonly catchUp: CatchUpPolicy;
  readonly jitterMs: number;
  readonly priority?: number;
  readonly maxAttempts?: number;
}

/** The tick a typed schedule input handler computes the input of. */
export interface ScheduleInputTick {
  readonly scheduleId: string;
  /** The tick's cron time (without jitter). */
  readonly tickTime: Date;
  /** Aborts at the runtime's `scheduleInputTimeout` or when its scheduler stops (see `ScheduleTick.signal`). */
  readonly signal: AbortSignal;
}

/**
 * Computes the typed input of a tick's run. Make it a function of the tick:
 * a tick decided again after a crash computes it again, and the run already
 * submitted for the tick is kept.
 */
export type TypedScheduleInputHandler<Input> = (tick: ScheduleInputTick) => Input | Promise<Input>;

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
  readonly headers: Readonly<Record<string, string>>;
  readonly overlap: OverlapPolicy;
  readonly catchUp: CatchUpPolicy;
  readonly jitterMs: number;
  readonly priority?: number;
  readonly maxAttempts?: number;
  /** The fixed input; give this or `inputFrom`. */
  readonly input?: NoInfer<Input>;
  readonly inputFrom?: "handler";
  readonly inputHandler?: TypedScheduleInputHandler<unknown>;
}): ScheduleDefinition {
  return checkedDefinition("defineSchedule", def, () => {
    if (def.inputFrom === "handler" && def.input !== undefined) {
      throw new ValidationError(`schedule ${quoteValue(def.id)} gives both a fixed input and input_from: handler; keep one`);
    }
    return Object.freeze({ ...def, kind: "schedule" as const, target: def.target as unknown as ScheduleTarget });
  });
}

/**
 * The definition of a schedule whose input is computed by a handler
 * (`input_from: handler` in the spec), with `handler` bound to it. Each
 * tick's answer is checked against the target's input schema before a run
 * starts. Generated code calls it from `schedulesWith(inputs)`.
 */
export function bindScheduleInput<Input>(def: ScheduleDefinition, handler: TypedScheduleInputHandler<Input>): ScheduleDefinition {
  return checkedDefinition("bindScheduleInput", def, () => {
    if (def.kind !== "schedule") throw new ValidationError("bindScheduleInput takes a schedule definition (from generated code)");
    if (def.inputFrom !== "handler")
      throw new ValidationError(`schedule ${quoteValue(def.id)} has a fixed input; only a schedule with input_from: handler takes an input handler`);
    if (typeof handler !== "function") {
      throw new ValidationError(`schedule ${quoteValue(def.id)} computes its input with a handler, and none was given; pass a function (tick) => input for it`);
    }
    return Object.freeze({ ...def, inputHandler: handler as TypedScheduleInputHandler<unknown> });
  });
}

/** The untyped spec of a typed schedule: the input checked against the target and encoded as its runs expect. */
export function scheduleSpecOf(def: ScheduleDefinition): ScheduleSpec {
  // Read from a copy: a getter or Proxy that throws is a ValidationError naming the function, never a TypeError.
  return checkedDefinition("scheduleSpecOf", def, () => specOf({ ...def }));
}

function specOf(def: ScheduleDefinition): ScheduleSpec {
  if (def.kind !== "schedule") throw new ValidationError("scheduleSpecOf takes a schedule definition (from generated code)");
  const target: AnyScheduleTarget | undefined = def.target as AnyScheduleTarget | undefined;
  if (target?.kind !== "job" && target?.kind !== "workflow") throw new ValidationError(`schedule "${def.id}" has no job or workflow definition as its target`);
  const inputValidator: Validator<unknown> = target.input;
  const headersValidator: Validator<unknown> = target.headers.validator;
  headersValidator.assert(def.headers);
  const encode = (input: unknown) => (target.kind === "job" ? encodeJobPayload(target.name, input) : encodeStepEnvelope(target.name, target.entry, input));
  const flowOf = (input: unknown) => (target.flowControl === undefined ? undefined : target.flowControl.flowOf(input, def.headers));
  // The target's debounce applies to scheduled ticks as to any submission of it.
  const debounceOf = (input: unknown) => (target.flowControl === undefined ? undefined : target.flowControl.runOptionsOf(input, def.headers).debounce);
  if (target.flowControl?.spec.debounce !== undefined && def.jitterMs !== undefined && def.jitterMs > 0) {
    throw new ValidationError(
      `schedule "${def.id}" has a jitter and its target ${target.kind} "${target.name}" is debounced; a debounced run starts when its window ends, so drop one of them`,
    );
  }
  let input: ScheduleSpec["run"]["input"];
  let flow: ReturnType<typeof flowOf>;
  let debounce: ReturnType<typeof debounceOf>;
  if (def.inputFrom === "handler") {
    const handler = def.inputHandler;
    if (typeof handler !== "function") {
      throw new ValidationError(
        `schedule "${def.id}" computes its input with a handler, and none is bound; register it with schedulesWith({ ... }) of the generated package`,
      );
    }
    const refuser = `${target.kind} "${target.name}"`;
    input = (tick) => computeTickRun(def.id, tick, handler, { refuser, validator: inputValidator, encode, flowOf, debounceOf });
  } else {
    inputValidator.assert(def.input);
    input = encode(def.input);
    flow = flowOf(def.input);
    debounce = debounceOf(def.input);
  }
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
        ...(flow === undefined ? {} : { flow }),
        ...(debounce === undefined ? {} : { debounce }),
      },
    },
    overlap: def.overlap,
    catchUp: def.catchUp,
    jitterMs: def.jitterMs,
  };
}

/** One tick's run from a typed handler: its answer validated, encoded, and the flow keys read from it. */
async function computeTickRun(
  id: string,
  tick: ScheduleTick,
  handler: TypedScheduleInputHandler<unknown>,
  target: {
    /** The target, as the message names it. */
    readonly refuser: string;
    readonly validator: Validator<unknown>;
    readonly encode: (input: unknown) => Uint8Array;
    readonly flowOf: (input: unknown) => ComputedTickRun["flow"];
    readonly debounceOf: (input: unknown) => ComputedTickRun["debounce"];
  },
): Promise<ComputedTickRun> {
  const { refuser, validator, encode, flowOf, debounceOf } = target;
  const value = await handler({ scheduleId: id, tickTime: new Date(tick.tickMs), signal: tick.signal });
  const issues = validator.validate(value);
  if (issues.length > 0) {
    const fields = issues.map((i) => `${i.path === "" ? "the input" : `input${i.path.replace(/\//g, ".")}`} ${i.message}`);
    throw new ScheduleInputError(id, tick.tickMs, `its input handler returned an input ${refuser} refuses: ${fields.join("; ")}`);
  }
  let flow: ComputedTickRun["flow"];
  let debounce: ComputedTickRun["debounce"];
  try {
    flow = flowOf(value);
    debounce = debounceOf(value);
  } catch (e) {
    throw new ScheduleInputError(id, tick.tickMs, e instanceof Error ? e.message : String(e), e);
  }
  const input = encode(value);
  return { input, ...(flow === undefined ? {} : { flow }), ...(debounce === undefined ? {} : { debounce }) };
}

/**
 * Creates or updates every schedule of `definitions` on `host` (a
 * `WorkflowRuntime` or a `JobRunner`, whose runtime then decides the ticks
 * while a worker runs). Idempotent: an unchanged schedule keeps its state.
 * On one shard of a sharded store (`routeShardSchedules`), only the
 * schedules homed on that shard are registered and returned: call it on
 * every shard's runtime with all of them.
 */
export async function upsertSchedules(
  host: { readonly schedules: Schedules } | { readonly runtime: { readonly schedules: Schedules } },
  definitions: Iterable<ScheduleDefinition> | Readonly<Record<string, ScheduleDefinition>>,
): Promise<ScheduleInfo[]> {
  let schedules: Schedules;
  let defs: ScheduleDefinition[];
  try {
    schedules = "schedules" in host ? host.schedules : host.runtime.schedules;
    defs = Symbol.iterator in definitions ? [...(definitions as Iterable<ScheduleDefinition>)] : Object.values(definitions);
  } catch (err) {
    // `in` throws for a primitive and a revoked Proxy; a getter may throw anything.
    throw new ValidationError(
      `upsertSchedules takes a runtime or job runner and the schedules' definitions (an array or record, as generated code gives), and reading them failed: ${errorText(err)}`,
    );
  }
  if (!hasMethods(schedules, ["decides", "upsert"]))
    throw new ValidationError(`upsertSchedules takes a runtime or job runner (something with schedules), got ${describeValue(host)}`);
  // Every definition is checked before anything is written.
  const specs = defs.map(scheduleSpecOf);
  const out: ScheduleInfo[] = [];
  for (const s of specs) if (schedules.decides(s.id)) out.push(await schedules.upsert(s));
  return out;
}
