/**
 * @module A schedule's durable record: its definition and its state (last
 * decided tick, last run, buffered tick, paused), in the queue's KV under
 * `workflow/schedules/{q}/{id}`, plus the checks of a `ScheduleSpec`.
 */
import type { RunDebounce, RunFlow } from "../runs/run-types.js";
import { StoreCorruptedError, ValidationError } from "../../errors.js";
import { MAX_INSTANT_MS, validateDelay } from "../../time-bounds.js";
import { isDebouncePeriod, isPositiveCount, isStoredTime, MAX_DEBOUNCE_MS } from "../../value-ranges.js";
import { isPriority, MAX_PRIORITY } from "../../queue/config.js";
import { ownFieldsIfPolluted, setOwn } from "../../own-fields.js";
import { decodeValue, encodeValue, sha256Hex } from "../records/codec.js";
import { RESERVED_KV_PREFIX } from "../records/reserved.js";
import { checkRunOptions, checkUserHeaders } from "../runs/submit.js";
import { checkRunPayload } from "../limits.js";
import { cronProblem } from "./cron-times.js";
import type { CatchUpPolicy, OverlapPolicy, ScheduledRun, ScheduleSpec } from "./schedule-types.js";
import {
  checkKnownFields,
  describeValue,
  errorText,
  isOptionObject,
  isUnreadableObject,
  NO_OPTIONS,
  optionFieldNames,
  optionFields,
  readFields,
} from "../../option-values.js";

const SCHEDULE_FIELDS = optionFields<ScheduleSpec>({ id: true, cron: true, timezone: true, run: true, overlap: true, catchUp: true, jitterMs: true });
const SCHEDULED_RUN_FIELDS = optionFields<ScheduledRun>({ input: true, options: true });

export const SCHEDULES_PREFIX = `${RESERVED_KV_PREFIX}schedules/`;
/** Prefix of every schedule record of step queue `q`, ending in `/`. */
export const schedulesPrefix = (q: string): string => `${SCHEDULES_PREFIX}${q}/`;
/** The record of schedule `id` of step queue `q`. */
export const scheduleKey = (q: string, id: string): string => `${schedulesPrefix(q)}${id}`;

const SCHEDULE_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * `given` and its `run` with every field read once into plain copies (a
 * field none of them takes included, for `checkScheduleSpec` to refuse by
 * name): a getter or Proxy that answers differently on a second read cannot
 * pass the checks with one value and be kept with another, and one that
 * throws (a revoked Proxy) is a `ValidationError` naming the field.
 * Anything that is no object is returned as given, for the check's refusal.
 */
export function readScheduleSpec(given: ScheduleSpec): ScheduleSpec {
  if (isUnreadableObject(given)) throw new ValidationError(`a schedule must be an object with id, cron and run, got ${describeValue(given)}`);
  if (!isOptionObject(given)) return given;
  const problems: string[] = [];
  const spec = readEveryField(given, "", problems);
  if (spec !== undefined) {
    copyObjectField(spec, "catchUp", "", problems);
    const run = copyObjectField(spec, "run", "", problems);
    const options = run === undefined ? undefined : copyObjectField(run, "options", "run.", problems);
    if (options !== undefined) for (const k of ["flow", "debounce"]) copyObjectField(options, k, "run.options.", problems);
  }
  if (problems.length > 0 || spec === undefined) throw new ValidationError("a schedule could not be read", problems);
  return spec as unknown as ScheduleSpec;
}

/**
 * Replaces `parent[k]`, when it is an object, with a copy of its every
 * field read once (see `readEveryField`), and returns the copy; an object
 * nothing can be read from (a revoked Proxy) is a problem naming it.
 */
function copyObjectField(parent: Record<string, unknown>, k: string, path: string, problems: string[]): Record<string, unknown> | undefined {
  const v = parent[k];
  if (isUnreadableObject(v)) {
    problems.push(`${path}${k} must be an object, got ${describeValue(v)}`);
    return undefined;
  }
  if (!isOptionObject(v)) return undefined;
  const copy = readEveryField(v, `${path}${k}.`, problems);
  if (copy !== undefined) parent[k] = copy;
  return copy;
}

