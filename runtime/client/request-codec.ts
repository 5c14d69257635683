/**
 * @module The bytes of inbox requests and answers: MessagePack maps with a
 * format version. Decoding checks every field, so a malformed or foreign
 * object is refused with a reason (and dead-lettered by the owner) rather
 * than applied half-understood.
 */
import { TaqubaError } from "../errors.js";
import type { PreparedJob } from "../typed/job-runner.js";
import type { KvOp } from "../queue/effects.js";
import { decodeValue, encodeValue } from "../workflow/records/codec.js";
import type { RetryOutcome, RunDebounce, RunFlow, RunOptions, SignalOutcome, SubmitOutcome } from "../workflow/runs/run-types.js";
import {
  InputMismatchError,
  isRunNotDamagedReason,
  RunNotDamagedError,
  RepairPlanChangedError,
  RunNotFoundError,
  RunNotRetryableError,
  ScheduleNotFoundError,
} from "../workflow/workflow-errors.js";
import type { RepairOutcome } from "../workflow/runs/repair.js";
import { StatsPlanChangedError } from "../queue/errors.js";
import type { StatsRecount } from "../queue/stats-recount.js";
import type { QueueStats } from "../queue/record.js";
import type { RunDamage } from "../workflow/runs/run-damage.js";
import type { ScheduleFire, ScheduleInfo } from "../workflow/schedules/schedule-types.js";
import { MAX_BACKFILL_PART_TICKS, type BackfillPart } from "../workflow/schedules/schedules.js";
import { JobNotFoundError } from "../jobs/job-errors.js";
import { GroupNotFoundError } from "../workflow/groups/group-errors.js";
import { GroupRecreatedError } from "./client-errors.js";
import { ValidationError } from "../errors.js";
import { ownFieldsIfPolluted } from "../own-fields.js";

const FORMAT = 1;

/** One request a client writes to the inbox. */
export type InboxRequest =
  | {
      readonly op: "submit";
      readonly runId: string;
      readonly input: Uint8Array;
      readonly options: RunOptions;
      readonly kvOps: readonly KvOp[];
      /** Applied only when the owner has no record of the run, active or ended. */
      readonly unlessKnown?: boolean;
      /**
       * The client drew `runId` (the caller named none): the owner submits it as a fresh id, drawing
       * another when a record holds it. An owner that predates the field reads it as a caller's id.
       */
      readonly drawn?: boolean;
    }
  | { readonly op: "job"; readonly job: PreparedJob }
  | { readonly op: "signal"; readonly key: string; readonly payload: Uint8Array }
  | { readonly op: "clearSignal"; readonly key: string }
  | { readonly op: "cancel"; readonly runId: string }
  | { readonly op: "retry"; readonly runId: string; readonly fromStep?: number; readonly job?: boolean }
  | { readonly op: "requeueDead"; readonly jobId: string }
  | { readonly op: "recountStats"; readonly queueName: string; readonly dryRun?: boolean; readonly plan?: string }
  | {
      readonly op: "repair";
      readonly runId: string;
      readonly dryRun?: boolean;
      readonly scanIndex?: boolean;
      readonly remove?: boolean;
      readonly endActive?: boolean;
      readonly plan?: string;
    }
  | ScheduleRequest
  | { readonly op: "groupManifest"; readonly groupId: string; readonly members: readonly GroupMemberInput[]; readonly options?: RunOptions }
  | { readonly op: "groupForget" | "groupRetain"; readonly groupId: string; readonly createdAtMs: number; readonly manifest: boolean }
  | {
      readonly op: "groupMembers";
      readonly groupId: string;
      readonly createdAtMs: number;
      readonly members: readonly GroupMemberInput[];
      readonly options?: RunOptions;
    };

/** A command on a schedule, applied by the owner of the schedule's (home) shard. */
export type ScheduleRequest =
  | { readonly op: "schedule"; readonly action: "pause" | "resume" | "trigger" | "remove"; readonly scheduleId: string }
  | {
      readonly op: "schedule";
      readonly action: "backfill";
      readonly scheduleId: string;
      readonly fromMs: number;
      readonly toMs: number;
      /** Set: apply one part of at most this many ticks and answer a `BackfillPart`; absent: the whole range, answered as the list of fires. */
      readonly maxTicks?: number;
    };

