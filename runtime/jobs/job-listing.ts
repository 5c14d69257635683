/**
 * @module The public shape of job listings: typed jobs are runs of the step
 * queue, so a job listing is a run listing restricted to jobs.
 */
import type { ListRunsOptions } from "../workflow/runs/run-listing.js";

/** What `listJobs` takes: the run listing's options, with the job's name in place of the workflow's. */
export interface ListJobRunsOptions extends Omit<ListRunsOptions, "workflow"> {
  /** Only jobs of this name (a `defineJob` name). */
  readonly job?: string;
}