function readEveryField(from: object, path: string, problems: string[]): Record<string, unknown> | undefined {
  let names: string[];
  try {
    names = optionFieldNames(from);
  } catch (err) {
    problems.push(`listing the fields of ${path === "" ? "the schedule" : path.slice(0, -1)} threw: ${errorText(err)}`);
    return undefined;
  }
  return readFields(from, names, path, problems);
}

/** Checks a schedule id given to a command (pause, trigger, ...): the form `upsert` accepts. */
export function checkScheduleId(id: unknown): string {
  if (typeof id !== "string" || !SCHEDULE_ID.test(id)) {
    throw new ValidationError(`a schedule id is 1 to 64 characters of [A-Za-z0-9_-], got ${describeValue(id)}`);
  }
  return id;
}
const OVERLAPS: readonly string[] = ["skip", "buffer_one", "allow"] satisfies OverlapPolicy[];

/** The stored definition and state of one schedule. */
export interface ScheduleRecord {
  readonly id: string;
  readonly cron: string;
  readonly timezone: string;
  /** The fixed input; empty when `computed`. */
  readonly input: Uint8Array;
  /** Each tick's input comes from the handler registered with the schedule in the deciding process. */
  readonly computed?: true;
  readonly headers: Readonly<Record<string, string>>;
  readonly priority?: number;
  readonly maxAttemptsPerStep?: number;
  /** The flow control of every run it starts (`RunOptions.flow`). */
  readonly flow?: RunFlow;
  /** The debounce window of every run a tick starts (`RunOptions.debounce`); trigger and backfill runs start without it. */
  readonly debounce?: RunDebounce;
  readonly overlap: OverlapPolicy;
  readonly catchUp: CatchUpPolicy;
  readonly jitterMs: number;
  /** SHA-256 of the definition fields, so an upsert of the same definition changes nothing. */
  readonly definitionSha256: string;
  readonly paused: boolean;
  /** Every tick at or before this one was decided. Starts at the upsert time: no tick before a schedule existed runs. */
  readonly lastTickMs: number;
  /** Whether any tick was decided yet (`lastTickMs` is then the creation time). */
  readonly ticked: boolean;
  readonly lastRunId: string | null;
  readonly bufferedTickMs: number | null;
  /** The latest tick whose input could not be computed. */
  readonly lastFailure?: { readonly tickMs: number; readonly error: string };
  /** The time of the latest `trigger` and how many triggers started a run at that time, so each gets its own run id. */
  readonly lastTrigger?: { readonly atMs: number; readonly count: number };
}

