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
import { readGroupSummary, readGroupSummaryOver, type GroupSummary } from "./group-summary.js";
import { shardOfRun } from "../../runtime/client/shard-route.js";
import { listDeadLetters, type DeadLetterPage } from "./job-listing.js";
import { readQueueHealth, type QueueHealth } from "./queue-health.js";
import { readRunDetail, withHistory, type RunDetail } from "./run-detail.js";

/** What a redrive did: a step job's run re-opened, or a plain queue's job requeued. */
export type Redriven = ({ readonly kind: "run" } & RetryOutcome) | { readonly kind: "job"; readonly jobId: string; readonly queueName: string };

/** A dead letter that cannot be redriven from here; `reason` says why. */
export class RedriveRefusedError extends Error {
  override readonly name = "RedriveRefusedError";
  constructor(
    readonly reason: "not_found" | "not_dead",
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
  /** On a sharded store, the source of each shard; undefined (or absent) when not sharded. */
  shards?(): Promise<readonly OperationsSource[] | undefined>;
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

  /** Whether the store is sharded: listings then merge every shard through the client. */
  async #sharded(): Promise<readonly OperationsSource[] | undefined> {
    return this.#src.shards?.();
  }

  async runs(opts: ListRunsOptions): Promise<RunPage> {
    if ((await this.#sharded()) !== undefined) return (await this.#src.client()).listRuns(opts);
    return (await this.#src.view()).listRuns(opts);
  }

  /** Typed jobs by job name, as `JobRunner.listJobs` lists them. */
  async jobs(opts: ListJobRunsOptions): Promise<RunPage> {
    if ((await this.#sharded()) !== undefined) return (await this.#src.client()).listJobs(opts);
    return listJobRuns(await this.#src.view(), opts);
  }

  /** Runs whose current step waits for a signal, with the key and deadline. */
  async waiting(opts: { cursor?: string; limit?: number }): Promise<RunPage> {
    return this.runs({ ...opts, state: "awaiting_signal" });
  }

  async run(runId: string): Promise<RunDetail | null> {
    const shards = await this.#sharded();
    if (shards !== undefined) return new Operations(shards[shardOfRun(runId, shards.length)]!, this.#now).run(runId);
    const view = await this.#src.view();
    const detail = await readRunDetail(view, await this.#src.reader(), runId);
    if (detail === null) return null;
    return withHistory(detail, await view.inspectRun(runId));
  }

  async dead(opts: { queue?: string; after?: string; limit: number }): Promise<DeadLetterPage> {
    return listDeadLetters(await this.#src.reader(), opts);
  }

  async groups(opts: ListGroupsOptions): Promise<GroupPage> {
    if ((await this.#sharded()) !== undefined) return (await this.#src.client()).listGroups(opts);
    return (await this.#src.view()).listGroups(opts);
  }

  /** A group's summary; on a sharded store its members are read from every shard (a shard no owner ever opened holds none). */
  async group(groupId: string): Promise<GroupSummary | null> {
    const shards = await this.#sharded();
    if (shards === undefined) return readGroupSummary(await this.#src.view(), await this.#src.reader(), this.#src.memos(), groupId);
    const parts = await Promise.all(
      shards.map(async (s) => {
        try {
          return { view: await s.view(), reader: await s.reader() };
        } catch (e) {
          if (e instanceof Error && e.name === "NoSuchStoreError") return undefined;
          throw e;
        }
      }),
    );
    return readGroupSummaryOver(parts, (runId) => shardOfRun(runId, shards.length), this.#src.memos(), groupId);
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
   * a plain queue's dead job is requeued with fresh attempts through the
   * owner (`TaqubaClient.requeueDead`).
   */
  async redrive(jobId: string): Promise<Redriven> {
    const job = await (await this.#src.reader()).job(jobId);
    if (job === null) throw new RedriveRefusedError("not_found", `no job "${jobId}" in this store: never enqueued, or removed`);
    if (job.state !== "dead")
      throw new RedriveRefusedError("not_dead", `job "${jobId}" of queue "${job.queueName}" is ${job.state}, not dead: nothing to redrive`);
    const runId = job.headers[HEADER_RUN_ID];
    if (runId === undefined) {
      if (!(await (await this.#src.client()).requeueDead(jobId))) {
        throw new RedriveRefusedError("not_dead", `job "${jobId}" of queue "${job.queueName}" is no longer dead: nothing to redrive`);
      }
      return { kind: "job", jobId, queueName: job.queueName };
    }
    const history = await (await this.#src.view()).inspectRun(runId);
    const out = history?.kind === "job" ? await this.retryJob(runId) : await this.retryRun(runId);
    return { kind: "run", ...out };
  }

  async signal(key: string, payload: Uint8Array): Promise<{ key: string; outcome: SignalOutcome; bytes: number }> {
    return { key, outcome: await (await this.#src.client()).signal(key, payload), bytes: payload.byteLength };
  }
}
