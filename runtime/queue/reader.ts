/**
 * @module `QueueReader`: the queue's views from another process, over a
 * read-only engine reader. It never writes, so it never fences the writer.
 * Its state is the writer's durable state as of the last `refresh()`.
 */
import { EngineReader } from "../engine/engine-reader.js";
import { oldestPending, type OldestPending } from "./oldest-pending.js";
import { claimedCounts, derivedWaiting, storedQueueRate, type ClaimedCounts } from "./derived-waiting.js";
import type { ResolvedRateLimit } from "./admission.js";
import { type Clock, SystemClock } from "../clock.js";
import type { ObjectStore } from "../store/object-store.js";
import { validateStoreName } from "./names.js";
import { ValidationError } from "../errors.js";
import { describeValue, hasMethods, optionFields, readExactOptions } from "../option-values.js";
import { PrefixedStore } from "./prefixed-store.js";
import { ENGINE_PREFIX } from "./queue.js";
import type { JobAttempt, JobState, QueueStats } from "./record.js";
import type { JobInfo, Page } from "./types.js";
import { StoreView, type KvPage, type KvScanOptions, type ListJobsOptions, type QueueView } from "./view.js";
import { checkStoreArg } from "../store/store-check.js";

/**
 * @example
 * const reader = await QueueReader.open(store, "demo");
 * console.log(await reader.stats("emails"));
 * await reader.refresh(); // pick up what the writer committed since
 */
export class QueueReader implements QueueView {
  readonly #reader: EngineReader;
  readonly #view: StoreView;

  /** Claimed jobs per flow rule and key, per queue, as of the last load (see `derived-waiting`). */
  readonly #counts = new Map<string, ClaimedCounts>();

  /** Each queue's own rate limit as its owner recorded it, as of the last load. */
  readonly #rates = new Map<string, ResolvedRateLimit | undefined>();

  private constructor(reader: EngineReader, clock: Clock) {
    this.#reader = reader;
    this.#view = new StoreView(reader, (r) =>
      derivedWaiting(r, {
        counts: (q) => this.#claimedCounts(q),
        source: reader,
        queueRate: (q) => this.#queueRate(q),
        now: () => clock.now(),
      }),
    );
  }

  #queueRate(queue: string): ResolvedRateLimit | undefined {
    if (!this.#rates.has(queue)) this.#rates.set(queue, storedQueueRate(this.#reader, queue));
    return this.#rates.get(queue);
  }

  #claimedCounts(queue: string): ClaimedCounts {
    let c = this.#counts.get(queue);
    if (c === undefined) {
      c = claimedCounts(this.#reader, queue);
      this.#counts.set(queue, c);
    }
    return c;
  }

  /**
   * Loads the durable state of queue store `name` in `store` (the `name`
   * given to `Queue.open`). `clock` tells whether a rate limit still holds
   * a job back (default: the system clock; use the owner's in tests).
   */
  static async open(store: ObjectStore, name: string, opts: { clock?: Clock } = {}): Promise<QueueReader> {
    validateStoreName(name);
    checkStoreArg("QueueReader.open's store", store);
    const { clock } = readExactOptions(opts, optionFields<{ clock?: Clock }>({ clock: true }), "QueueReader.open's options");
    if (clock !== undefined && !hasMethods(clock, ["now"]))
      throw new ValidationError(`QueueReader.open's options.clock must be an object with a now() method (a Clock), got ${describeValue(clock)}`);
    const root = new PrefixedStore(store, `${name}/`);
    return new QueueReader(await EngineReader.open(new PrefixedStore(root, ENGINE_PREFIX)), (clock as Clock | undefined) ?? SystemClock);
  }

  /** The oldest pending job of `queueName` (see `oldest-pending`): its enqueue time, and whether every priority lane was looked at. */
  oldestPending(queueName: string): Promise<OldestPending> {
    return oldestPending(this.#reader, queueName);
  }

  /** Reads what the writer made durable since the last load. `true` when something changed. */
  async refresh(): Promise<boolean> {
    const changed = await this.#reader.refresh();
    if (changed) {
      this.#counts.clear();
      this.#rates.clear();
    }
    return changed;
  }

  stats(queueName: string): Promise<QueueStats> {
    return this.#view.stats(queueName);
  }
  listQueues(): Promise<string[]> {
    return this.#view.listQueues();
  }
  job(jobId: string): Promise<JobInfo | null> {
    return this.#view.job(jobId);
  }
  listJobs(queueName: string, state: JobState, opts?: ListJobsOptions): Promise<Page<JobInfo>> {
    return this.#view.listJobs(queueName, state, opts);
  }
  deadJobs(queueName: string, opts?: { after?: string; limit?: number }): Promise<JobInfo[]> {
    return this.#view.deadJobs(queueName, opts);
  }
  attemptHistory(jobId: string): Promise<JobAttempt[]> {
    return this.#view.attemptHistory(jobId);
  }
  kvGet(key: string): Promise<Uint8Array | null> {
    return this.#view.kvGet(key);
  }
  kvScan(prefix: string, opts?: KvScanOptions): Promise<KvPage> {
    return this.#view.kvScan(prefix, opts);
  }

  async close(): Promise<void> {
    await this.#reader.close();
  }
}
