/**
 * @module Job listings and redrives: a typed job is a run of the step
 * queue, so both go through the run's; a redrive also removes the result
 * record the ended pass left, so nothing reads the old failure once the job
 * runs again.
 */
import { ValidationError } from "../errors.js";
import { SettlementEffects } from "../queue/effects.js";
import type { AppliedMark } from "../workflow/records/applied-mark.js";
import { RunId } from "../workflow/runs/run-id.js";
import type { RunPage } from "../workflow/runs/run-listing.js";
import type { RetryOutcome } from "../workflow/runs/run-types.js";
import type { WorkflowView } from "../workflow/runs/workflow-view.js";
import type { MarkedCommands } from "../workflow/workflow-runtime.js";
import { jobResultKey } from "./job-codec.js";
import { JobNotFoundError } from "./job-errors.js";
import type { ListJobRunsOptions } from "./job-listing.js";

/** One page of the typed jobs `view` reads (see `JobRunner.listJobs`). */
export function listJobRuns(view: WorkflowView, opts: ListJobRunsOptions | undefined): Promise<RunPage> {
  if (opts !== undefined && (opts === null || typeof opts !== "object" || Array.isArray(opts))) {
    throw new ValidationError("listJobs takes an options object ({ job?, state?, submittedAfter?, submittedBefore?, cursor?, limit? })");
  }
  const { job, ...rest } = opts ?? {};
  if ("workflow" in rest) throw new ValidationError("listJobs filters by job, not workflow: pass { job: name }");
  return view.listRunsOf("job", { ...rest, ...(job === undefined ? {} : { workflow: job }) }, "listJobs");
}

/** Re-opens the failed or cancelled job `jobId` (see `JobRunner.retryJob`); `JobNotFoundError` for an unknown one. */
export async function retryJobRun(
  view: WorkflowView,
  commands: MarkedCommands,
  jobId: RunId | string,
  mark?: AppliedMark<RetryOutcome>,
): Promise<RetryOutcome> {
  const id = RunId.parse(jobId);
  if ((await view.records(id)).kind === "unknown") {
    await view.durable();
    throw new JobNotFoundError(id);
  }
  const extra = new SettlementEffects().kvDelete(jobResultKey(view.queueName, id));
  return commands.retry(id, {}, mark, extra);
}
