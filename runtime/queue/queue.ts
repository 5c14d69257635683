/**
 * @module `Queue`: the durable task queue over one engine.
 *
 * Every operation is a transaction built from synchronous engine reads and
 * committed within the same turn of the event loop, so transactions never
 * interleave and need no locks or conflict retries. Enqueues, settlements,
 * cancels, wakes and KV writes wait for durability; claims and background
 * work do not (each is safe to lose in a crash: it is redone). The
 * operations live in `enqueue-ops`, `claim-settle`, `cancel-wake`,
 * `kv-ops` and `completion`; this class is their public face.
 */
import { ConstructionGate } from "../internal-construction.js";
import { copyBytes } from "../bytes.js";
import { seedRateWindows } from "./rate-records.js";
import { readShardPlacement, type ShardPlacement } from "./shard-layout.js";
import { type FullLogger, fullLogger } from "../logger.js";
import { loadTelemetry } from "../telemetry/tracing.js";
import { registerQueueGauges } from "./gauges.js";
import type { TimedClock } from "../clock.js";
import { Engine, type EngineOptions, type EngineStats, type ValueToken } from "../engine/engine.js";
import { validateEngineOptions } from "../engine/engine-options.js";
import { describeValue, isOptionArray } from "../option-values.js";
import { readOpenOptions } from "./open-options.js";
import { ValidationError } from "../errors.js";
import type { ObjectStore } from "../store/object-store.js";
import * as cw from "./cancel-wake.js";
import * as cs from "./claim-settle.js";
import { waitForCompletion } from "./completion.js";
import { QueueConfigs, type DeadLetteredEvent, type OpenOptions } from "./config.js";
import { effectsRefusal, type SettlementEffects } from "./effects.js";
import * as eq from "./enqueue-ops.js";
import * as kv from "./kv-ops.js";
import type { KvExpectation } from "./kv-ops.js";
import { mendDamagedStats } from "./stats-mend-at-open.js";
import { recoverClaims } from "./maintenance.js";
import { KvKeyRef } from "./user-keys.js";
import { callerKeyHeads, engineKeyHeads } from "./caller-key-heads.js";
import { type BorrowedBytes, lend } from "./borrowed-bytes.js";
import { validatePositiveInt, validateQueueName, validateStoreName } from "./names.js";
import { PAYLOAD_PREFIX, PayloadStore } from "./payloads.js";
import { PrefixedStore } from "./prefixed-store.js";
import { resolvePayloadLimit } from "./payload-limit.js";
import { QueueCore } from "./queue-core.js";
import * as K from "./keys.js";
import { checkRecountOptions, type RecountStatsOptions, type StatsRecount } from "./stats-recount.js";
import { StatsRecounts } from "./stats-recount-turns.js";
import { openWindowHolder } from "./transitions.js";
import { heldBack, type FlowRule } from "./admission.js";
import type {
  AckedClaimingNext,
  CancelOutcome,
  ClaimedJob,
  ClaimNext,
  CompletionResult,
  DeadLetterOptions,
  EnqueueItem,
  EnqueueOptions,
  EnqueueOutcome,
  NackOptions,
  NackOutcome,
  WakeOutcome,
} from "./types.js";
import { kvScanSync, StoreView, type KvPage, type KvScanOptions, type QueueView } from "./view.js";
import { readEnqueueItems, settleOptionsRefusal } from "./queue-option-fields.js";
import { checkStoreArg } from "../store/store-check.js";

/** What `Queue.kvTokenNow` returns: compared with `===` only. Not exported by the package's entries; declared in its types because the workflow's step records name it. */
export type KvToken = ValueToken;

/** What open-time recovery did with the claims the previous process held. */
export interface RecoveryReport {
  requeued: string[];
  deadLettered: string[];
}

/** Where a queue keeps its engine inside the store view `<name>/`. */
export const ENGINE_PREFIX = "db/";

/** Default `recordCacheBytes`: 32 MiB. */
export const DEFAULT_RECORD_CACHE_BYTES = 32 * 1024 * 1024;

/**
 * The WAL a queue that pages its records gathers before a checkpoint: 8 MiB
 * instead of the engine's 64. The records not yet checkpointed stay in
 * memory, with their keys and the changed-keys bookkeeping of the next
 * checkpoint, so this bounds most of what a fill holds live; see
 * docs/engine.md, "The fill's peak at 1M: checkpoints every 8 MiB".
 */
