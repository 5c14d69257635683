/**
 * @module How typed jobs travel and are kept: the step payload of a job run,
 * its job result record, and their keys. Pure.
 *
 * - Payload: UTF-8 canonical JSON `{"input":...,"job":"<name>"}` (keys
 *   sorted), so equal inputs give equal bytes and the run's input check
 *   (SHA-256 of the payload) compares values, not key order.
 * - `jobs/results/{q}/{runId}` (caller KV): the job result record, staged in
 *   the job's terminating settlement, so it exists exactly when that
 *   settlement committed. MessagePack `{incarnation, status, output?|error?, message?}`.
 * - `jobs/dedup/{q}/{runId}` (caller KV): `{inputSha256}` of a job submitted
 *   with an idempotency key, written with its submission and kept after it
 *   terminates, so duplicates collapse before and after completion.
 *
 * `{q}` is the job's step queue (the runtime's `queueName`). A job run is a
 * run of its step queue, and run ids are only unique within one (a job
 * group derives its members' run ids from the group id alone), so the job
 * records carry the queue name as the workflow's records do (see
 * `workflow/records/kv-keys.ts`): runners over one `Queue` with different step
 * queues never read or remove each other's records. Queue names contain no
 * `/`, so the queue segment is unambiguous.
 */
import { StoreCorruptedError, ValidationError } from "../errors.js";
import { decodeMap } from "../workflow/records/records.js";
import { encodeValue, fromUtf8, sha256Hex, utf8 } from "../workflow/records/codec.js";
import { RunId } from "../workflow/runs/run-id.js";
import { canonicalJson } from "../contract/canonical-json.js";
import { jsonErrorText } from "../redact.js";

export const JOB_RESULTS_PREFIX = "jobs/results/";
export const JOB_DEDUP_PREFIX = "jobs/dedup/";
/** The result record of job run `runId` of step queue `q`. */
export const jobResultKey = (q: string, runId: string): string => `${JOB_RESULTS_PREFIX}${q}/${runId}`;
/** The dedup record of the keyed job run `runId` of step queue `q`. */
export const jobDedupKey = (q: string, runId: string): string => `${JOB_DEDUP_PREFIX}${q}/${runId}`;

/**
 * The run id of a job submitted with an idempotency key: `j_` and 40 hex
 * digits of SHA-256 over the runner's queue name, the job name and the key.
 */
export function keyedJobRunId(queueName: string, jobName: string, key: string): RunId {
  return RunId.parse(`j_${sha256Hex(`${queueName}\u0000${jobName}\u0000${key}`).slice(0, 40)}`);
}

/** The step payload of a job run. */
export function encodeJobPayload(job: string, input: unknown): Uint8Array {
  return utf8(canonicalJson({ job, input }));
}

/** Reads a job run's payload; throws a `ValidationError` saying what is wrong. */
export function decodeJobPayload(bytes: Uint8Array): { job: string; input: unknown } {
  let v: unknown;
  try {
    v = JSON.parse(fromUtf8(bytes));
  } catch (e) {
    throw new ValidationError(`the job payload is not JSON: ${jsonErrorText(e)}`);
  }
  if (v === null || typeof v !== "object" || typeof (v as { job?: unknown }).job !== "string") {
    throw new ValidationError("the job payload names no job; submit jobs through JobRunner.submit");
  }
  return v as { job: string; input: unknown };
}

/** The job result record. */
export type JobResultRecord =
  | { incarnation: string; status: "succeeded"; output: string }
  | { incarnation: string; status: "failed"; error: string; message: string };

export function encodeJobResult(r: JobResultRecord): Uint8Array {
  return encodeValue(r);
}

/**
 * A result record's fields, each absent from one of its two forms (or from a
 * damaged record): made its own while `Object.prototype` holds one of their
 * names, so a field the record lacks is never read from there (a planted
 * `output` made a failed job's record read as a success).
 */
const JOB_RESULT_FIELDS: readonly string[] = ["incarnation", "status", "output", "error", "message"];

export function decodeJobResult(bytes: Uint8Array, key: string): JobResultRecord {
  const r = decodeMap(bytes, key, "job result record", JOB_RESULT_FIELDS);
  const ok =
    typeof r.incarnation === "string" &&
    ((r.status === "succeeded" && typeof r.output === "string") || (r.status === "failed" && typeof r.error === "string" && typeof r.message === "string"));
  if (!ok) throw new StoreCorruptedError(key, "job result record lacks its status or value");
  return r as unknown as JobResultRecord;
}

export function encodeDedup(inputSha256: string): Uint8Array {
  return encodeValue({ inputSha256 });
}

/** The dedup record's one field, made its own while `Object.prototype` holds its name: a record without it is damaged, never the prototype's hash. */
const DEDUP_FIELDS: readonly string[] = ["inputSha256"];

export function decodeDedup(bytes: Uint8Array, key: string): string {
  const v = decodeMap(bytes, key, "job dedup record", DEDUP_FIELDS);
  if (typeof v.inputSha256 !== "string") throw new StoreCorruptedError(key, "job dedup record lacks its input hash");
  return v.inputSha256;
}
