/**
 * @module Reading a job's outcome from its durable records: the run's
 * terminal record and the job result record committed with it.
 */
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
    if (rec.status === "succeeded") return { outcome: { status: "succeeded", output: JSON.parse(rec.output) as Output }, kind: undefined };
    return { outcome: { status: "failed", error: JSON.parse(rec.error) as Err, message: rec.message }, kind: t.errorKind ?? "runner" };
  }
  if (t.status === "cancelled") return { outcome: { status: "cancelled" }, kind: t.errorKind };
  const message = t.status === "failed" ? (t.error ?? "the job failed") : "the job terminated without its result record";
  return { outcome: { status: "failed", error: undefined, message }, kind: t.errorKind };
}
