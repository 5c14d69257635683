/**
 * @module Everything the operator tools do, as plain data in and out: the
 * reads over the read-only view (listings, a run's detail and history,
 * queue health, dead letters, groups) and the writes through
 * `TaqubaClient` (cancel, retry, signal), which the running owner applies.
 * The dashboard's JSON API is this module over HTTP; the CLI prints it.
 */
import type { TaqubaClient } from "../../runtime/client/taquba-client.js";
import type { ListJobRunsOptions } from "../../runtime/jobs/job-listing.js";
import type { QueueReader } from "../../runtime/queue/reader.js";
import type { ObjectStore } from "../../runtime/store/object-store.js";
import type { MemoStore } from "../../runtime/workflow/memo/memo.js";
import type { GroupPage, ListGroupsOptions } from "../../runtime/workflow/groups/group-listing.js";
import type { ListRunsOptions, RunPage } from "../../runtime/workflow/runs/run-listing.js";
import type { RetryOutcome, RetryRunOptions, SignalOutcome } from "../../runtime/workflow/runs/run-types.js";
import type { WorkflowView } from "../../runtime/workflow/runs/workflow-view.js";
import { readGroupSummary, type GroupSummary } from "./group-summary.js";
import { listDeadLetters, type DeadLetterPage } from "./job-listing.js";
import { readQueueHealth, type QueueHealth } from "./queue-health.js";
import { readRunDetail, withHistory, type RunDetail } from "./run-detail.js";

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

  /** Typed jobs: runs whose kind is `job`, by job name. */
  async jobs(opts: ListJobRunsOptions): Promise<RunPage> {
    const { job, ...rest } = opts;
    const page = await (await this.#src.view()).listRuns({ ...rest, ...(job === undefined ? {} : { workflow: job }) });
    return { ...page, runs: page.runs.filter((r) => r.kind === "job") };
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

  async signal(key: string, payload: Uint8Array): Promise<{ key: string; outcome: SignalOutcome; bytes: number }> {
    return { key, outcome: await (await this.#src.client()).signal(key, payload), bytes: payload.byteLength };
  }
}