/** Checks a `ScheduleSpec` and returns its definition fields; throws `ValidationError` listing every problem. */
export function checkScheduleSpec(
  spec: ScheduleSpec,
): Omit<ScheduleRecord, "paused" | "lastTickMs" | "ticked" | "lastRunId" | "bufferedTickMs" | "lastFailure" | "lastTrigger"> {
  if (spec === null || typeof spec !== "object") throw new ValidationError("a schedule must be an object with id, cron and run");
  const where = `schedule ${JSON.stringify(spec.id)}`;
  const issues: string[] = [];
  // A misspelt field (`jitterMS`, `catchup`) would leave its default in use without a word.
  checkKnownFields(spec, SCHEDULE_FIELDS, "", issues);
  if (isOptionObject(spec.run)) checkKnownFields(spec.run, SCHEDULED_RUN_FIELDS, "run.", issues);
  if (typeof spec.id !== "string" || !SCHEDULE_ID.test(spec.id)) issues.push("id must be 1 to 64 characters of [A-Za-z0-9_-]");
  const timezone = spec.timezone ?? "UTC";
  const cron = cronProblem(spec.cron, timezone);
  if (cron !== undefined) issues.push(cron);
  const overlap = spec.overlap ?? "skip";
  if (!OVERLAPS.includes(overlap)) issues.push(`overlap must be "skip", "buffer_one" or "allow", got ${describeValue(overlap)}`);
  const catchUp = spec.catchUp ?? "none";
  const catchUpIssue = catchUpProblem(catchUp);
  if (catchUpIssue !== undefined) issues.push(catchUpIssue);
  const jitterMs = spec.jitterMs ?? 0;
  if (!isJitter(jitterMs)) issues.push(`jitterMs must be an integer from 0 to ${MAX_JITTER_MS} (a day), got ${describeValue(jitterMs)}`);
  const run = spec.run;
  if (run === null || typeof run !== "object" || !(run.input instanceof Uint8Array || typeof run.input === "function"))
    issues.push("run.input must be a Uint8Array or a function computing each tick's input");
  if (run?.options !== undefined && (run.options === null || typeof run.options !== "object")) issues.push("run.options must be an object");
  if (run?.options !== undefined && (run.options as { runAt?: unknown }).runAt !== undefined)
    issues.push("run.options.runAt is not allowed: each tick sets when its run starts");
  if (issues.length > 0) throw new ValidationError(`${where} is not valid`, issues);
  const options = run.options ?? NO_OPTIONS;
  const headers = checkUserHeaders(options.headers, `${where}: run.options.headers`);
  checkRunOptions(options, `${where}: run.options`);
  if (options.priority !== undefined && !isPriority(options.priority))
    throw new ValidationError(`${where}: run.options.priority must be an integer from 0 to ${MAX_PRIORITY}, got ${describeValue(options.priority)}`);
  if (options.debounce !== undefined && jitterMs > 0)
    throw new ValidationError(`${where}: run.options.debounce cannot be combined with jitterMs: a debounced run starts when its window ends`);
  const computed = typeof run.input === "function";
  if (!computed) checkRunPayload(`the input of ${where}`, run.input as Uint8Array);
  const def = {
    id: spec.id,
    cron: spec.cron,
    timezone,
    input: computed ? new Uint8Array(0) : (run.input as Uint8Array),
    ...(computed ? { computed: true as const } : {}),
    headers,
    ...(options.priority === undefined ? {} : { priority: options.priority }),
    ...(options.maxAttemptsPerStep === undefined ? {} : { maxAttemptsPerStep: options.maxAttemptsPerStep }),
    ...(options.flow === undefined ? {} : { flow: { ...options.flow } }),
    ...(options.debounce === undefined ? {} : { debounce: { key: options.debounce.key, periodMs: options.debounce.periodMs } }),
    overlap,
    catchUp,
    jitterMs,
  };
  return { ...def, definitionSha256: sha256Hex(encodeValue(def)) };
}

/** The longest jitter a schedule takes: a day. */
const MAX_JITTER_MS = 86_400_000;

/** Whether `v` is a schedule's jitter: whole ms from 0 to a day (what a definition takes and a record holds). */
function isJitter(v: unknown): v is number {
  return Number.isInteger(v) && (v as number) >= 0 && (v as number) <= MAX_JITTER_MS;
}

function catchUpProblem(c: unknown): string | undefined {
  if (c === "none" || c === "last") return undefined;
  if (c !== null && typeof c === "object" && !Array.isArray(c) && Object.keys(c).length === 1) {
    const ms = (c as { allWithinMs?: unknown }).allWithinMs;
    if (typeof ms === "number" && Number.isInteger(ms) && ms > 0) {
      try {
        validateDelay("catchUp.allWithinMs", ms);
        return undefined;
      } catch (e) {
        return e instanceof Error ? e.message : String(e);
      }
    }
  }
  return `catchUp must be "none", "last" or { allWithinMs: <positive integer> }, got ${describeValue(c)}`;
}