export const QUEUE_CHECKPOINT_WAL_BYTES = 8 * 1024 * 1024;
/**
 * The segment runs a queue's manifest may list before a compaction: 16
 * instead of the engine's 8, so that with checkpoints twice as frequent a
 * compaction (a rewrite of the whole state) still comes after as much WAL
 * (16 runs of 8 MiB, as 8 of 16 did).
 */
export const QUEUE_MAX_SEGMENT_RUNS = 16;

/**
 * The engine options of a queue: its flush interval, its clock, and job
 * records (`j/` keys) paged out of memory once checkpointed, read through a
 * cache of `recordCacheBytes`. Every read of a record warms it first (warm.ts).
 */
function engineOptions(opts: OpenOptions): EngineOptions {
  const given = opts.recordCacheBytes === undefined ? DEFAULT_RECORD_CACHE_BYTES : opts.recordCacheBytes;
  // A budget in whole bytes: a fraction would be a typo, not a size.
  if (given !== null && (typeof given !== "number" || !Number.isSafeInteger(given) || given < 0)) {
    throw new ValidationError(
      `OpenOptions.recordCacheBytes must be null (keep every record in memory) or a whole number of bytes from 0 to ${Number.MAX_SAFE_INTEGER}, got ${describeValue(given)}`,
    );
  }
  // -0 is 0, so nothing downstream sees a negative zero.
  const cache = given === null ? null : given + 0;
  return {
    ...(opts.flushIntervalMs === undefined ? {} : { flushIntervalMs: opts.flushIntervalMs }),
    // Paging also checkpoints more often: the records not yet checkpointed stay in memory.
    ...(cache === null
      ? {}
      : {
          pageValues: { keyPrefixes: [K.JOB], cacheBytes: cache },
          checkpointWalBytes: QUEUE_CHECKPOINT_WAL_BYTES,
          maxSegmentRuns: QUEUE_MAX_SEGMENT_RUNS,
        }),
    ...opts.engineOptions,
    // The pause of automatic checkpoints after a failed one runs on the queue's clock too (a MockClock moves it).
    ...(opts.engineOptions?.clock === undefined && opts.clock !== undefined ? { clock: opts.clock } : {}),
  };
}

/** Default `payloadOffloadBytes`: 256 KiB, as in the Rust crate. */
export const DEFAULT_PAYLOAD_OFFLOAD_BYTES = 256 * 1024;

/** `new Queue` is internal: use Queue.open(store, name, options) (see internal-construction.ts). */
const QUEUE_GATE = new ConstructionGate("Queue", "use Queue.open(store, name, options)");

/**
 * A durable task queue: many named queues in one engine.
 *
 * @example
 * const queue = await Queue.open(new MemoryStore(), "demo");
 * await queue.enqueue("emails", new TextEncoder().encode("hi"));
 * const job = await queue.claim("emails");
 * if (job) await queue.ack(job);
 */
export class Queue {
  /** The clock every timestamp and timer of this queue uses. */
  readonly clock: TimedClock;
  /** What recovery did at open. */
  readonly recovery: RecoveryReport;
  readonly #core: QueueCore;
  /** @internal The stats recounts of this owner (stats-recount-turns.ts). */
  readonly recounts: StatsRecounts;
  /** The running or ended `close()`, so every call waits for the one close. */
  #closing: Promise<void> | undefined;
  readonly #view: StoreView;

  readonly #shard: ShardPlacement | undefined;

