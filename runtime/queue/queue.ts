/**
 * @module `Queue`: the durable task queue over one engine.
 *
 * Every operation is a transaction built from synchronous engine reads and
 * committed within the same turn of the event loop, so transactions never
 * interleave and need no locks or conflict retries. Enqueues, settlements,
 * cancels, wakes and KV writes wait for durability; claims and background
 * work do not (each is safe to lose in a crash: it is redone).
 */
import { monotonicFactory } from "ulid";
import { SystemClock, type Clock } from "../clock.js";
import { Engine, type EngineStats } from "../engine/engine.js";
import { ClosedError, ValidationError } from "../errors.js";
import type { ObjectStore } from "../store/object-store.js";
import { makeClaimedJob, ticketOf } from "./claimed-job.js";
import { QueueConfigs, type DeadLetteredEvent, type OpenOptions } from "./config.js";
import type { SettlementEffects } from "./effects.js";
import { ClaimLostError } from "./errors.js";
import * as K from "./keys.js";
import { LeaseRegistry } from "./lease-registry.js";
import { MaintenanceLoop, recoverClaims, type MaintenanceHost } from "./maintenance.js";
import { validateJobId, validateKvKey, validateKvValue, validatePositiveInt, validateQueueName, validateStoreName } from "./names.js";
import { CompletionNotifier, WorkNotifier, type Finish } from "./notifier.js";
import { PayloadStore } from "./payloads.js";
import { PrefixedStore } from "./prefixed-store.js";
import type { JobRecord } from "./record.js";
import {
  appendHistory,
  claimJob,
  completeJob,
  deleteJob,
  failJob,
  insertJob,
  killJob,
  readJob,
  writeJob,
  type PreparedEnqueue,
  type TransitionContext,
} from "./transitions.js";
import { Txn } from "./txn.js";
import type { CancelOutcome, ClaimedJob, CompletionResult, EnqueueItem, EnqueueOptions, EnqueueOutcome, NackOutcome, WakeOutcome } from "./types.js";
import { validateEnqueueOptions } from "./validate-enqueue.js";
import { kvScanSync, StoreView, toJobInfo, type KvPage, type KvScanOptions, type QueueView } from "./view.js";

/** What open-time recovery did with the claims the previous process held. */
export interface RecoveryReport {
  requeued: string[];
  deadLettered: string[];
}