export function encodeScheduleRecord(r: ScheduleRecord): Uint8Array {
  const problem = scheduleTimesProblem(r as unknown as Record<string, unknown>);
  // Past the last instant a Date holds the schedule's cron finds no next tick: stored, it would never tick again, silently.
  if (problem !== undefined) throw new ValidationError(`schedule ${JSON.stringify(r.id)} ${problem}; nothing was written`);
  const out: Record<string, unknown> = {};
  // Defined where Object.prototype holds the name (see `setOwn`): a setter there would take an assignment.
  for (const [k, v] of Object.entries(r)) if (v !== undefined) setOwn(out, k, v);
  return encodeValue(out);
}

/** The fields a schedule record's encoding leaves out when absent (see `ownFieldsIfPolluted`). */
const SCHEDULE_OPTIONAL: readonly (keyof ScheduleRecord & string)[] = [
  "computed",
  "priority",
  "maxAttemptsPerStep",
  "flow",
  "debounce",
  "lastFailure",
  "lastTrigger",
];

/** What to do about schedule `id`'s damaged record, for the message that names it. */
export const DAMAGED_SCHEDULE_ADVICE = (id: string): string =>
  `that schedule is stopped (the others tick): remove it with schedules.remove(${JSON.stringify(id)}) or \`taquba schedules remove\`, then upsert it again; or restore the record from a backup`;

export function decodeScheduleRecord(bytes: Uint8Array, key: string): ScheduleRecord {
  let v: unknown;
  try {
    v = decodeValue(bytes);
  } catch (e) {
    const id = key.slice(key.lastIndexOf("/") + 1);
    throw new StoreCorruptedError(
      key,
      `the record of schedule ${JSON.stringify(id)} is no schedule record (not MessagePack: ${e instanceof Error ? e.message : String(e)})`,
      DAMAGED_SCHEDULE_ADVICE(id),
    );
  }
  const r = v as Record<string, unknown> | null;
  // A field left out would read as the one Object.prototype holds, if it holds one: a flow rule or a debounce for every tick.
  if (r !== null && typeof r === "object") ownFieldsIfPolluted(r, SCHEDULE_OPTIONAL);
  const problem = scheduleRecordProblem(r);
  if (problem !== undefined) {
    const id = key.slice(key.lastIndexOf("/") + 1);
    throw new StoreCorruptedError(key, `the record of schedule ${JSON.stringify(id)} ${problem}`, DAMAGED_SCHEDULE_ADVICE(id));
  }
  return r as unknown as ScheduleRecord;
}

const isStr = (x: unknown): x is string => typeof x === "string";
const isObject = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === "object";
const NO_TIME = `not a time in ms from 0 to ${MAX_INSTANT_MS}, the last instant a Date holds`;

/**
 * Whether `v` is a time a schedule record stores: a stored time (see
 * `isStoredTime`) no later than the last instant a `Date` holds, since the
 * schedule's next tick is computed from it with `Date`s.
 */
function isScheduleTime(v: unknown): v is number {
  return isStoredTime(v) && v <= MAX_INSTANT_MS;
}