/** A group member as a request carries it. */
export interface GroupMemberInput {
  readonly key: string;
  readonly input: Uint8Array;
}

/**
 * What an applied request answered: a group manifest answers the group's
 * creation time, a group's members on one shard the keys submitted now.
 */
export type AnswerValue =
  | SubmitOutcome
  | SignalOutcome
  | RetryOutcome
  | ScheduleInfo
  | ScheduleFire
  | readonly ScheduleFire[]
  | BackfillPart
  | RepairOutcome
  | StatsRecount
  | boolean
  | number
  | readonly string[];

/** An error the owner answered with, as the client rebuilds it. */
export interface AnsweredError {
  readonly name: string;
  readonly code: string;
  readonly message: string;
  readonly runId?: string;
  /** A `StatsPlanChangedError`'s queue. */
  readonly queueName?: string;
  /** A `RunNotRetryableError`'s reason. */
  readonly reason?: string;
  /** A group error's group. */
  readonly groupId?: string;
  /** A `GroupRecreatedError`'s two creation times. */
  readonly createdAtMs?: number;
  readonly manifestCreatedAtMs?: number;
}

export type InboxAnswer = { readonly ok: true; readonly value: AnswerValue } | { readonly ok: false; readonly error: AnsweredError };

/** The inbox object is not a request this version can apply; the reason says why. */
export class MalformedRequestError extends TaqubaError {
  constructor(readonly reason: string) {
    super("MALFORMED_INBOX_REQUEST", `the inbox object is not a taquba request: ${reason}`);
  }
}

/**
 * The owner refused a client's request with an error the client has no
 * class for: `ownerCode` and `ownerName` are the code and class of the
 * owner's error, and the message is the owner's.
 */
export class RequestRefusedError extends TaqubaError {
  constructor(
    readonly ownerCode: string,
    readonly ownerName: string,
    message: string,
  ) {
    super("REQUEST_REFUSED", message);
  }
}

export function encodeRequest(r: InboxRequest): Uint8Array {
  return encodeValue({ v: FORMAT, ...r });
}

export function encodeAnswer(a: InboxAnswer): Uint8Array {
  return encodeValue({ v: FORMAT, ...a });
}

function fail(reason: string): never {
  throw new MalformedRequestError(reason);
}

function str(m: Record<string, unknown>, k: string): string {
  const v = m[k];
  if (typeof v !== "string" || v.length === 0) fail(`field "${k}" must be a non-empty string`);
  return v;
}

function bytes(m: Record<string, unknown>, k: string): Uint8Array {
  const v = m[k];
  if (!(v instanceof Uint8Array)) fail(`field "${k}" must be bytes`);
  return v;
}

/**
 * `v` as a decoded map; `optional`: the names of its fields a writer may
 * leave out, made its own (undefined) while `Object.prototype` holds one
 * (see `ownFieldsIfPolluted`), so a left-out one is not read from there.
 */
function map(v: unknown, what: string, optional: readonly string[] = NO_FIELDS): Record<string, unknown> {
  if (v === null || typeof v !== "object" || Array.isArray(v) || v instanceof Uint8Array) fail(`${what} must be a map`);
  ownFieldsIfPolluted(v, optional);
  return v as Record<string, unknown>;
}

const NO_FIELDS: readonly string[] = [];
const REQUEST_OPTIONAL: readonly string[] = ["unlessKnown", "drawn", "options", "fromStep", "job", "maxTicks"];
const JOB_OPTIONAL: readonly string[] = ["idempotencyKey", "runId"];
const OPTIONS_OPTIONAL: readonly string[] = ["headers", "priority", "maxAttemptsPerStep", "runAt", "flow", "debounce"];
const FLOW_OPTIONAL: readonly string[] = ["concurrencyKey", "rateKey"];
const ANSWERED_ERROR_OPTIONAL: readonly string[] = ["runId", "queueName", "reason", "groupId", "createdAtMs", "manifestCreatedAtMs"];

function optNumber(m: Record<string, unknown>, k: string): number | undefined {
  const v = m[k];
  if (v === undefined) return undefined;
  if (typeof v !== "number") fail(`field "${k}" must be a number`);
  return v;
}

