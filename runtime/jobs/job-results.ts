/**
 * @module Reading a job's outcome from its durable records: the run's
 * terminal record and the job result record committed with it.
 */
import { StoreCorruptedError } from "../errors.js";
import type { WorkflowQueue } from "../workflow/queue-port.js";
import type { RunErrorKind } from "../workflow/runs/run-types.js";
import type { WorkflowView } from "../workflow/runs/workflow-view.js";
import { decodeJobResult, jobResultKey } from "./job-codec.js";
import type { JobOutcome } from "../contract/job-definition.js";

/** A job's outcome with why it failed, when it did. */
export interface ResolvedOutcome<Output, Err> {
  readonly outcome: JobOutcome<Output, Err>;
  readonly kind: RunErrorKind | undefined;
}

/**
 * The outcome of the job run `runId` of the step queue `view` reads:
 * `"active"` while it runs, `"unknown"`
 * when no record exists. A job that terminated without a result record (a
 * cancel, exhausted attempts, a dead-letter, a crash) reports the terminal
 * record's status and error.
 */
export async function readJobOutcome<Output, Err>(
  view: WorkflowView,
  queue: Pick<WorkflowQueue, "kvGet">,
  runId: string,
): Promise<ResolvedOutcome<Output, Err> | "active" | "unknown"> {
  const r = await view.records(runId);
  if (r.kind !== "terminated") return r.kind;
  const t = r.terminal;
  const key = jobResultKey(view.queueName, runId);
  const bytes = await queue.kvGet(key);
  const rec = bytes === null ? null : decodeJobResult(bytes, key);
  if (rec !== null && rec.incarnation === t.incarnation) {
    if (rec.status === "succeeded") return { outcome: { status: "succeeded", output: parseRecorded(rec.output, key, "output") as Output }, kind: undefined };
    return { outcome: { status: "failed", error: parseRecorded(rec.error, key, "error") as Err, message: rec.message }, kind: t.errorKind ?? "runner" };
  }
  if (t.status === "cancelled")
    return { outcome: { status: "cancelled", ...(t.supersededBy === undefined ? {} : { supersededBy: t.supersededBy }) }, kind: t.errorKind };
  const message = t.status === "failed" ? (t.error ?? "the job failed") : "the job terminated without its result record";
  return { outcome: { status: "failed", error: undefined, message }, kind: t.errorKind };
}

/** The JSON a result record carries; text that is not JSON means the record was damaged, not that the job returned garbage. */
function parseRecorded(text: string, key: string, what: "output" | "error"): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new StoreCorruptedError(key, `the job result record's ${what} is not JSON`);
  }
}
