/**
 * @module Everything the operator tools do, as plain data in and out: the
 * reads over the read-only view (listings, a run's detail and history,
 * queue health, dead letters, groups) and the writes through
 * `TaqubaClient` (cancel, retry, signal), which the running owner applies.
 * The dashboard's JSON API is this module over HTTP; the CLI prints it.
 */
import { ValidationError } from "../../runtime/errors.js";
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
import { findRunDamage, type RepairOutcome, type RepairRunOptions } from "../../runtime/workflow/runs/repair.js";
import { HEADER_RUN_ID } from "../../runtime/workflow/records/reserved.js";
import { readGroupSummary, readGroupSummaryOver, type GroupSummary } from "./group-summary.js";
import { damageWithWords, groupDamageText, runDamageText, withDamageText } from "./damage-text.js";
import { shardOfRun } from "../../runtime/client/shard-route.js";
import { listDeadLetters, type DeadLetterPage } from "./job-listing.js";
import { readQueueHealth, type QueueHealth } from "./queue-health.js";
import { readRunDetail, withHistory, type RunDetail } from "./run-detail.js";
import { readLeases, readOwners, type LeaseStatus, type OwnerStatus } from "../../runtime/cluster/owners-status.js";
import type { JobRow } from "./job-listing.js";
import type { RecountStatsOptions, StatsRecount } from "../../runtime/queue/stats-recount.js";

/** One shard's queue health; `health` is null for a shard no owner has opened yet. `shard` is null on an unsharded store. */
export interface ShardHealth {
  readonly shard: number | null;
  readonly health: QueueHealth | null;
}

/** One shard's page of dead letters (`shard` null on an unsharded store); `next` continues that shard. */
export interface ShardDeadLetters {
  readonly shard: number | null;
  readonly items: readonly JobRow[];
  readonly next?: string;
}

function checkShard(shard: number, count: number): void {
  if (!Number.isSafeInteger(shard) || shard < 0 || shard >= count)
    throw new ValidationError(`shard must be a whole number from 0 to ${count - 1}, got ${shard}`);
}

/** Reads a shard; null when no owner ever opened it (nothing written there yet). */
async function unopenedAsNull<T>(read: () => Promise<T>): Promise<T | null> {
  try {
    return await read();
  } catch (e) {
    if (e instanceof Error && e.name === "NoSuchStoreError") return null;
    throw e;
  }
}

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