function runOptions(v: unknown): RunOptions {
  const m = map(v ?? {}, "options", OPTIONS_OPTIONAL);
  const headersIn = map(m["headers"] ?? {}, "options.headers");
  const headers: Record<string, string> = {};
  for (const [k, x] of Object.entries(headersIn)) {
    if (typeof x !== "string") fail(`header "${k}" must be a string`);
    headers[k] = x;
  }
  const priority = optNumber(m, "priority");
  const maxAttemptsPerStep = optNumber(m, "maxAttemptsPerStep");
  const runAt = optNumber(m, "runAt");
  const flow = runFlow(m["flow"]);
  const debounce = runDebounce(m["debounce"]);
  return {
    headers,
    ...(priority === undefined ? {} : { priority }),
    ...(maxAttemptsPerStep === undefined ? {} : { maxAttemptsPerStep }),
    ...(runAt === undefined ? {} : { runAt }),
    ...(flow === undefined ? {} : { flow }),
    ...(debounce === undefined ? {} : { debounce }),
  };
}

function runDebounce(v: unknown): RunDebounce | undefined {
  if (v === undefined) return undefined;
  const m = map(v, "options.debounce");
  const key = m["key"];
  if (typeof key !== "string") fail(`field "options.debounce.key" must be a string`);
  const periodMs = optNumber(m, "periodMs");
  if (periodMs === undefined) fail(`field "options.debounce.periodMs" is missing`);
  return { key, periodMs };
}

function runFlow(v: unknown): RunFlow | undefined {
  if (v === undefined) return undefined;
  const m = map(v, "options.flow", FLOW_OPTIONAL);
  const text = (k: string) => {
    const x = m[k];
    if (x !== undefined && typeof x !== "string") fail(`field "options.flow.${k}" must be a string`);
    return x as string | undefined;
  };
  const rule = text("rule");
  if (rule === undefined) fail(`field "options.flow.rule" is missing`);
  const concurrencyKey = text("concurrencyKey");
  const rateKey = text("rateKey");
  return { rule, ...(concurrencyKey === undefined ? {} : { concurrencyKey }), ...(rateKey === undefined ? {} : { rateKey }) };
}

function kvOps(v: unknown): KvOp[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) fail(`field "kvOps" must be a list`);
  return v.map((x, i) => {
    const m = map(x, `kvOps[${i}]`);
    const key = str(m, "key");
    if (m["kind"] === "put") return { kind: "put", key, value: bytes(m, "value") };
    if (m["kind"] === "delete") return { kind: "delete", key };
    return fail(`kvOps[${i}].kind must be "put" or "delete"`);
  });
}

function groupMembers(v: unknown): GroupMemberInput[] {
  if (!Array.isArray(v)) fail(`field "members" must be a list`);
  return v.map((x, i) => {
    const m = map(x, `members[${i}]`);
    return { key: str(m, "key"), input: bytes(m, "input") };
  });
}