/** What is wrong with a decoded schedule record, in words that follow "the record of schedule X"; undefined when nothing is. */
function scheduleRecordProblem(r: unknown): string | undefined {
  if (!isObject(r)) return "is not a record";
  if (!isStr(r.id) || !isStr(r.cron) || !isStr(r.timezone) || !isStr(r.definitionSha256)) return "lacks its id, cron, timezone or definition hash";
  if (!(r.input instanceof Uint8Array) || (r.computed !== undefined && r.computed !== true)) return "lacks its input";
  if (!isObject(r.headers)) return "lacks its headers";
  if (!OVERLAPS.includes(r.overlap as string)) return `has an overlap policy of ${describeValue(r.overlap)}`;
  if (catchUpProblem(r.catchUp) !== undefined) return `has a catch-up policy of ${describeValue(r.catchUp)}`;
  if (!isJitter(r.jitterMs)) return `has a jitter of ${describeValue(r.jitterMs)}, outside its range (whole ms from 0 to ${MAX_JITTER_MS})`;
  if (r.priority !== undefined && !isPriority(r.priority))
    return `has a step priority of ${describeValue(r.priority)}, outside its range (a whole number from 0 to ${MAX_PRIORITY}; versions before the range checks took any integer)`;
  if (r.maxAttemptsPerStep !== undefined && !isPositiveCount(r.maxAttemptsPerStep))
    return `has a step attempt limit of ${describeValue(r.maxAttemptsPerStep)}, outside its range (a whole number from 1 up)`;
  if (r.flow !== undefined && !(isObject(r.flow) && isStr(r.flow.rule))) return "has a malformed flow rule";
  if (r.debounce !== undefined) {
    if (!isObject(r.debounce) || !isStr(r.debounce.key)) return "has a malformed debounce";
    if (!isDebouncePeriod(r.debounce.periodMs))
      return `has a debounce window of ${describeValue(r.debounce.periodMs)}, outside its range (whole ms from 1 to ${MAX_DEBOUNCE_MS})`;
  }
  if (typeof r.paused !== "boolean" || typeof r.ticked !== "boolean") return "lacks its paused or ticked flag";
  if (r.lastRunId !== null && !isStr(r.lastRunId)) return "has a malformed last run id";
  if (r.lastFailure !== undefined && !(isObject(r.lastFailure) && isStr(r.lastFailure.error))) return "has a malformed last failure";
  if (r.lastTrigger !== undefined) {
    if (!isObject(r.lastTrigger)) return "has a malformed last trigger";
    if (!isPositiveCount(r.lastTrigger.count))
      return `has a last trigger count of ${describeValue(r.lastTrigger.count)}, outside its range (a whole number from 1 up)`;
  }
  return scheduleTimesProblem(r);
}

/**
 * What is wrong with the times of a schedule record (its last tick, buffered
 * tick, last failure's tick, last trigger), as `scheduleRecordProblem` words
 * it: the read's check and the write's.
 */
function scheduleTimesProblem(r: Record<string, unknown>): string | undefined {
  if (!isScheduleTime(r.lastTickMs)) return `has a last tick time of ${describeValue(r.lastTickMs)}, outside its range (${NO_TIME})`;
  if (r.bufferedTickMs !== null && !isScheduleTime(r.bufferedTickMs))
    return `has a buffered tick time of ${describeValue(r.bufferedTickMs)}, outside its range (${NO_TIME})`;
  const failure = r.lastFailure;
  if (isObject(failure) && !isScheduleTime(failure.tickMs))
    return `has a last failure's tick time of ${describeValue(failure.tickMs)}, outside its range (${NO_TIME})`;
  const trigger = r.lastTrigger;
  if (isObject(trigger) && !isScheduleTime(trigger.atMs)) return `has a last trigger time of ${describeValue(trigger.atMs)}, outside its range (${NO_TIME})`;
  return undefined;
}

/** The run id of `schedule`'s tick at `tickMs`: the same in every process and after every restart. */
export function tickRunId(scheduleId: string, tickMs: number): string {
  return `sched-${scheduleId}-${tickMs}`;
}

/**
 * The run id of the `nth` (from 1) manual trigger of `schedule` at
 * `nowMs`: `sched-<id>-now<ms>`, then `_2`, `_3`, ... for later triggers
 * in the same millisecond, so each trigger starts its own run.
 */
export function triggerRunId(scheduleId: string, nowMs: number, nth = 1): string {
  return `sched-${scheduleId}-now${nowMs}${nth > 1 ? `_${nth}` : ""}`;
}

/** The jitter of one tick: a delay in `[0, jitterMs)` derived from the schedule and the tick, so every process picks the same. */
export function tickJitterMs(scheduleId: string, tickMs: number, jitterMs: number): number {
  if (jitterMs <= 0) return 0;
  const h = sha256Hex(`${scheduleId}:${tickMs}`);
  return Number.parseInt(h.slice(0, 12), 16) % jitterMs;
}