/** `page` with each unreadable run's reason in the operator's terms, built from its damage's fields (see damage-text.ts). */
function damageInTerms(page: RunPage): RunPage {
  return page.unreadable === undefined
    ? page
    : { ...page, unreadable: page.unreadable.map((u) => ({ ...u, reason: u.damage === undefined ? u.reason : runDamageText(u.runId, u.damage) })) };
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
  /** The runtime's step queue (for the owners' backlog). Default: the runtime's default. */
  readonly stepQueue?: string;
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

  /** The number of shards; null when the store is not sharded. */
  async shardCount(): Promise<number | null> {
    return (await this.#sharded())?.length ?? null;
  }

  /** Queue health of every shard (one entry, shard null, on an unsharded store). */
  async healthByShard(): Promise<ShardHealth[]> {
    const shards = await this.#sharded();
    if (shards === undefined) return [{ shard: null, health: await this.health() }];
    return Promise.all(shards.map(async (s, shard) => ({ shard, health: await unopenedAsNull(() => new Operations(s, this.#now).health()) })));
  }

  /**
   * Dead letters per shard: the one shard asked for, else a page of every
   * shard (a shard no owner opened has none). `after` continues one shard,
   * so it needs `shard` on a sharded store.
   */
  async deadByShard(opts: { queue?: string; after?: string; limit: number; shard?: number }): Promise<ShardDeadLetters[]> {
    const shards = await this.#sharded();
    if (shards === undefined) {
      if (opts.shard !== undefined) throw new ValidationError("this store is not split into shards: leave out the shard");
      return [{ shard: null, ...(await this.dead(opts)) }];
    }
    const { shard, ...rest } = opts;
    if (shard !== undefined) checkShard(shard, shards.length);
    else if (rest.after !== undefined) throw new ValidationError("a dead letter position belongs to one shard: give the shard it came from");
    const picked = shard === undefined ? shards.map((s, i) => [s, i] as const) : [[shards[shard]!, shard] as const];
    return Promise.all(
      picked.map(async ([s, i]) => ({ shard: i, ...((await unopenedAsNull(() => new Operations(s, this.#now).dead(rest))) ?? { items: [] }) })),
    );
  }

  /** Per shard (one line unsharded): the owning process, its lease expiry and the backlog. */
  async owners(): Promise<OwnerStatus[]> {
    const now = this.#now();
    return readOwners(this.#src.store(), this.#src.name, { ...(this.#src.stepQueue === undefined ? {} : { queueName: this.#src.stepQueue }), now: () => now });
  }

  /** Per shard (one line unsharded): the lease holder and expiry alone, which a renewal moves (cheaper than `owners`). */
  async leases(): Promise<LeaseStatus[]> {
    return readLeases(this.#src.store(), this.#src.name);
  }

  /** Whether the store is sharded: listings then merge every shard through the client. */
  async #sharded(): Promise<readonly OperationsSource[] | undefined> {
    return this.#src.shards?.();
  }

  async runs(opts: ListRunsOptions): Promise<RunPage> {
    if ((await this.#sharded()) !== undefined) return damageInTerms(await (await this.#src.client()).listRuns(opts));
    return damageInTerms(await (await this.#src.view()).listRuns(opts));
  }

  /** Typed jobs by job name, as `JobRunner.listJobs` lists them. */
  async jobs(opts: ListJobRunsOptions): Promise<RunPage> {
    if ((await this.#sharded()) !== undefined) return damageInTerms(await (await this.#src.client()).listJobs(opts));
    return damageInTerms(await listJobRuns(await this.#src.view(), opts));
  }

  /** Runs whose current step waits for a signal, with the key and deadline. */
  async waiting(opts: { cursor?: string; limit?: number }): Promise<RunPage> {
    return this.runs({ ...opts, state: "awaiting_signal" });
  }

  /**
   * The run's page: its detail, history and the damage of its records. Of
   * a parent's children's entries, one read's worth is checked (those
   * after the child `childrenAfter`); `childEntries` says how far, when
   * more follow or a later part was asked for. Of its history, one page
   * (`HISTORY_ENTRIES_PER_PAGE` entries after step `historyAfter`, one
   * read); `historyPage` says how far, the same way.
   */
  async run(runId: string, childrenAfter?: string, historyAfter?: number): Promise<RunDetail | null> {
    const shards = await this.#sharded();
    if (shards !== undefined)
      return unopenedAsNull(() => new Operations(shards[shardOfRun(runId, shards.length)]!, this.#now).run(runId, childrenAfter, historyAfter));
    const view = await this.#src.view();
    const reader = await this.#src.reader();
    const detail = await readRunDetail(view, reader, runId);
    if (detail === null) return null;
    const check = await findRunDamage(
      { queueName: view.queueName, kvGet: (k) => reader.kvGet(k), kvScan: (p, o) => reader.kvScan(p, o) },
      runId,
      childrenAfter,
    );
    const paged = check.childEntries.next !== undefined || check.childEntries.after !== undefined;
    return withHistory(
      {
        ...detail,
        ...(check.damaged.length === 0 ? {} : { damage: check.damaged.map(damageWithWords) }),
        ...(paged ? { childEntries: check.childEntries } : {}),
      },
      await view.inspectRunPage(runId, historyAfter),
    );
  }

  async dead(opts: { queue?: string; after?: string; limit: number }): Promise<DeadLetterPage> {
    return listDeadLetters(await this.#src.reader(), opts);
  }

  async groups(opts: ListGroupsOptions): Promise<GroupPage> {
    const page = (await this.#sharded()) !== undefined ? await (await this.#src.client()).listGroups(opts) : await (await this.#src.view()).listGroups(opts);
    // Each reason built from its damage's fields; the text is rewritten only for an entry that came without them. A damaged
    // listing entry keeps the listing's own reason: it names the group by the id its bytes still hold, or by its creation time.
    return page.unreadable === undefined
      ? page
      : {
          ...page,
          unreadable: page.unreadable.map((u) => ({
            ...u,
            reason: u.damage === undefined ? withDamageText(u.reason) : u.damage.record === "index_entry" ? u.reason : groupDamageText(u.groupId, u.damage),
          })),
        };
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

  /** Mends a run whose records are damaged, through the owner (`TaqubaClient.repairRun`); `dryRun` writes nothing. */
  async repair(runId: string, opts: RepairRunOptions = {}): Promise<RepairOutcome> {
    return (await this.#src.client()).repairRun(runId, opts);
  }

  /**
   * Counts queue `queueName`'s stats record again from its indexes, through
   * the owner (`TaqubaClient.recountStats`); `dryRun` writes nothing. On a
   * sharded store, `shard` names the shard whose stats are recounted.
   */
  async recountStats(queueName: string, opts: RecountStatsOptions = {}, shard?: number): Promise<StatsRecount> {
    return (await this.#src.client()).recountStats(queueName, opts, shard);
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
  async redrive(jobId: string, shard?: number): Promise<Redriven> {
    const shards = await this.#sharded();
    if (shards !== undefined) {
      if (shard !== undefined) {
        checkShard(shard, shards.length);
        return new Operations(shards[shard]!, this.#now).redrive(jobId);
      }
      // Without a shard: the first shard holding a job of this id.
      for (const s of shards) {
        const job = await unopenedAsNull(async () => (await s.reader()).job(jobId));
        if (job !== null) return new Operations(s, this.#now).redrive(jobId);
      }
      throw new RedriveRefusedError("not_found", `no job "${jobId}" on any of the ${shards.length} shards: never enqueued, or removed`);
    }
    if (shard !== undefined) throw new ValidationError("this store is not split into shards: leave out the shard");
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