/** Where a queue keeps its engine inside the store view `<name>/`. */
export const ENGINE_PREFIX = "db/";

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
  readonly clock: Clock;
  /** What recovery did at open. */
  readonly recovery: RecoveryReport;

  readonly #engine: Engine;
  readonly #payloads: PayloadStore;
  readonly #configs: QueueConfigs;
  readonly #leases = new LeaseRegistry();
  readonly #work = new WorkNotifier();
  readonly #completions = new CompletionNotifier();
  readonly #deadListeners = new Set<(e: DeadLetteredEvent) => void>();
  readonly #ulid = monotonicFactory();
  readonly #loop: MaintenanceLoop;
  readonly #host: MaintenanceHost;
  readonly #view: StoreView;
  #closed = false;

  private constructor(readonly name: string, engine: Engine, payloads: PayloadStore, opts: OpenOptions) {
    this.clock = opts.clock ?? SystemClock;
    this.#engine = engine;
    this.#payloads = payloads;
    this.#configs = new QueueConfigs(opts.defaultQueueConfig, opts.queueConfigs);
    if (opts.onDeadLettered) this.#deadListeners.add(opts.onDeadLettered);
    this.#view = new StoreView(engine);
    this.#host = {
      engine,
      clock: this.clock,
      leases: this.#leases,
      context: () => this.#ctx(),
      commitBackground: (txn) => this.#commit(txn, false),
      notifyWork: (q) => this.#work.notify(q),
      finished: (id, f) => this.#completions.finished(id, f),
      deadLettered: (e) => {
        for (const l of this.#deadListeners) l(e);
      },
      deletePayloads: (refs) => this.#payloads.deleteAll(refs),
      onError: (err) => console.warn(`taquba queue "${name}": background work failed, retrying in 1 s: ${err instanceof Error ? err.message : String(err)}`),
    };
    this.#loop = new MaintenanceLoop(this.#host);
    this.recovery = { requeued: [], deadLettered: [] };
  }

  /**
   * Opens (or creates) the queue store `name` inside `store`: its engine
   * lives under `<name>/db/` and offloaded payloads under `<name>/payloads/`.
   * Claims a previous process held are requeued (or dead-lettered at their
   * attempt limit) before this resolves.
   */
  static async open(store: ObjectStore, name: string, opts: OpenOptions = {}): Promise<Queue> {
    validateStoreName(name);
    const configs = new QueueConfigs(opts.defaultQueueConfig, opts.queueConfigs); // validates before any IO
    void configs;
    const threshold = opts.payloadOffloadBytes === undefined ? 256 * 1024 : opts.payloadOffloadBytes;
    if (threshold !== null) validatePositiveInt("OpenOptions.payloadOffloadBytes", threshold);
    const root = new PrefixedStore(store, `${name}/`);
    const engine = await Engine.open(new PrefixedStore(root, ENGINE_PREFIX), opts.flushIntervalMs === undefined ? {} : { flushIntervalMs: opts.flushIntervalMs });
    const q = new Queue(name, engine, new PayloadStore(root, threshold), opts);
    const report = recoverClaims(q.#host);
    q.recovery.requeued.push(...report.requeued);
    q.recovery.deadLettered.push(...report.deadLettered);
    q.#loop.start();
    return q;
  }

  // ---- internals -------------------------------------------------------

  #ctx(): TransitionContext {
    const now = this.clock.now();
    return { now, config: (q) => this.#configs.get(q), newId: () => this.#ulid(now) };
  }

  #checkOpen(): void {
    if (this.#closed || this.#engine.closed) throw new ClosedError(`queue "${this.name}"`);
  }

  #commit(txn: Txn, durable: boolean): Promise<void> {
    const p = this.#engine.commit(txn.finish(), { durable });
    if (!durable) p.catch(() => undefined); // surfaced by the next durable commit
    return p;
  }

  /** Writes oversized payloads to their own objects, before any record refers to them. */
  async #prepare(items: readonly EnqueueItem[]): Promise<PreparedEnqueue[]> {
    const out: PreparedEnqueue[] = items.map((i) => ({ queueName: i.queueName, payload: i.payload, opts: i.opts ?? {} }));
    const big = out.filter((p) => this.#payloads.shouldOffload(p.payload));
    if (big.length === 0) return out;
    const now = this.clock.now();
    for (const p of big) p.payloadRef = this.#ulid(now);
    const results = await Promise.allSettled(big.map((p) => this.#payloads.write(p.payloadRef!, p.payload)));
    const failed = results.find((r) => r.status === "rejected");
    if (failed) {
      await this.#payloads.deleteAll(big.map((p) => p.payloadRef!));
      throw (failed as PromiseRejectedResult).reason;
    }
    return out;
  }

  /** Refs of prepared enqueues that did not become new jobs (dedup hits or a failed txn). */
  #unused(prepared: readonly PreparedEnqueue[], outcomes: readonly EnqueueOutcome[] | undefined): string[] {
    return prepared.filter((p, i) => p.payloadRef !== undefined && outcomes?.[i]?.newlyEnqueued !== true).map((p) => p.payloadRef!);
  }

  /** Applies caller KV ops and effect enqueues inside `txn`. */
  #applyEffects(txn: Txn, ctx: TransitionContext, effects: SettlementEffects | undefined, prepared: readonly PreparedEnqueue[]): EnqueueOutcome[] {
    if (effects !== undefined) {
      for (const op of effects.kvOps) {
        if (op.kind === "put") txn.put(K.userKey(op.key), op.value);
        else txn.delete(K.userKey(op.key));
      }
    }
    return prepared.map((p) => insertJob(txn, ctx, p));
  }

  /** After a durable commit that inserted jobs: wake workers and the scheduler. */
  #announceInserted(prepared: readonly PreparedEnqueue[], outcomes: readonly EnqueueOutcome[], now: number): void {
    prepared.forEach((p, i) => {
      if (!outcomes[i]?.newlyEnqueued) return;
      if (p.opts.runAt !== undefined && p.opts.runAt > now) this.#loop.rearm(p.opts.runAt);
      else this.#work.notify(p.queueName);
    });
  }

  /**
   * The shared enqueue path: offload, one transaction, durable commit.
   * Bad input throws before anything is written.
   */
  async #enqueue(items: readonly EnqueueItem[], effects: SettlementEffects | undefined): Promise<EnqueueOutcome[]> {
    this.#checkOpen();
    for (const i of items) {
      validateQueueName(i.queueName);
      validateEnqueueOptions(i.opts ?? {}, i.payload);
    }
    const prepared = await this.#prepare(items);
    let outcomes: EnqueueOutcome[] | undefined;
    let commit: Promise<void>;
    let now: number;
    try {
      this.#checkOpen();
      const txn = new Txn(this.#engine);
      const ctx = this.#ctx();
      now = ctx.now;
      outcomes = prepared.map((p) => insertJob(txn, ctx, p));
      // A dedup hit of a single enqueue-with-effects writes nothing at all.
      const skipEffects = items.length === 1 && outcomes[0]?.newlyEnqueued === false;
      if (effects !== undefined && !skipEffects) this.#applyEffects(txn, ctx, effects, []);
      commit = this.#commit(txn, true);
    } finally {
      const unused = this.#unused(prepared, outcomes);
      if (unused.length > 0) void this.#payloads.deleteAll(unused);
    }
    await commit;
    this.#announceInserted(prepared, outcomes, now);
    return outcomes;
  }

  // ---- enqueue ---------------------------------------------------------

  /** A fresh job id, ordered after every id this queue generated, for `EnqueueOptions.jobId`. */
  nextJobId(): string {
    return this.#ulid(this.clock.now());
  }

  /** Enqueues one job; resolves once durable. */
  async enqueue(queueName: string, payload: Uint8Array, opts: EnqueueOptions = {}): Promise<EnqueueOutcome> {
    return (await this.#enqueue([{ queueName, payload, opts }], undefined))[0]!;
  }

  /** Enqueues every item in one atomic commit; outcomes align with `items`. */
  async enqueueBatch(items: readonly EnqueueItem[]): Promise<EnqueueOutcome[]> {
    if (!Array.isArray(items)) throw new ValidationError("enqueueBatch takes an array of { queueName, payload, opts? }");
    if (items.length === 0) return [];
    return this.#enqueue(items, undefined);
  }

  /**
   * Enqueues one job and applies `effects` in the same commit. On a dedup
   * hit nothing is written, effects included.
   */
  async enqueueWithEffects(queueName: string, payload: Uint8Array, opts: EnqueueOptions, effects: SettlementEffects): Promise<{ outcome: EnqueueOutcome; enqueued: EnqueueOutcome[] }> {
    this.#checkOpen();
    validateQueueName(queueName);
    validateEnqueueOptions(opts ?? {}, payload);
    const prepared = await this.#prepare([{ queueName, payload, opts }, ...effects.enqueues]);
    let outcomes: EnqueueOutcome[] | undefined;
    let commit: Promise<void> | undefined;
    const ctx = this.#ctx();
    try {
      this.#checkOpen();
      const txn = new Txn(this.#engine);
      const first = insertJob(txn, ctx, prepared[0]!);
      if (first.newlyEnqueued) {
        outcomes = [first, ...this.#applyEffects(txn, ctx, effects, prepared.slice(1))];
        commit = this.#commit(txn, true);
      } else outcomes = [first];
    } finally {
      const unused = this.#unused(prepared, outcomes);
      if (unused.length > 0) void this.#payloads.deleteAll(unused);
    }
    if (commit !== undefined) {
      await commit;
      this.#announceInserted(prepared, outcomes, ctx.now);
    }
    return { outcome: outcomes[0]!, enqueued: outcomes.slice(1) };
  }

  // ---- claim -----------------------------------------------------------

  /** Claims the next job of `queueName` (priority, then FIFO), or null. */
  async claim(queueName: string, leaseMs?: number): Promise<ClaimedJob | null> {
    return (await this.claimBatch(queueName, 1, leaseMs))[0] ?? null;
  }

  /**
   * Claims up to `max` jobs in one (non-durable) commit, sharing one lease
   * start. `leaseMs` defaults to the queue's `leaseMs`. A crash before the
   * next durable commit leaves them pending, which is safe.
   */
  async claimBatch(queueName: string, max: number, leaseMs?: number): Promise<ClaimedJob[]> {
    this.#checkOpen();
    validateQueueName(queueName);
    validatePositiveInt("claimBatch max", max);
    const lease = leaseMs ?? this.#configs.get(queueName).leaseMs;
    validatePositiveInt("leaseMs", lease);
    const now = this.clock.now();
    const txn = new Txn(this.#engine);
    const claimed: [JobRecord, ReturnType<LeaseRegistry["add"]>][] = [];
    for (const [, idBytes] of this.#engine.scan({ prefix: K.pendingPrefix(queueName), limit: max })) {
      const r = readJob(txn, new TextDecoder().decode(idBytes));
      if (r === undefined || r.state !== "pending") continue;
      const next = claimJob(txn, r, now);
      claimed.push([next, this.#leases.add(next.id, queueName, now + lease, next.cancelRequested === true)]);
    }
    if (claimed.length === 0) return [];
    this.#commit(txn, false);
    this.#loop.rearm(now + lease);
    let payloads: Uint8Array[];
    try {
      payloads = await Promise.all(claimed.map(([r]) => (r.payloadRef === undefined ? r.payload : this.#payloads.read(r.id, r.payloadRef))));
    } catch (err) {
      this.#release(claimed.map(([r, e]) => [r.id, e.token]));
      throw err;
    }
    return claimed.map(([r, e], i) => makeClaimedJob(this, this.#leases, this.clock, r, e, payloads[i]!));
  }

  /**
   * Puts claims this process could not hand out (a payload read failed)
   * back to pending, undoing their attempt. Non-durable like the claim.
   */
  #release(claims: [string, number][]): void {
    if (this.closed) return;
    const txn = new Txn(this.#engine);
    const queues = new Set<string>();
    for (const [id, token] of claims) {
      if (!this.#leases.holds(id, token)) continue;
      this.#leases.remove(id);
      const r = readJob(txn, id);
      if (r === undefined || r.state !== "claimed") continue;
      writeJob(txn, { ...r, state: "pending", attempts: r.attempts - 1, claimedAt: undefined }, r);
      queues.add(r.queue);
    }
    this.#commit(txn, false);
    for (const q of queues) this.#work.notify(q);
  }

  // ---- settle ----------------------------------------------------------

  /**
   * The shared settlement: checks the claim is still held, applies the
   * transition and (when `applyEffects` says so) the effects in one durable
   * commit. Throws `ClaimLostError` and applies nothing otherwise.
   */
  async #settle(
    job: ClaimedJob,
    effects: SettlementEffects | undefined,
    transition: (txn: Txn, ctx: TransitionContext, r: JobRecord) => { record: JobRecord | undefined; applyEffects: boolean; finish?: Finish },
  ): Promise<{ record: JobRecord | undefined; enqueued: EnqueueOutcome[] }> {
    this.#checkOpen();
    const ticket = ticketOf(job);
    if (ticket === undefined || ticket.owner !== this) throw new ValidationError("settle only ClaimedJobs returned by this queue's claim");
    const prepared = effects === undefined ? [] : await this.#prepare(effects.enqueues);
    let outcomes: EnqueueOutcome[] | undefined;
    let result: ReturnType<typeof transition>;
    let commit: Promise<void>;
    let removedRef: string | undefined;
    const ctx = this.#ctx();
    try {
      this.#checkOpen();
      const txn = new Txn(this.#engine);
      const r = this.#leases.holds(job.id, ticket.token) ? readJob(txn, job.id) : undefined;
      if (r === undefined || r.state !== "claimed") throw new ClaimLostError(job.id);
      result = transition(txn, ctx, r);
      outcomes = result.applyEffects ? this.#applyEffects(txn, ctx, effects, prepared) : [];
      if (result.record === undefined && r.payloadRef !== undefined) removedRef = r.payloadRef;
      commit = this.#commit(txn, true);
      this.#leases.remove(job.id);
    } finally {
      const unused = this.#unused(prepared, outcomes);
      if (unused.length > 0) void this.#payloads.deleteAll(unused);
    }
    await commit;
    if (removedRef !== undefined) await this.#payloads.deleteAll([removedRef]);
    if (result.record?.state === "scheduled") this.#loop.rearm(result.record.runAt!);
    if (result.record?.state === "pending") this.#work.notify(result.record.queue);
    if (result.record?.retainUntil !== undefined) this.#loop.rearm(result.record.retainUntil);
    if (result.finish) this.#completions.finished(job.id, result.finish);
    if (result.applyEffects) this.#announceInserted(prepared, outcomes, ctx.now);
    return { record: result.record, enqueued: outcomes };
  }

  /** Acknowledges success: the job is deleted (or kept as done with retention); effects apply. */
  async ack(job: ClaimedJob, effects?: SettlementEffects): Promise<EnqueueOutcome[]> {
    const res = await this.#settle(job, effects, (txn, ctx, r) => {
      // Without done retention the history goes with the record, so skip writing it.
      if (ctx.config(r.queue).doneRetentionMs !== undefined) {
        appendHistory(txn, r.id, { attempt: r.attempts, claimedAt: r.claimedAt, recordedAt: ctx.now, outcome: "completed" });
      }
      const kept = completeJob(txn, ctx, r);
      return { record: kept, applyEffects: true, finish: { kind: "done" } };
    });
    return res.enqueued;
  }

  /**
   * Reports a failed attempt: retried after the backoff, or dead at the
   * attempt limit. `effects` apply only when the job goes dead.
   */
  async nack(job: ClaimedJob, error: string, effects?: SettlementEffects): Promise<NackOutcome> {
    const res = await this.#settle(job, effects, (txn, ctx, r) => {
      const { record, dead } = failJob(txn, ctx, r, String(error));
      appendHistory(txn, r.id, { attempt: r.attempts, claimedAt: r.claimedAt, recordedAt: ctx.now, outcome: dead ? "dead_lettered" : "retried", error: String(error) });
      return dead ? { record, applyEffects: true, finish: { kind: "dead" } } : { record, applyEffects: false };
    });
    if (res.record?.state === "dead") return { kind: "dead", enqueued: res.enqueued };
    return { kind: "retried", runAt: res.record?.runAt ?? this.clock.now() };
  }

  /** Dead-letters the job now, whatever its attempt count; effects apply. */
  async deadLetter(job: ClaimedJob, error: string, effects?: SettlementEffects): Promise<EnqueueOutcome[]> {
    const res = await this.#settle(job, effects, (txn, ctx, r) => {
      appendHistory(txn, r.id, { attempt: r.attempts, claimedAt: r.claimedAt, recordedAt: ctx.now, outcome: "dead_lettered", error: String(error) });
      return { record: killJob(txn, ctx, r, String(error)), applyEffects: true, finish: { kind: "dead" } };
    });
    return res.enqueued;
  }

  // ---- cancel and wake -------------------------------------------------

  /** Removes a pending or scheduled job. `false` when it is claimed (see `cancelJob`), finished or unknown. */
  async cancel(jobId: string): Promise<boolean> {
    return (await this.cancelJob(jobId)) === "removed";
  }

  /**
   * Cancels a job. Pending or scheduled: removed, with `effects` applied in
   * the same commit (`"removed"`). Claimed: a cooperative request is
   * recorded on the job and delivered through its `cancelSignal`, also to
   * any later claim; effects are discarded (`"requested"`). Finished or
   * unknown: `"not_found"`.
   */
  async cancelJob(jobId: string, effects?: SettlementEffects): Promise<CancelOutcome> {
    this.#checkOpen();
    validateJobId(jobId);
    const prepared = effects === undefined ? [] : await this.#prepare(effects.enqueues);
    let outcomes: EnqueueOutcome[] | undefined;
    let outcome: CancelOutcome;
    let commit: Promise<void> | undefined;
    let removed: JobRecord | undefined;
    const ctx = this.#ctx();
    try {
      this.#checkOpen();
      const txn = new Txn(this.#engine);
      const r = readJob(txn, jobId);
      if (r === undefined || r.state === "done" || r.state === "dead") outcome = "not_found";
      else if (r.state === "claimed") {
        outcome = "requested";
        if (r.cancelRequested !== true) {
          writeJob(txn, { ...r, cancelRequested: true }, r);
          commit = this.#commit(txn, true);
        }
      } else {
        outcome = "removed";
        removed = r;
        deleteJob(txn, r);
        outcomes = this.#applyEffects(txn, ctx, effects, prepared);
        commit = this.#commit(txn, true);
      }
    } finally {
      const unused = this.#unused(prepared, outcomes);
      if (unused.length > 0) void this.#payloads.deleteAll(unused);
    }
    await commit;
    if (outcome === "requested") {
      const e = this.#leases.get(jobId);
      if (e !== undefined && !e.cancel.signal.aborted) e.cancel.abort(new Error(`cancellation of job ${jobId} was requested`));
    }
    if (removed !== undefined) {
      if (removed.payloadRef !== undefined) await this.#payloads.deleteAll([removed.payloadRef]);
      this.#completions.finished(jobId, { kind: "cancelled" });
      this.#announceInserted(prepared, outcomes ?? [], ctx.now);
    }
    return outcome;
  }

  /**
   * Moves a scheduled job of `queueName` to pending now, recording
   * `attached` (seen by every later delivery) and `wokenAt`. Exactly one of
   * a wake, the scheduler's promotion and a cancel wins. `true` when woken.
   */
  async wakeScheduled(queueName: string, jobId: string, attached?: Uint8Array): Promise<boolean> {
    validateQueueName(queueName);
    return (await this.wake(jobId, attached, queueName)) === "woken";
  }

  /** `wakeScheduled` with the reason it did nothing. */
  async wake(jobId: string, attached?: Uint8Array, queueName?: string): Promise<WakeOutcome> {
    this.#checkOpen();
    validateJobId(jobId);
    if (attached !== undefined && !(attached instanceof Uint8Array)) throw new ValidationError("attached bytes must be a Uint8Array");
    const txn = new Txn(this.#engine);
    const r = readJob(txn, jobId);
    if (r === undefined || (queueName !== undefined && r.queue !== queueName)) return "not_found";
    if (r.state !== "scheduled") return "not_scheduled";
    const now = this.clock.now();
    writeJob(txn, { ...r, state: "pending", runAt: undefined, wokenAt: now, attached: attached ?? r.attached }, r);
    await this.#commit(txn, true);
    this.#work.notify(r.queue);
    return "woken";
  }

  /** Puts a dead job back to pending with fresh attempts; its history is kept. */
  async requeueDead(jobId: string): Promise<boolean> {
    this.#checkOpen();
    validateJobId(jobId);
    const txn = new Txn(this.#engine);
    const r = readJob(txn, jobId);
    if (r === undefined || r.state !== "dead") return false;
    const now = this.clock.now();
    appendHistory(txn, r.id, { attempt: r.attempts, recordedAt: now, outcome: "requeued" });
    const next: JobRecord = { ...r, state: "pending", attempts: 0, lastError: undefined, claimedAt: undefined, failedAt: undefined, cancelRequested: undefined, retainUntil: undefined };
    writeJob(txn, next, r);
    await this.#commit(txn, true);
    this.#work.notify(r.queue);
    return true;
  }

  // ---- caller KV -------------------------------------------------------

  async kvGet(key: string): Promise<Uint8Array | null> {
    validateKvKey(key);
    return this.#engine.get(K.userKey(key)) ?? null;
  }

  /** Writes `value` (at most `MAX_KV_VALUE_SIZE` bytes) durably. */
  async kvPut(key: string, value: Uint8Array): Promise<void> {
    this.#checkOpen();
    validateKvKey(key);
    validateKvValue(key, value);
    const txn = new Txn(this.#engine);
    txn.put(K.userKey(key), value);
    await this.#commit(txn, true);
  }

  async kvDelete(key: string): Promise<void> {
    this.#checkOpen();
    validateKvKey(key);
    const txn = new Txn(this.#engine);
    txn.delete(K.userKey(key));
    await this.#commit(txn, true);
  }

  /** Writes `value` only if the current value equals `expected` (`null`: absent). `true` when written. */
  async kvCompareAndPut(key: string, expected: Uint8Array | null, value: Uint8Array): Promise<boolean> {
    this.#checkOpen();
    validateKvKey(key);
    validateKvValue(key, value);
    const txn = new Txn(this.#engine);
    if (!sameValue(txn.get(K.userKey(key)), expected)) return false;
    txn.put(K.userKey(key), value);
    await this.#commit(txn, true);
    return true;
  }

  /** Deletes `key` only if its value equals `expected`. `true` when deleted. */
  async kvCompareAndDelete(key: string, expected: Uint8Array): Promise<boolean> {
    this.#checkOpen();
    validateKvKey(key);
    const txn = new Txn(this.#engine);
    const cur = txn.get(K.userKey(key));
    if (cur === undefined || !sameValue(cur, expected)) return false;
    txn.delete(K.userKey(key));
    await this.#commit(txn, true);
    return true;
  }

  /** One page of caller KV entries under `prefix`, in key byte order. */
  async kvScan(prefix: string, opts: KvScanOptions = {}): Promise<KvPage> {
    return kvScanSync(this.#engine, prefix, opts);
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
   * signal's reason when `signal` aborts.
   */
  async waitForCompletion(jobId: string, opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<CompletionResult> {
    validateJobId(jobId);
    const current = readJob(this.#engine, jobId);
    if (current === undefined) return { kind: "gone" };
    if (current.state === "done") return { kind: "done", job: toJobInfo(current) };
    if (current.state === "dead") return { kind: "dead", job: toJobInfo(current) };
    const stop = new AbortController();
    const onAbort = () => stop.abort(opts.signal?.reason);
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    let off: () => void = () => undefined;
    try {
      const finished = new Promise<Finish>((resolve) => {
        off = this.#completions.on(jobId, resolve);
      });
      const racers: Promise<Finish | "timeout">[] = [finished];
      if (opts.timeoutMs !== undefined) racers.push(this.clock.waitUntil(this.clock.now() + opts.timeoutMs, stop.signal).then(() => "timeout" as const));
      if (opts.signal !== undefined) {
        racers.push(
          new Promise((_, reject) => {
            if (opts.signal!.aborted) reject(opts.signal!.reason);
            stop.signal.addEventListener("abort", () => reject(opts.signal!.reason), { once: true });
          }),
        );
      }
      const f = await Promise.race(racers);
      if (f === "timeout") return { kind: "timed_out" };
      if (f.kind === "cancelled") return { kind: "cancelled" };
      const r = readJob(this.#engine, jobId);
      if (f.kind === "dead") return r ? { kind: "dead", job: toJobInfo(r) } : { kind: "gone" };
      return r?.state === "done" ? { kind: "done", job: toJobInfo(r) } : { kind: "done" };
    } finally {
      off();
      opts.signal?.removeEventListener("abort", onAbort);
      if (!stop.signal.aborted) stop.abort();
    }
  }

  /**
   * Calls `listener` for every job the reaper or recovery dead-letters (not
   * for settlements, whose callers know). Returns the unsubscribe function.
   * Recovery at open runs before this can be called: pass
   * `OpenOptions.onDeadLettered` or read `recovery.deadLettered`.
   */
  onDeadLettered(listener: (e: DeadLetteredEvent) => void): () => void {
    this.#deadListeners.add(listener);
    return () => this.#deadListeners.delete(listener);
  }

  /** Runs the reaper, the scheduler and the retention sweeps now (they also run on their own timers). */
  runMaintenance(): void {
    this.#checkOpen();
    this.#loop.runDue();
  }

  /** @internal The work epoch of `queueName`, read before a claim that may find nothing. */
  workEpoch(queueName: string): number {
    return this.#work.epoch(queueName);
  }

  /** @internal Resolves when work may have become claimable on `queueName` since `epoch`, or on abort or close. */
  waitForWork(queueName: string, epoch: number, signal?: AbortSignal): Promise<void> {
    if (this.#closed) return Promise.resolve();
    return this.#work.wait(queueName, epoch, signal);
  }

  /** Names of every offloaded payload object (for tests and orphan checks). */
  listPayloadObjects(): Promise<string[]> {
    return this.#payloads.list();
  }

  /** Resolves when every commit made so far (claims and background work included) is durable. */
  async flush(): Promise<void> {
    await this.#engine.flush();
  }

  /** The engine's counters (WAL puts and bytes, checkpoints), for benchmarks and operators. */
  get engineStats(): EngineStats {
    return this.#engine.stats;
  }

  get closed(): boolean {
    return this.#closed || this.#engine.closed;
  }

  /**
   * Stops the background work and closes the engine after everything
   * committed so far is durable. Does not wait for in-flight workers; their
   * later settlements fail with `ClosedError` and the jobs are recovered at
   * the next open.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#loop.stop();
    this.#work.wakeAll();
    this.#leases.clear();
    await this.#engine.flush();
    await this.#engine.close();
  }
}

function sameValue(a: Uint8Array | undefined, b: Uint8Array | null): boolean {
  if (a === undefined || b === null) return a === undefined && b === null;
  return a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;
}