  private constructor(core: QueueCore, recovery: RecoveryReport, shard: ShardPlacement | undefined) {
    QUEUE_GATE.check();
    this.#core = core;
    this.recounts = new StatsRecounts(core);
    this.#shard = shard;
    this.clock = core.clock;
    this.recovery = recovery;
    this.#view = new StoreView(core.engine, (r) => {
      const limits = core.limitsOf(r.queue);
      const now = core.clock.now();
      // After a restart, before any claim of the key, the previous owner's window still counts.
      seedRateWindows(core.engine, core.leases.windows, limits, r.headers, now);
      return heldBack(core.leases.slots, core.leases.windows, limits, r.headers, now);
    });
  }

  /** The store name given to `open`. */
  get name(): string {
    return this.#core.name;
  }

  /** Which shard of a sharded store this queue store is (its name is `{name}/shards/{i}`; see `createShards`), or undefined. */
  get shard(): ShardPlacement | undefined {
    return this.#shard;
  }

  /**
   * Opens (or creates) the queue store `name` inside `store`: its engine
   * lives under `<name>/db/` and offloaded payloads under `<name>/payloads/`.
   * Claims a previous process held are requeued (or dead-lettered at their
   * attempt limit) before this resolves. Opening fences any other writer of
   * the same store.
   */
  static async open(store: ObjectStore, name: string, given: OpenOptions = {}): Promise<Queue> {
    validateStoreName(name);
    // Before any request: a store that cannot serve one would otherwise fail the open after retries, blamed on its reachability.
    checkStoreArg("Queue.open's store", store);
    // Every field read once, before anything else reads one.
    const opts = readOpenOptions(given);
    await loadTelemetry();
    // Resolved once, before any IO (a bad setting leaves the store as it was); the queue runs with this.
    const configs = new QueueConfigs(opts.defaultQueueConfig, opts.queueConfigs);
    const threshold = opts.payloadOffloadBytes === undefined ? DEFAULT_PAYLOAD_OFFLOAD_BYTES : opts.payloadOffloadBytes;
    if (threshold !== null) validatePositiveInt("OpenOptions.payloadOffloadBytes", threshold);
    const maxPayloadBytes = resolvePayloadLimit(opts.maxPayloadBytes);
    // Before the first store request: a bad option must leave the store as it was.
    const engineOpts = validateEngineOptions(engineOptions(opts));
    // A shard's runtime gives the runs it creates ids that route back to it.
    const shard = await readShardPlacement(store, name);
    const root = new PrefixedStore(store, `${name}/`);
    // Temporary files of payload puts a killed process left (the engine sweeps its own).
    await root
      .removeLeftovers(PAYLOAD_PREFIX)
      .catch((err: unknown) =>
        fullLogger(opts.logger).warn(
          { err, queue: name },
          `queue "${name}": removing leftover temporary files failed (they only take disk space): ${err instanceof Error ? err.message : String(err)}`,
        ),
      );
    const engine = await Engine.open(new PrefixedStore(root, ENGINE_PREFIX), engineOpts);
    const core = new QueueCore(name, engine, new PayloadStore(root, threshold), opts, configs, maxPayloadBytes);
    core.log.info(
      { queue: name, epoch: engine.epoch },
      `queue "${name}": this process is now the writer of its store (writer epoch ${engine.epoch})${engine.epoch > 1 ? "; the writer before it is fenced" : ""}`,
    );
    let recovery: Awaited<ReturnType<typeof recoverClaims>>;
    try {
      // Recovery rewrites the stats of the queues it moves claims in: a damaged record is counted again first.
      await mendDamagedStats({ storeName: name, engine, commit: (txn) => core.commit(txn, true), log: core.log });
      recovery = await recoverClaims(core.host);
    } catch (err) {
      // Loading paged-out claimed records (or the mend's commit) failed: no claim was moved; leave the store to the next open.
      await engine.close();
      throw err;
    }
    core.loop.start();
    const queue = QUEUE_GATE.build(() => new Queue(core, recovery, shard));
    registerQueueGauges(core); // once the open can no longer fail, so a failed open leaves no source behind
    queue.sweepOrphanPayloads().catch((err) => {
      if (!core.isClosed) core.host.onError(err);
    });
    return queue;
  }

  /**
   * Deletes offloaded payload objects that no job refers to (a crash
   * between writing one and committing its job leaves such an orphan).
   * Runs in the background at open; returns how many were deleted.
   */
  async sweepOrphanPayloads(): Promise<number> {
    const core = this.#core;
    core.checkOpen();
    const orphan = (ref: string) => !core.inflightRefs.has(ref) && !core.engine.has(K.payloadRefKey(ref));
    // Flushing before deleting makes every removal of a reference durable,
    // so no record that still points at an object can come back after a crash.
    return core.payloads.sweepOrphans(orphan, () => core.engine.flush(), orphan);
  }

  // ---- enqueue ---------------------------------------------------------

  /**
   * A fresh job id for `EnqueueOptions.jobId`: ordered after every id this
   * queue generated, and held by no job when drawn (an id a caller took is
   * passed over, as an enqueue without an id passes it over).
   */
  nextJobId(): string {
    const id = eq.freshJobId(this.#core);
    // Kept for its insert: only an id this queue handed out is inserted as drawn without a look-up.
    this.#core.callerIds.handedOut(id);
    return id;
  }

  /** Enqueues one job; resolves once durable. Bad input throws `ValidationError` and writes nothing. */
  async enqueue(queueName: string, payload: Uint8Array, opts: EnqueueOptions = {}): Promise<EnqueueOutcome> {
    return (await eq.enqueueItems(this.#core, [{ queueName, payload, opts }]))[0]!;
  }

  /** Enqueues every item in one atomic commit; outcomes align with `items`. */
  async enqueueBatch(items: readonly EnqueueItem[]): Promise<EnqueueOutcome[]> {
    if (!isOptionArray(items)) throw new ValidationError(`enqueueBatch takes an array of { queueName, payload, opts? }, got ${describeValue(items)}`);
    const given = readEnqueueItems(items);
    return given.length === 0 ? [] : eq.enqueueItems(this.#core, given, true);
  }

  /**
   * Enqueues one job and applies `effects` in the same commit; `enqueued`
   * holds the outcomes of the effects' own enqueues. On a dedup hit nothing
   * is written, effects included.
   */
  enqueueWithEffects(
    queueName: string,
    payload: Uint8Array,
    opts: EnqueueOptions,
    effects: SettlementEffects,
  ): Promise<{ outcome: EnqueueOutcome; enqueued: EnqueueOutcome[] }> {
    return eq.enqueueWithEffects(this.#core, queueName, payload, opts, effects) as Promise<{ outcome: EnqueueOutcome; enqueued: EnqueueOutcome[] }>;
  }

  /**
   * @internal `enqueueWithEffects` for a debounced submission whose
   * supersession commits effects of its own (a superseded run's end):
   * `"raced"`, writing nothing, when the insert would not supersede exactly
   * `expected.jobId` (read with `debounceHolder` before), or, as in
   * `enqueueIfUnchanged`, when a caller key of `unchanged` no longer holds
   * its value (a debounced child run's start, held to its parent's step).
   */
  enqueueSuperseding(
    queueName: string,
    payload: Uint8Array,
    opts: EnqueueOptions,
    effects: SettlementEffects,
    expected: { jobId: string | undefined; effects: SettlementEffects },
    unchanged: readonly KvExpectation[] = [],
  ): Promise<{ outcome: EnqueueOutcome; enqueued: EnqueueOutcome[] } | "raced"> {
    return eq.enqueueWithEffects(this.#core, queueName, payload, opts, effects, expected, unchanged);
  }

  /**
   * @internal `enqueueWithEffects` that commits only while every caller key
   * of `unchanged` holds its value (`null`: absent), checked in the commit
   * itself: `"raced"`, writing nothing, when one changed since it was read
   * (a child run's start, held to its parent's step being current).
   */
  enqueueIfUnchanged(
    queueName: string,
    payload: Uint8Array,
    opts: EnqueueOptions,
    effects: SettlementEffects,
    unchanged: readonly KvExpectation[],
  ): Promise<{ outcome: EnqueueOutcome; enqueued: EnqueueOutcome[] } | "raced"> {
    return eq.enqueueWithEffects(this.#core, queueName, payload, opts, effects, undefined, unchanged);
  }

  /** @internal The job waiting in the open debounce window `key` of `queueName` (an enqueue with the key now would supersede it), or undefined. */
  debounceHolder(queueName: string, key: string): { jobId: string; headers: Readonly<Record<string, string>> } | undefined {
    const r = openWindowHolder(this.#core.engine, queueName, key, this.#core.clock.now());
    return r === undefined ? undefined : { jobId: r.id, headers: { ...r.headers } };
  }

  // ---- claim and settle -----------------------------------------------

  /** Claims the next job of `queueName` (priority, then FIFO), or null. */
  async claim(queueName: string, leaseMs?: number): Promise<ClaimedJob | null> {
    const jobs = await cs.claimBatch(this.#core, queueName, 1, leaseMs);
    // By the length: an empty list's [0] is whatever a prototype holds there.
    return jobs.length === 0 ? null : jobs[0]!;
  }

  /**
   * Claims up to `max` jobs in one non-durable commit, sharing one lease
   * start. `leaseMs` defaults to the queue's `leaseMs`. A crash before the
   * next durable commit leaves them pending, which is safe.
   */
  claimBatch(queueName: string, max: number, leaseMs?: number): Promise<ClaimedJob[]> {
    return cs.claimBatch(this.#core, queueName, max, leaseMs);
  }

  /** Acknowledges success: the job is deleted (or kept as done with retention); effects apply. `ClaimLostError` if the claim ended. */
  ack(job: ClaimedJob, effects?: SettlementEffects): Promise<EnqueueOutcome[]> {
    const refused = effectsRefusal(effects);
    if (refused !== undefined) return Promise.reject(refused);
    return cs.ack(this.#core, job, effects);
  }

  /**
   * An ack whose enqueue at `claimNext.index` is written already claimed
   * by the caller in the ack's own commit, when the queue allows it (the
   * job is due now, its queue has no concurrency or rate limit, and
   * `claimNext.reserve(waiting)` answers `true`, with room for the jobs
   * pending there that a claim takes first, or none is): one commit where
   * an ack then a claim take two. `next` is the claimed job, handed out
   * once the commit is durable; settle it like any claim, or give it back
   * with `releaseClaim`. Its lease expires as any claim's does, and a
   * crash leaves it to recovery, which requeues it. A `claimNext` that is
   * not a `ClaimNext`, or a `reserve` that answers anything but `true` or
   * `false`, is refused with `ValidationError` and nothing is settled.
   */
  ackClaimingNext(job: ClaimedJob, effects: SettlementEffects, claimNext: ClaimNext): Promise<AckedClaimingNext> {
    const refused = effectsRefusal(effects);
    if (refused !== undefined) return Promise.reject(refused);
    return cs.ackClaimingNext(this.#core, job, effects, claimNext);
  }

  /**
   * @internal `ackClaimingNext` for a caller that awaits the commit in its
   * own async frame: a `SubmittedAck` when the settlement was built in this
   * turn, else the promise `ackClaimingNext` gives. Never throws.
   */
  ackClaimingNextInTurn(job: ClaimedJob, effects: SettlementEffects, claimNext: ClaimNext): cs.SubmittedAck | Promise<AckedClaimingNext> {
    return cs.ackClaimingNextInTurn(this.#core, job, effects, claimNext);
  }

  /**
   * Gives back a claim that will not be worked (one `ackClaimingNext` handed
   * out, say): the job returns to
   * pending with its attempt uncounted, for any worker. Not durable, like a
   * claim. Nothing happens when the claim already ended. A record paged out
   * of memory is loaded first, so the job may return a few turns later.
   */
  releaseClaim(job: ClaimedJob): void {
    cs.releaseClaim(this.#core, job);
  }

  /**
   * Reports a failed attempt: retried after the backoff (or `retryAfterMs`,
   * when later), or dead at the attempt limit. `effects` apply only when it
   * goes dead.
   */
  nack(job: ClaimedJob, error: string, effects?: SettlementEffects, opts?: NackOptions): Promise<NackOutcome> {
    const refused = effectsRefusal(effects) ?? settleOptionsRefusal(opts, false);
    if (refused !== undefined) return Promise.reject(refused);
    return cs.nack(this.#core, job, error, effects, opts);
  }

  /** Dead-letters the job now, whatever its attempt count; effects apply. */
  deadLetter(job: ClaimedJob, error: string, effects?: SettlementEffects, opts?: DeadLetterOptions): Promise<EnqueueOutcome[]> {
    const refused = effectsRefusal(effects) ?? settleOptionsRefusal(opts, true);
    if (refused !== undefined) return Promise.reject(refused);
    return cs.deadLetter(this.#core, job, error, effects, opts);
  }

  // ---- cancel and wake -------------------------------------------------

  /** Removes a pending or scheduled job. `false` when it is claimed (see `cancelJob`), finished or unknown. */
  async cancel(jobId: string): Promise<boolean> {
    return (await cw.cancelJob(this.#core, jobId)) === "removed";
  }

  /**
   * Cancels a job. Pending or scheduled: removed, with `effects` applied in
   * the same commit (`"removed"`). Claimed: a cooperative request is
   * recorded on the job and delivered through its `cancelSignal`, also to
   * any later claim; effects are discarded (`"requested"`). Finished or
   * unknown: `"not_found"`.
   */
  cancelJob(jobId: string, effects?: SettlementEffects): Promise<CancelOutcome> {
    const refused = effectsRefusal(effects);
    if (refused !== undefined) return Promise.reject(refused);
    return cw.cancelJob(this.#core, jobId, effects);
  }

  /**
   * Moves a scheduled job of `queueName` to pending now, recording
   * `attached` (seen by every later delivery) and `wokenAt`. Exactly one of
   * a wake, the scheduler's promotion and a cancel wins. `true` when woken.
   * `effects` (caller KV ops only) commit with the wake, and only with it.
   */
  async wakeScheduled(queueName: string, jobId: string, attached?: Uint8Array, effects?: SettlementEffects): Promise<boolean> {
    validateQueueName(queueName);
    const refused = effectsRefusal(effects);
    if (refused !== undefined) throw refused;
    return (await cw.wake(this.#core, jobId, attached, queueName, effects)) === "woken";
  }

  /** `wakeScheduled` for a job of any queue, with the reason it did nothing. */
  wake(jobId: string, attached?: Uint8Array): Promise<WakeOutcome> {
    return cw.wake(this.#core, jobId, attached, undefined);
  }

  /**
   * Puts a dead job back to pending with fresh attempts; its history is
   * kept. `false` when it is not dead. `effects` (caller KV ops only)
   * commit with the requeue, and only with it.
   */
  requeueDead(jobId: string, effects?: SettlementEffects): Promise<boolean> {
    const refused = effectsRefusal(effects);
    if (refused !== undefined) return Promise.reject(refused);
    return cw.requeueDead(this.#core, jobId, effects);
  }

  // ---- maintenance by an operator ----------------------------------------

  /**
   * Counts the stats record of `queueName` (`n/<queue>`) again from the
   * queue's state indexes and writes it: the mend of a damaged record, which
   * every move of the queue refuses (`StoreCorruptedError` naming it), or of
   * counts that drifted. Pending, scheduled, claimed and dead are counted
   * from their entries; done keeps the record's count where it reads, at
   * least the done jobs retention still keeps (see stats-recount.ts). The
   * entries are counted from a snapshot in slices, every queue's moves going
   * on between them, and the moves since are added in the short turn that
   * commits (stats-recount-turns.ts): the record written is the count at
   * that turn. Recounts of one queue run one after another; a close during
   * one ends it with `ClosedError`, nothing written.
   * `dryRun` writes nothing; `plan` (a dry run's token) has the recount
   * refused with `StatsPlanChangedError`, nothing written, when the record
   * or the counts changed since. A record that already holds the recount is
   * not written. Reads every scheduled entry of the store (their order is by
   * due time across queues) and every entry of the queue's other states.
   * `mark` (internal): effects to commit with the record, given the answer.
   */
  async recountStats(queueName: string, opts?: RecountStatsOptions, mark?: (answer: StatsRecount) => SettlementEffects): Promise<StatsRecount> {
    validateQueueName(queueName);
    const o = checkRecountOptions(opts);
    return this.recounts.run(queueName, o, mark);
  }

  // ---- caller KV -------------------------------------------------------

  /** The committed value of caller key `key`, or null: bytes of the caller's own. */
  async kvGet(key: string): Promise<Uint8Array | null> {
    // A copy: the engine's own bytes, changed by the caller, would change later reads and what a checkpoint stores.
    const v = this.kvGetNow(key);
    return v === null ? null : copyBytes(v);
  }

  /**
   * @internal `kvGet` answered in the caller's turn, for a caller that reads
   * on every step (the workflow runtime's own records): the engine reads
   * synchronously, so there is no promise to make and await. The bytes may
   * be the engine's own: decode them, never hand them to user code.
   */
  kvGetNow(key: string | KvKeyRef): Uint8Array | null {
    const engine = this.#core.engine;
    // A reference's key carries its head: the memtable finds its tree without a search (engine/key-family.ts).
    return (key instanceof KvKeyRef ? engine.getHeaded(KvKeyRef.headedKeyOf(key)) : engine.get(KvKeyRef.engineKeyOf(key))) ?? null;
  }

  /**
   * @internal `kvGet` without the copy, for a caller that decodes the value
   * at once and keeps only what it decoded (the workflow runtime's reads of
   * a run's outcome and waits): answered in the caller's turn, no promise,
   * no array of its own. See `BorrowedBytes`.
   */
  kvBorrowNow(key: string | KvKeyRef): BorrowedBytes | null {
    const v = this.kvGetNow(key);
    return v === null ? null : lend(v);
  }

  /**
   * @internal Caller key `key` checked once, for a caller that passes it to
   * `kvGetNow`, `kvTokenNow` and `stageOwnedPut` (effects.ts) on every
   * step. Throws `ValidationError` for a key that is not valid.
   */
  kvKeyRef(key: string): KvKeyRef {
    return KvKeyRef.of(key);
  }

  /**
   * @internal A token for the committed value of caller key `key`, read in
   * the caller's turn; undefined when there is none or it is not held in
   * memory. Equal tokens (`===`) mean equal bytes (see `Engine.valueToken`):
   * a caller that decoded the value `kvGetNow` gave with a token taken in the
   * same turn knows it unchanged while the token stays equal, without reading
   * and comparing it again.
   */
  kvTokenNow(key: string | KvKeyRef): KvToken | undefined {
    const engine = this.#core.engine;
    return key instanceof KvKeyRef ? engine.valueTokenHeaded(KvKeyRef.headedKeyOf(key)) : engine.valueToken(KvKeyRef.engineKeyOf(key));
  }

  /**
   * @internal The token `kvTokenNow(key)` gives while caller key `key`
   * holds the bytes `value` a commit of this queue put there, without
   * reading the key (see `Engine.committedToken`); undefined when that is
   * not known without a read. The caller must have staged `value` itself
   * (`stageOwnedPut`) and must not change it.
   */
  kvTokenOfPut(key: string | KvKeyRef, value: Uint8Array): KvToken | undefined {
    return this.#core.engine.committedToken(KvKeyRef.engineKeyOf(key), value);
  }

  /**
   * @internal True when this queue's commits keep none of the value arrays
   * staged into them (`Engine.copiesValues`): the workflow may then stage
   * its own records as views of memory they share (`CommitOnlyBytes`).
   */
  get copiesCommittedValues(): boolean {
    return this.#core.engine.copiesValues;
  }

  /** Writes `value` (at most `MAX_KV_VALUE_SIZE` bytes) durably. */
  kvPut(key: string, value: Uint8Array): Promise<void> {
    return kv.kvPut(this.#core, key, value);
  }

  /** Deletes `key` durably (absent: no error). */
  kvDelete(key: string): Promise<void> {
    return kv.kvDelete(this.#core, key);
  }

  /** Writes `value` only if the current value equals `expected` (`null`: absent). `true` when written. */
  kvCompareAndPut(key: string, expected: Uint8Array | null, value: Uint8Array): Promise<boolean> {
    return kv.kvCompareAndPut(this.#core, key, expected, value);
  }

  /** Deletes `key` only if its value equals `expected`. `true` when deleted. */
  kvCompareAndDelete(key: string, expected: Uint8Array): Promise<boolean> {
    return kv.kvCompareAndDelete(this.#core, key, expected);
  }

  /**
   * Applies the caller KV ops of `effects` in one durable commit when every
   * `expected` key holds its value (`null`: absent); `true` when applied.
   */
  kvCompareAndApply(expected: readonly KvExpectation[], effects: SettlementEffects): Promise<boolean> {
    return kv.kvCompareAndApply(this.#core, expected, effects);
  }

  /** One page of caller KV entries under `prefix`, in key byte order. */
  async kvScan(prefix: string, opts: KvScanOptions = {}): Promise<KvPage> {
    return kvScanSync(this.#core.engine, prefix, opts);
  }

  /**
   * @internal Declares prefixes of caller KV keys that the caller reads and
   * writes heavily (the workflow runtime's run records, step pointers and
   * history): the engine's memtable gives the keys under each a tree of
   * their own from now on (`EngineOptions.keyHeads`, caller-key-heads.ts).
   * Declaring a prefix again, from this caller or another over this queue,
   * changes nothing. Memory only: nothing stored changes. Throws
   * `ValidationError` (and declares none) for a bad list or when the
   * engine's heads would pass 32, `ClosedError` once the queue is closed.
   */
  declareKeyHeads(prefixes: readonly string[]): void {
    const core = this.#core;
    core.checkOpen();
    core.engine.declareKeyHeads(engineKeyHeads(prefixes));
  }

  /** @internal The caller KV prefixes with key heads of their own (`declareKeyHeads`, or `engineOptions.keyHeads` under the caller's keys), ascending. */
  get keyHeads(): readonly string[] {
    return callerKeyHeads(this.#core.engine.keyHeads);
  }

  /**
   * Defines flow rules of queue `queueName` (or replaces rules of the same
   * name): a job whose headers name a rule is claimed only within its
   * limits (see `FlowRule`), beside the queue's own `concurrency` and
   * `rateLimit`. Rules live in this process, as claims do; a workflow
   * runtime defines the rules of its registered typed jobs and workflows.
   * Throws `ValidationError` (and defines none) when a rule is malformed.
   * See docs/flow-control.md.
   */
  defineFlowRules(queueName: string, rules: Readonly<Record<string, FlowRule>>): void {
    validateQueueName(queueName);
    this.#core.defineFlowRules(queueName, rules);
  }

  /** @internal The concurrency limit of flow rule `rule` of `queueName` in this process, if it has one. */
  flowConcurrencyLimit(queueName: string, rule: string): number | undefined {
    return this.#core.flowConcurrencyLimit(queueName, rule);
  }

  // ---- views and notifications ------------------------------------------

  /** Reads over the live state. */
  view(): QueueView {
    return this.#view;
  }

  /**
   * Resolves when the job finishes (done, dead or cancelled), at once when
   * it already has. `gone`: no record exists (it finished without
   * retention before the call, or never existed). Rejects with the
   * signal's reason when `signal` aborts. In-process only. `timeoutMs`
   * (0 to 10 years) ends the wait with `timed_out`; anything else is a
   * `ValidationError`.
   */
  waitForCompletion(jobId: string, opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<CompletionResult> {
    return waitForCompletion(this.#core, jobId, opts);
  }

  /**
   * Calls `listener` for every job the reaper or recovery dead-letters (not
   * for settlements, whose callers know). Returns the unsubscribe function.
   * Recovery at open runs before this can be called: pass
   * `OpenOptions.onDeadLettered` or read `recovery.deadLettered`.
   */
  onDeadLettered(listener: (e: DeadLetteredEvent) => void): () => void {
    this.#core.deadListeners.add(listener);
    return () => this.#core.deadListeners.delete(listener);
  }

  /**
   * Runs the reaper, the scheduler and the retention sweeps now (they also
   * run on their own timers). Their work on records in memory is done when
   * this returns; the promise resolves once the work on job records that
   * first had to be read back from the store is done too.
   */
  async runMaintenance(): Promise<void> {
    // Async: on a closed queue the promise rejects, as every other call's does, instead of throwing at the call.
    this.#core.checkOpen();
    return await this.#core.loop.runDueNow();
  }

  /** @internal The work epoch of `queueName`, read before a claim that may find nothing. */
  workEpoch(queueName: string): number {
    return this.#core.work.epoch(queueName);
  }

  /** @internal Resolves when work may have become claimable on `queueName` since `epoch`, or on abort or close. */
  waitForWork(queueName: string, epoch: number, signal?: AbortSignal): Promise<void> {
    if (this.#core.closed) return Promise.resolve();
    return this.#core.work.wait(queueName, epoch, signal);
  }

  /** Names of every offloaded payload object (for tests and orphan checks). */
  listPayloadObjects(): Promise<string[]> {
    return this.#core.payloads.list();
  }

  /** Resolves when every commit made so far (claims and background work included) is durable. */
  flush(): Promise<void> {
    // The engine's own promise (it rejects rather than throws), not an async frame that only awaits it.
    return this.#core.engine.flush();
  }

  /** @internal The queue's `logger` option, every level filled in: where the loops built on the queue log too. */
  get log(): FullLogger {
    return this.#core.log;
  }

  /** The engine's counters (WAL puts and bytes, checkpoints), for benchmarks and operators. */
  get engineStats(): EngineStats {
    return this.#core.engine.stats;
  }

  get closed(): boolean {
    // True from the call of `close()`, also while it waits for claims to end (a worker's loop stops on it).
    return this.#core.isClosed || this.#core.closing;
  }

  /**
   * @internal Aborted when the queue closes or its engine is fenced or
   * poisoned; `reason` is a `ClosedError` whose `cause` says why (absent
   * after `close()`). Waiters above the queue settle with it.
   */
  get closedSignal(): AbortSignal {
    return this.#core.closedSignal;
  }

  /**
   * Why the queue stopped on its own: a `FencedError` (another process
   * opened the same store as writer; do not reopen this one while that
   * process runs) or a `ClosedError` whose cause is the store write that
   * failed. Undefined while open and after a plain `close()`. Every call
   * after the stop rejects with an error carrying this reason.
   */
  get closedReason(): Error | undefined {
    return this.#core.closedReason;
  }

  /**
   * Calls `listener` once when the queue closes (see `OpenOptions.onClosed`);
   * at once when it already has. Returns the unsubscribe function.
   */
  onClosed(listener: (reason: Error | undefined) => void): () => void {
    const core = this.#core;
    if (core.isClosed) {
      queueMicrotask(() => listener(core.closedReason));
      return () => {};
    }
    core.closedListeners.add(listener);
    return () => core.closedListeners.delete(listener);
  }

  /**
   * Stops the background work and closes the engine after everything
   * committed so far is durable. Does not wait for in-flight workers; their
   * later settlements fail with `ClosedError` and the jobs are recovered at
   * the next open. A claim still waiting to hand its jobs out gives them
   * back and rejects with `ClosedError`; a call made while a close runs
   * resolves when that close ends.
   */
  close(): Promise<void> {
    // A call made while a close runs waits for that one: resolved early, its caller could reopen the
    // store or remove its directory while this close still flushes and closes the engine.
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    const core = this.#core;
    // Claims waiting to hand out their jobs, and claims given back while their records load, end first: left
    // claimed, the next open would count their attempts. No claim starts meanwhile.
    core.closing = true;
    while (core.claimsWaiting.size > 0 || core.releasesLoading.size > 0) await Promise.allSettled([...core.claimsWaiting, ...core.releasesLoading]);
    core.closed = true;
    core.markClosed();
    await core.loop.stop();
    core.work.wakeAll();
    core.leases.clear();
    try {
      // A fenced or poisoned queue has nothing to flush; its reason was told already.
      if (core.engine.failure === undefined) await core.engine.flush();
    } finally {
      await core.engine.close();
      core.announceClosed(core.closedReason);
    }
  }
}
