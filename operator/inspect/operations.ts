/**
 * @module Everything the operator tools do, as plain data in and out: the
 * reads over the read-only view (listings, a run's detail and history,
 * queue health, dead letters, groups) and the writes through
 * `TaqubaClient` (cancel, retry, signal), which the running owner applies.
 * The dashboard's JSON API is this module over HTTP; the CLI prints it.
 */
import type { TaqubaClient } from "../../runtime/client/taquba-client.js";
import type { ListJobRunsOptions } from "../../runtime/jobs/job-listing.js";
import { listJobRuns } from "../../runtime/jobs/job-redrive.js";
import type { QueueReader } from "../../runtime/queue/reader.js";
import type { ObjectStore } from "../../runtime/store/object-store.js";
import type { MemoStore } from "../../runtime/workflow/memo/memo.js";
import type { GroupPage, ListGroupsOptions } from "../../runtime/workflow/groups/group-listing.js";
import type { ListRunsOptions, RunPage } from "../../runtime/workflow/runs/run-listing.js";
import type { RetryOutcome, RetryRunOptions, SignalOutcome } from "../../runtime/workflow/runs/run-types.js";
import type { WorkflowView } from "../../runtime/workflow/runs/workflow-view.js";
import { HEADER_RUN_ID } from "../../runtime/workflow/records/reserved.js";
import { readGroupSummary, type GroupSummary } from "./group-summary.js";
import { listDeadLetters, type DeadLetterPage } from "./job-listing.js";
import { readQueueHealth, type QueueHealth } from "./queue-health.js";
import { readRunDetail, withHistory, type RunDetail } from "./run-detail.js";

/** A dead letter that cannot be redriven from here; `reason` says why. */
export class RedriveRefusedError extends Error {
  override readonly name = "RedriveRefusedError";
  constructor(
    readonly reason: "not_found" | "not_dead" | "plain_queue",
    message: string,
  ) {
    super(message);
  }
}

/** What the operations read and write through. */
export interface OperationsSource {
  readonly name: string;
  store(): ObjectStore;
  /** The read view; `fresh` asks for the owner's latest durable state. */
  reader(fresh?: boolean): Promise<QueueReader>;
  view(fresh?: boolean): Promise<WorkflowView>;
  memos(): MemoStore;
  client(): Promise<TaqubaClient>;
}

/** A run cancellation's result: whether the owner recorded it. */
export interface CancelResult {
  readonly runId: string;
  readonly cancelled: boolean;
}

export class Operations {
  readonly #src: OperationsSource;
  readonly #now: () => number;

  constructor(source: OperationsSource, now: () => number = Date.now) {
    this.#src = source;
    this.#now = now;
  }

  async health(): Promise<QueueHealth> {
    return readQueueHealth(this.#src.store(), this.#src.name, await this.#src.reader(), this.#now());
  }

  async runs(opts: ListRunsOptions): Promise<RunPage> {
    return (await this.#src.view()).listRuns(opts);
  }

  /** Typed jobs by job name, as `JobRunner.listJobs` lists them. */
  async jobs(opts: ListJobRunsOptions): Promise<RunPage> {
    return listJobRuns(await this.#src.view(), opts);
  }

  /** Runs whose current step waits for a signal, with the key and deadline. */
  async waiting(opts: { cursor?: string; limit?: number }): Promise<RunPage> {
    return (await this.#src.view()).listRuns({ ...opts, state: "awaiting_signal" });
  }

  async run(runId: string): Promise<RunDetail | null> {
    const view = await this.#src.view();
    const detail = await readRunDetail(view, await this.#src.reader(), runId);
    if (detail === null) return null;
    return withHistory(detail, await view.inspectRun(runId));
  }

  async dead(opts: { queue?: string; after?: string; limit: number }): Promise<DeadLetterPage> {
    return listDeadLetters(await this.#src.reader(), opts);
  }

  async groups(opts: ListGroupsOptions): Promise<GroupPage> {
    return (await this.#src.view()).listGroups(opts);
  }

  async group(groupId: string): Promise<GroupSummary | null> {
    return readGroupSummary(await this.#src.view(), await this.#src.reader(), this.#src.memos(), groupId);
  }

  async cancel(runId: string): Promise<CancelResult> {
    return { runId, cancelled: await (await this.#src.client()).cancel(runId) };
  }

  async retryRun(runId: string, opts: RetryRunOptions = {}): Promise<RetryOutcome> {
    return (await this.#src.client()).retryRun(runId, opts);
  }

  async retryJob(jobId: string): Promise<RetryOutcome> {
    return (await this.#src.client()).retryJob(jobId);
  }

  /**
   * Redrives a dead letter. A dead step job is its run's failure, so its
   * run is retried (a typed job with `retryJob`), which requeues the job;
   * a plain queue's dead job has no client command (its owner calls
   * `Queue.requeueDead`): `RedriveRefusedError`.
   */
  async redrive(jobId: string): Promise<RetryOutcome> {
    const job = await (await this.#src.reader()).job(jobId);
    if (job === null) throw new RedriveRefusedError("not_found", `no job "${jobId}" in this store: never enqueued, or removed`);
    if (job.state !== "dead")
      throw new RedriveRefusedError("not_dead", `job "${jobId}" of queue "${job.queueName}" is ${job.state}, not dead: nothing to redrive`);
    const runId = job.headers[HEADER_RUN_ID];
    if (runId === undefined) {
      throw new RedriveRefusedError(
        "plain_queue",
        `job "${jobId}" of queue "${job.queueName}" is not a workflow step, and clients reach workflow runs only: requeue it in the owner with queue.requeueDead("${jobId}")`,
      );
    }
    const history = await (await this.#src.view()).inspectRun(runId);
    return history?.kind === "job" ? this.retryJob(runId) : this.retryRun(runId);
  }

  async signal(key: string, payload: Uint8Array): Promise<{ key: string; outcome: SignalOutcome; bytes: number }> {
    return { key, outcome: await (await this.#src.client()).signal(key, payload), bytes: payload.byteLength };
  }
}