/** Decodes a request object; throws `MalformedRequestError` naming what is wrong. */
export function decodeRequest(body: Uint8Array): InboxRequest {
  let raw: unknown;
  try {
    raw = decodeValue(body);
  } catch (e) {
    fail(`not MessagePack (${e instanceof Error ? e.message : String(e)})`);
  }
  const m = map(raw, "the request", REQUEST_OPTIONAL);
  if (m["v"] !== FORMAT) fail(`unknown format version ${JSON.stringify(m["v"])} (this version reads ${FORMAT})`);
  switch (m["op"]) {
    case "submit":
      if (m["unlessKnown"] !== undefined && typeof m["unlessKnown"] !== "boolean") fail(`field "unlessKnown" must be a boolean`);
      if (m["drawn"] !== undefined && typeof m["drawn"] !== "boolean") fail(`field "drawn" must be a boolean`);
      return {
        op: "submit",
        runId: str(m, "runId"),
        input: bytes(m, "input"),
        options: runOptions(m["options"]),
        kvOps: kvOps(m["kvOps"]),
        ...(m["unlessKnown"] === true ? { unlessKnown: true } : {}),
        ...(m["drawn"] === true ? { drawn: true } : {}),
      };
    case "job": {
      const j = map(m["job"], "job", JOB_OPTIONAL);
      const idempotencyKey = j["idempotencyKey"] === undefined ? undefined : str(j, "idempotencyKey");
      const runId = j["runId"] === undefined ? undefined : str(j, "runId");
      return {
        op: "job",
        job: {
          name: str(j, "name"),
          payload: bytes(j, "payload"),
          runOptions: runOptions(j["runOptions"]),
          ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
          ...(runId === undefined ? {} : { runId }),
        },
      };
    }
    case "signal":
      return { op: "signal", key: str(m, "key"), payload: bytes(m, "payload") };
    case "clearSignal":
      return { op: "clearSignal", key: str(m, "key") };
    case "cancel":
      return { op: "cancel", runId: str(m, "runId") };
    case "retry": {
      const fromStep = optNumber(m, "fromStep");
      if (m["job"] !== undefined && typeof m["job"] !== "boolean") fail(`field "job" must be a boolean`);
      return { op: "retry", runId: str(m, "runId"), ...(fromStep === undefined ? {} : { fromStep }), ...(m["job"] === true ? { job: true } : {}) };
    }
    case "requeueDead":
      return { op: "requeueDead", jobId: str(m, "jobId") };
    case "recountStats":
      if (m["dryRun"] !== undefined && typeof m["dryRun"] !== "boolean") fail(`field "dryRun" must be a boolean`);
      return {
        op: "recountStats",
        queueName: str(m, "queueName"),
        ...(m["dryRun"] === true ? { dryRun: true } : {}),
        ...(m["plan"] === undefined ? {} : { plan: str(m, "plan") }),
      };
    case "repair":
      for (const f of ["dryRun", "scanIndex", "remove", "endActive"])
        if (m[f] !== undefined && typeof m[f] !== "boolean") fail(`field "${f}" must be a boolean`);
      return {
        op: "repair",
        runId: str(m, "runId"),
        ...(m["dryRun"] === true ? { dryRun: true } : {}),
        ...(m["scanIndex"] === true ? { scanIndex: true } : {}),
        ...(m["remove"] === true ? { remove: true } : {}),
        ...(m["endActive"] === true ? { endActive: true } : {}),
        ...(m["plan"] === undefined ? {} : { plan: str(m, "plan") }),
      };
    case "schedule": {
      const scheduleId = str(m, "scheduleId");
      const action = m["action"];
      if (action === "pause" || action === "resume" || action === "trigger" || action === "remove") return { op: "schedule", action, scheduleId };
      if (action !== "backfill") fail(`field "action" must be "pause", "resume", "trigger", "remove" or "backfill"`);
      const fromMs = optNumber(m, "fromMs");
      const toMs = optNumber(m, "toMs");
      if (fromMs === undefined || toMs === undefined) fail(`a backfill needs the numbers "fromMs" and "toMs"`);
      const maxTicks = optNumber(m, "maxTicks");
      if (maxTicks === undefined) return { op: "schedule", action, scheduleId, fromMs, toMs };
      if (!Number.isInteger(maxTicks) || maxTicks < 1 || maxTicks > MAX_BACKFILL_PART_TICKS)
        fail(`field "maxTicks" must be a whole number from 1 to ${MAX_BACKFILL_PART_TICKS}`);
      return { op: "schedule", action, scheduleId, fromMs, toMs, maxTicks };
    }
    case "groupManifest":
      return {
        op: "groupManifest",
        groupId: str(m, "groupId"),
        members: groupMembers(m["members"]),
        ...(m["options"] === undefined ? {} : { options: runOptions(m["options"]) }),
      };
    case "groupForget":
    case "groupRetain": {
      const createdAtMs = optNumber(m, "createdAtMs");
      if (createdAtMs === undefined) fail(`field "createdAtMs" must be a number`);
      if (typeof m["manifest"] !== "boolean") fail(`field "manifest" must be a boolean`);
      return { op: m["op"] === "groupForget" ? "groupForget" : "groupRetain", groupId: str(m, "groupId"), createdAtMs, manifest: m["manifest"] };
    }
    case "groupMembers": {
      const createdAtMs = optNumber(m, "createdAtMs");
      if (createdAtMs === undefined) fail(`field "createdAtMs" must be a number`);
      return {
        op: "groupMembers",
        groupId: str(m, "groupId"),
        createdAtMs,
        members: groupMembers(m["members"]),
        ...(m["options"] === undefined ? {} : { options: runOptions(m["options"]) }),
      };
    }
    default:
      return fail(`unknown operation ${JSON.stringify(m["op"])}`);
  }
}

function isAnswerValue(v: unknown): v is AnswerValue {
  if (v === "delivered" || v === "buffered" || typeof v === "boolean" || (typeof v === "number" && Number.isFinite(v))) return true;
  if (Array.isArray(v)) return v.every((x) => typeof x === "string") || v.every(isScheduleFire);
  const m = v as Record<string, unknown> | null;
  if (m === null || typeof m !== "object") return false;
  if (isScheduleFire(m)) return true;
  if (Array.isArray(m["fires"]))
    return m["fires"].every(isScheduleFire) && (m["nextFromMs"] === null || (typeof m["nextFromMs"] === "number" && Number.isFinite(m["nextFromMs"])));
  if (typeof m["id"] === "string" && typeof m["cron"] === "string" && typeof m["paused"] === "boolean") return true;
  if (isRepairOutcome(m) || isStatsRecount(m)) return true;
  if (typeof m["runId"] !== "string" || typeof m["jobId"] !== "string") return false;
  return typeof m["newlySubmitted"] === "boolean" || (typeof m["step"] === "number" && Number.isInteger(m["step"]));
}

const REPAIR_ACTIONS: readonly string[] = [
  "ended_failed",
  "end_rewritten",
  "records_rewritten",
  "index_rewritten",
  "removed",
] satisfies RepairOutcome["action"][];
const RUN_RECORD_KINDS: readonly string[] = [
  "run_record",
  "step_pointer",
  "end_record",
  "index_entry",
  "signal_wait",
  "group_member",
  "child_entry",
] satisfies RunDamage["record"][];

const isCounts = (v: unknown): v is QueueStats => {
  const c = v as Record<string, unknown> | null;
  return c !== null && typeof c === "object" && (["pending", "scheduled", "claimed", "done", "dead"] as const).every((k) => Number.isSafeInteger(c[k]));
};

function isStatsRecount(m: Record<string, unknown>): boolean {
  return (
    typeof m["queueName"] === "string" &&
    isCounts(m["recounted"]) &&
    (m["stored"] === undefined || isCounts(m["stored"])) &&
    (m["damage"] === undefined || typeof m["damage"] === "string") &&
    Number.isSafeInteger(m["carriedDone"]) &&
    typeof m["changed"] === "boolean" &&
    typeof m["dryRun"] === "boolean" &&
    typeof m["plan"] === "string"
  );
}

function isRepairOutcome(m: Record<string, unknown>): boolean {
  const damaged = m["damaged"];
  return (
    typeof m["runId"] === "string" &&
    typeof m["action"] === "string" &&
    REPAIR_ACTIONS.includes(m["action"]) &&
    typeof m["dryRun"] === "boolean" &&
    (m["plan"] === undefined || typeof m["plan"] === "string") &&
    (m["stepJobId"] === undefined || typeof m["stepJobId"] === "string") &&
    (m["childrenCancelled"] === undefined || (Array.isArray(m["childrenCancelled"]) && m["childrenCancelled"].every((c: unknown) => typeof c === "string"))) &&
    (m["removed"] === undefined || (Array.isArray(m["removed"]) && m["removed"].every((c: unknown) => typeof c === "string"))) &&
    Array.isArray(damaged) &&
    damaged.every((d: unknown) => {
      const r = d as Record<string, unknown> | null;
      return (
        r !== null && typeof r === "object" && typeof r["record"] === "string" && RUN_RECORD_KINDS.includes(r["record"]) && typeof r["detail"] === "string"
      );
    })
  );
}

function isScheduleFire(v: unknown): boolean {
  const m = v as Record<string, unknown> | null;
  return (
    m !== null &&
    typeof m === "object" &&
    typeof m["tickMs"] === "number" &&
    typeof m["runId"] === "string" &&
    typeof m["newlySubmitted"] === "boolean" &&
    m["jobId"] === undefined
  );
}

/** Decodes an answer (or an applied mark); throws `MalformedRequestError` when it is not one. */
export function decodeAnswer(body: Uint8Array): InboxAnswer {
  let raw: unknown;
  try {
    raw = decodeValue(body);
  } catch (e) {
    fail(`answer is not MessagePack (${e instanceof Error ? e.message : String(e)})`);
  }
  const m = map(raw, "the answer");
  if (m["v"] !== FORMAT) fail(`unknown answer format ${JSON.stringify(m["v"])}`);
  if (m["ok"] === true && isAnswerValue(m["value"])) return { ok: true, value: m["value"] };
  if (m["ok"] === false) {
    const e = map(m["error"], "the answer's error", ANSWERED_ERROR_OPTIONAL);
    return {
      ok: false,
      error: { name: str(e, "name"), code: str(e, "code"), message: str(e, "message"), ...errorFields(e) },
    };
  }
  return fail("the answer is neither a value nor an error");
}

/** The optional fields of an answered error that `e` holds with the right types; others are left out. */
function errorFields(e: object): Omit<AnsweredError, "name" | "code" | "message"> {
  const o = e as Record<string, unknown>;
  const text = (k: string) => (typeof o[k] === "string" ? { [k]: o[k] as string } : {});
  const num = (k: string) => (typeof o[k] === "number" ? { [k]: o[k] as number } : {});
  return { ...text("runId"), ...text("queueName"), ...text("reason"), ...text("groupId"), ...num("createdAtMs"), ...num("manifestCreatedAtMs") };
}

/** The answer describing `err`, which applying a request threw. */
export function answeredError(err: unknown): AnsweredError {
  if (err instanceof TaqubaError) return { name: err.name, code: err.code, message: err.message, ...errorFields(err) };
  const e = err instanceof Error ? err : new Error(String(err));
  return { name: e.name || "Error", code: "OWNER_ERROR", message: e.message };
}

/** The error the client's promise rejects with, the runtime's own class where the client knows it. */
export function rebuildError(e: AnsweredError): Error {
  if (e.code === "INPUT_MISMATCH" && e.runId !== undefined) return new InputMismatchError(e.runId);
  if (e.code === "VALIDATION") return new ValidationError(e.message);
  if (e.code === "RUN_NOT_FOUND" && e.runId !== undefined) return new RunNotFoundError(e.runId);
  if (e.code === "JOB_NOT_FOUND") {
    const id = /job "([^"]*)"/.exec(e.message)?.[1];
    if (id !== undefined) return new JobNotFoundError(id);
  }
  if (e.code === "SCHEDULE_NOT_FOUND") {
    const id = /schedule "([^"]*)"/.exec(e.message)?.[1];
    if (id !== undefined) return new ScheduleNotFoundError(id);
  }
  if (e.code === "RUN_NOT_RETRYABLE" && e.runId !== undefined && isRetryReason(e.reason)) {
    const prefix = `run "${e.runId}" cannot be retried: `;
    return new RunNotRetryableError(e.runId, e.reason, e.message.startsWith(prefix) ? e.message.slice(prefix.length) : e.message);
  }
  if (e.code === "RUN_NOT_DAMAGED" && e.runId !== undefined && isRunNotDamagedReason(e.reason)) {
    return new RunNotDamagedError(e.runId, e.reason);
  }
  if (e.code === "REPAIR_PLAN_CHANGED" && e.runId !== undefined) return new RepairPlanChangedError(e.runId);
  if (e.code === "STATS_PLAN_CHANGED" && e.queueName !== undefined) return new StatsPlanChangedError(e.queueName);
  if (e.code === "GROUP_NOT_FOUND" && e.groupId !== undefined) return new GroupNotFoundError(e.groupId);
  if (e.code === "GROUP_RECREATED" && e.groupId !== undefined && e.createdAtMs !== undefined && e.manifestCreatedAtMs !== undefined) {
    return new GroupRecreatedError(e.groupId, e.createdAtMs, e.manifestCreatedAtMs);
  }
  return new RequestRefusedError(e.code, e.name, e.message);
}

const RETRY_REASONS: readonly string[] = [
  "active",
  "succeeded",
  "superseded",
  "no_such_step",
  "payload_not_kept",
  "signal_key_taken",
] satisfies RunNotRetryableError["reason"][];

function isRetryReason(r: string | undefined): r is RunNotRetryableError["reason"] {
  return r !== undefined && RETRY_REASONS.includes(r);
}
