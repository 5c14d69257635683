/**
 * @module The state one open queue shares between its operation modules:
 * engine, payload store, configs, leases, notifiers and the background
 * loop, plus the helpers every transaction path uses. Internal: users see
 * only `Queue`.
 */
import { CountedWaits } from "./counted-waits.js";
import { incrementBase32 } from "ulid";
import { SystemClock, timedClock, type TimedClock } from "../clock.js";
import { applyOwned, commitOwned, type Engine } from "../engine/engine.js";
import { ClosedError, FencedError, ValidationError } from "../errors.js";
import { resolveFlowRule, type FlowRule, type Limits, type ResolvedFlowRule } from "./admission.js";
import { type FullLogger, fullLogger } from "../logger.js";
import { callGuarded, errorText } from "../option-values.js";
import { instruments } from "../telemetry/metrics.js";
import { QueueConfigs, type DeadLetteredEvent, type OpenOptions, type ResolvedQueueConfig } from "./config.js";
import { commitKvOps, type SettlementEffects } from "./effects.js";
import * as K from "./keys.js";
import { LeaseRegistry } from "./lease-registry.js";
import { MaintenanceLoop, type MaintenanceHost } from "./maintenance.js";
import { CompletionNotifier, WorkNotifier } from "./notifier.js";
import type { PayloadStore } from "./payloads.js";
import { CallerIdBound } from "./caller-id-bound.js";
import { objectsWithRoom } from "../engine/array-kinds.js";
import { callerIdsOfCommit } from "./commit-caller-ids.js";
import { insertJob, insertJobRecord, type InsertedJob, type PreparedEnqueue, type TransitionContext } from "./transitions.js";
import type { Txn } from "./txn.js";
import type { DrawnIdEnqueueOptions, EnqueueItem, EnqueueOutcome } from "./types.js";
import { MonotonicUlids, PooledRandom } from "./ulid-source.js";
import { SeqHighWater } from "./seq-high-water.js";
import { checkPayloadSize, checkPayloadSizes } from "./payload-limit.js";
import { ownEnqueueItem, payloadOwnedBy } from "./validate-enqueue.js";

const idDecoder = new TextDecoder();
/** No value of a queue transaction is a caller's: each went through `Txn.put` (see owned-bytes.ts). */
const NO_GIVEN_VALUES: readonly number[] = [];

/** The jobs one commit promise makes claimable (see `QueueCore.#claimable`). */
interface ClaimableGroup {
  readonly ids: string[];
  /** `ids` as a set, once a claim looked up more than a few of them (kept in step as ids are added). */
  lookup: Set<string> | undefined;
}

/**
 * The reaction that drops `p`'s group once `p` settles. Made here, not bound
 * to a name where it is used: where names are kept at run time (esbuild's
 * `keepNames`, as tsx runs the sources) a function bound to a name costs a
 * definition of that name each time it is made, once per WAL group.
 */
function forgetGroup(groups: Map<Promise<void>, ClaimableGroup>, p: Promise<void>): () => void {
  return () => {
    groups.delete(p);
  };
}

/** The latest time a ULID holds. */
const ULID_TIME_MAX = 2 ** 48 - 1;

export class QueueCore {
  readonly clock: TimedClock;
  readonly leases = new LeaseRegistry();
  readonly work = new WorkNotifier();
  readonly completions = new CompletionNotifier();
  readonly deadListeners = new Set<(e: DeadLetteredEvent) => void>();
  readonly host: MaintenanceHost;
  readonly loop: MaintenanceLoop;
  readonly #ids = new MonotonicUlids(new PooledRandom());
  /** Every id handed out is greater than this (the persisted high-water mark, then the last id). */
  #last: string;
  /** Which seqs a durable high-water mark covers. */
  readonly #seqMarks: SeqHighWater;
  /** Whether a superseded mark may be stored (see `TransitionContext.superseded`). */
  readonly #superseded = { marks: false };
  /** Payload objects written for transactions not yet built; the orphan sweep leaves them alone. */
  readonly inflightRefs = new Set<string>();
  /**
   * Jobs made claimable by a durable commit still on its way to the store,
   * by that commit's promise (the engine hands one WAL group's commits one
   * promise), forgotten together when it settles. A claim sees the in-memory
   * state at once, but must not hand a job to a worker before the write that
   * made it claimable (an enqueue, a wake with its attached bytes) is durable.
   */
  readonly #claimableAfter = new Map<Promise<void>, ClaimableGroup>();
  /**
   * Per queue, jobs a claim has taken and not yet handed to its caller (it
   * waits for their durability and payloads): they hold a worker's capacity
   * already, which `ackClaimingNext` must leave to them.
   */
  readonly #claimsInFlight = new Map<string, number>();
  /**
   * Claims given back (`releaseClaim`) while their records load from the
   * store: `close()` lets them end first, or the jobs would stay claimed in
   * the store and the next open's recovery would count the attempt their
   * claims gave back (dead-lettering a job at its last attempt).
   */
  readonly releasesLoading = new Set<Promise<void>>();
  /**
   * Claims made that wait for their jobs' durability or payloads before
   * they hand the jobs out: `close()` lets them end first, and one that
   * ends while closing gives its jobs back instead (handed out then, no one
   * could settle them, and the next open would count their attempts).
   * A chained settlement's claim waits on its commit's promise, which the
   * commits of one WAL group share: counted (see `CountedWaits`).
   */
  readonly claimsWaiting = new CountedWaits();
  /** Set by `close()` before it waits for the claims and releases above: no new claim starts. */
  closing = false;
  /** Set by `close()` alone (an engine failure closes the engine, not this flag), so `close()` still runs its steps once after a failure. */
  closed = false;
  /** Flow rules the owner defined per queue (`Queue.defineFlowRules`); in memory, like the claims they count. */
  readonly #flowRules = new Map<string, Map<string, ResolvedFlowRule>>();
  /** Where fencing, dead letters and background failures are logged. */
  readonly log: FullLogger;
  /*
   * Two ways of hearing that the queue closes, on purpose, because they fire
   * at different moments for different listeners:
   * - `closedSignal` aborts when the queue stops accepting work: the first
   *   thing `close()` does, or the engine's failure. Waiters above the queue
   *   (run waits, claims, completion waits) settle with its `ClosedError` at
   *   once, before the flush, so a close never waits on them.
   * - `closedListeners` (`OpenOptions.onClosed`, `Queue.onClosed`) are called
   *   once the queue is closed: after `close()` flushed and closed the engine
   *   (the store holds everything committed; the process may exit or reopen),
   *   or at an engine failure, with its reason. They may throw (logged).
   * One mechanism would either make waiters wait for the flush or tell
   * `onClosed` listeners before the store is settled.
   */
  readonly #closedController = new AbortController();
  /** Called once when the queue closes: with the engine's failure, or `undefined` after a plain `close()`. */
  readonly closedListeners = new Set<(reason: Error | undefined) => void>();
  #closedAnnounced = false;

  /** Which generated ids a caller's job may hold (see `freshJobId`). */
  readonly callerIds: CallerIdBound;

  constructor(
    readonly name: string,
    readonly engine: Engine,
    readonly payloads: PayloadStore,
    opts: OpenOptions,
    /** Every queue's settings, resolved once by `Queue.open`. */
    readonly configs: QueueConfigs,
    /** `OpenOptions.maxPayloadBytes` as `Queue.open` resolved it: every enqueue path checks its payloads against it in `prepare`. */
    readonly maxPayloadBytes: number,
  ) {
    this.log = fullLogger(opts.logger);
    this.clock = timedClock(opts.clock ?? SystemClock);
    this.callerIds = CallerIdBound.of(engine);
    this.#engineOwn = engine.commits;
    // A freed concurrency slot may admit a job left pending: let workers claim again.
    this.leases.onSlotReleased = (queue) => this.work.notify(queue);
    if (opts.onDeadLettered) this.deadListeners.add(opts.onDeadLettered);
    if (opts.onClosed) this.closedListeners.add(opts.onClosed);
    engine.onFailure((failure) => {
      // Said once, at error level: every later call rejects with an error carrying this cause.
      this.log.error({ err: failure, queue: name }, stoppedMessage(name, failure));
      void this.loop.stop();
      this.announceClosed(failure);
    });
    this.host = {
      engine,
      clock: this.clock,
      leases: this.leases,
      context: () => this.ctx(),
      commitBackground: (txn) => this.commit(txn, false),
      notifyWork: (q) => this.work.notify(q),
      finished: (id, f) => this.completions.finished(id, f),
      deadLettered: (e) => {
        instruments()?.deadLetters.add(1, { "taquba.queue": e.queueName });
        this.log.error(
          { jobId: e.jobId, queue: e.queueName, reason: e.reason, lastError: e.lastError },
          `queue "${name}": job ${e.jobId} of queue "${e.queueName}" was dead-lettered (${e.reason})`,
        );
        for (const l of this.deadListeners) this.#tellDeadListener(l, e);
      },
      deletePayloads: (refs) => this.payloads.deleteAll(refs),
      onError: (err) =>
        engine.failure === undefined &&
        this.log.warn({ err, queue: name }, `queue "${name}": background work failed, retrying in 1 s: ${err instanceof Error ? err.message : String(err)}`),
      ratePeriodOf: (queue, rule) => (rule === undefined ? this.configs.get(queue).rateLimit : this.#flowRules.get(queue)?.get(rule)?.rateLimit)?.periodMs,
      warn: (message) => this.log.warn({ queue: name }, `queue "${name}": ${message}`),
    };
    this.loop = new MaintenanceLoop(this.host);
    // A fenced or poisoned engine closes the queue for good: tell the waiters now, with the cause.
    const engineClosed = engine.closedSignal;
    if (engineClosed.aborted) this.markClosed(engineClosed.reason);
    else engineClosed.addEventListener("abort", () => this.markClosed(engineClosed.reason), { once: true });
    const hwm = engine.get(K.SEQ_HIGH_WATER);
    this.#last = hwm === undefined ? "" : new TextDecoder().decode(hwm);
    this.#seqMarks = new SeqHighWater(this.#last);
    for (const _ of engine.scan({ prefix: K.SUPERSEDED, limit: 1 })) this.#superseded.marks = true;
  }

  // ulid's factory is monotonic only within itself; the floor keeps ids
  // increasing across restarts too.
  #ulid(now: number): string {
    // A ULID holds times up to 2^48 - 1 ms (year 10889); clocks may read up to year 275760 (a clock in
    // microseconds does). Past it ids keep the latest time and count up in their random part, still increasing.
    let id = this.#ids.next(Math.min(now, ULID_TIME_MAX));
    if (id <= this.#last) id = incrementBase32(this.#last);
    this.#last = id;
    return id;
  }

  /** Defines (or replaces) flow rules of `queue`; validated first, all or nothing. */
  defineFlowRules(queue: string, rules: Readonly<Record<string, FlowRule>>): void {
    if (rules === null || typeof rules !== "object") throw new ValidationError("defineFlowRules takes a record of flow rules by name");
    const resolved = Object.entries(rules).map(([name, rule]) => resolveFlowRule(name, rule));
    let map = this.#flowRules.get(queue);
    if (map === undefined) {
      map = new Map();
      this.#flowRules.set(queue, map);
    }
    for (const r of resolved) map.set(r.name, r);
    // A looser rule may admit jobs held back: let workers claim again.
    this.work.notify(queue);
  }

  /** The concurrency limit of flow rule `name` of `queue`, if it has one. */
  flowConcurrencyLimit(queue: string, name: string): number | undefined {
    return this.#flowRules.get(queue)?.get(name)?.concurrency?.limit;
  }

  /** Every limit that may apply to jobs of `queue`. */
  limitsOf(queue: string): Limits {
    const { concurrency, rateLimit } = this.configs.get(queue);
    return { queue, concurrency, rateLimit, rules: this.#flowRules.get(queue) };
  }

  /** `hasLimits(limitsOf(queue))` without building the limits: asked by every chained step. */
  hasLimits(queue: string): boolean {
    const cfg = this.configs.get(queue);
    if (cfg.concurrency !== undefined || cfg.rateLimit !== undefined) return true;
    const rules = this.#flowRules.get(queue);
    return rules !== undefined && rules.size > 0;
  }

  /** A fresh monotonic ULID timed by the queue clock. */
  newId(now = this.clock.now()): string {
    return this.#ulid(now);
  }

  /** A transaction's context; `prepared`: the jobs it will insert, whose caller ids its draws pass over. */
  ctx(prepared?: readonly PreparedEnqueue[]): TransitionContext {
    const ctx = new CoreTransitionContext(this, this.clock.now(), this.#seqMarks, this.#superseded);
    if (prepared !== undefined) ctx.callerIdsInCommit = callerIdsOfCommit(prepared);
    return ctx;
  }

  /** Aborted, with a `ClosedError` carrying the cause as its reason, when the queue closes or its engine fails. */
  get closedSignal(): AbortSignal {
    return this.#closedController.signal;
  }

  /** Records that the queue can no longer commit: by `close()` (no cause) or an engine failure (`cause`). */
  markClosed(cause?: unknown): void {
    if (this.#closedController.signal.aborted) return;
    this.#closedController.abort(new ClosedError(`queue "${this.name}"`, cause));
  }

  get isClosed(): boolean {
    return this.closed || this.engine.closed;
  }

  /** Why the queue stopped on its own (fenced or poisoned); undefined while open or after a plain close. */
  get closedReason(): Error | undefined {
    return this.engine.failure;
  }

  checkOpen(): void {
    if (this.isClosed) throw new ClosedError(`queue "${this.name}"`, this.engine.failure);
  }

  /**
   * Calls a dead-letter listener; its throw, or an async listener's rejection (left unhandled, it would end
   * the process), is logged, and the listeners and jobs after it are still told.
   */
  #tellDeadListener(l: (e: DeadLetteredEvent) => void, e: DeadLetteredEvent): void {
    const failed = (err: unknown) =>
      this.log.error({ err, queue: this.name, jobId: e.jobId }, `queue "${this.name}": an onDeadLettered listener failed on job ${e.jobId}: ${errorText(err)}`);
    callGuarded(() => l(e), failed);
  }

  /** Tells the `onClosed` listeners, once. */
  announceClosed(reason: Error | undefined): void {
    if (this.#closedAnnounced) return;
    this.#closedAnnounced = true;
    for (const l of this.closedListeners) {
      // An async listener's rejection is logged like a throw (left unhandled, it would end the process).
      callGuarded(
        () => l(reason),
        (err) => this.log.error({ err, queue: this.name }, `queue "${this.name}": an onClosed listener failed: ${errorText(err)}`),
      );
    }
    this.closedListeners.clear();
  }

  #commits = 0;

  /**
   * Commits this queue has submitted to its engine, counted in the turn each
   * is applied (every write of the queue's state goes through `commit`): a
   * caller that noted the count right after its own commit knows, while it
   * is unchanged, that the state still holds what that commit wrote.
   */
  get commits(): number {
    return this.#commits;
  }

  /**
   * Commits `txn` without durability, for a caller that awaits nothing: no
   * promise is made or caught. Such commits only re-file jobs whose content
   * is already durable (claims, requeues); a refusal (a stopped engine) is
   * surfaced by the next durable commit.
   */
  commitApplied(txn: Txn): void {
    this.#commits++;
    const engine = this.engine;
    const before = engine.commits;
    applyOwned(engine, txn.finish().ops, NO_GIVEN_VALUES);
    this.#engineOwn += engine.commits - before;
  }

  /**
   * The engine's commit count (`Engine.commits`) less the commits this
   * queue had applied to it: the count of engine commits since the queue
   * opened that the queue did not make. Each of this queue's commits is
   * applied within its call, so the count before and after it tells that
   * commit's own part exactly (nothing, when the engine refused it).
   */
  #engineOwn: number;

  /**
   * Commits applied to the queue's engine that the queue did not make (a
   * writer on the same engine, such as a `WriteBatch` committed straight to
   * it). A claim notes it (`LeaseEntry.recordAt`): while it is unchanged,
   * only this queue wrote the claimed record since, and of the queue's
   * writers only a cancel does while the claim holds, which marks the claim.
   */
  get foreignCommits(): number {
    return this.engine.commits - this.#engineOwn;
  }

  /**
   * Commits `txn`; the promise resolves when durable. Non-durable commits are
   * not awaited by callers. `createdClaimed`: a job the commit writes already
   * claimed (`ackClaimingNext`); should its lease expire and the job be
   * requeued before this commit is durable, no claim hands it out until then.
   */
  commit(txn: Txn, durable: boolean, createdClaimed?: string): Promise<void> {
    this.#commits++;
    const batch = txn.finish();
    const engine = this.engine;
    const before = engine.commits;
    // The transaction's ops never leave the queue and each value is owned (`Txn.put`): the engine checks the keys, copying no op.
    const p = commitOwned(engine, batch.ops, NO_GIVEN_VALUES, { durable });
    const applied = engine.commits - before;
    this.#engineOwn += applied;
    // Covered once applied (see `SeqHighWater`): commits applied after this one need no mark of their own.
    const mark = txn.seqHighWater;
    if (mark !== undefined && applied > 0) this.#seqMarks.applied(mark);
    if (!durable) {
      // Non-durable commits only re-file jobs whose content is already
      // durable (claims, promotions, requeues), so nothing to track.
      p.catch(() => undefined); // surfaced by the next durable commit
      return p;
    }
    // The engine hands the commits of one WAL group the same promise: the first of them attaches
    // the reaction that forgets the ids of all (one reaction per group instead of one per commit).
    let group = this.#claimableAfter.get(p);
    for (const op of batch.ops) {
      if (op.kind === "put" && op.key.startsWith(K.PENDING)) group = this.#claimable(group, p, idDecoder.decode(op.value));
    }
    if (createdClaimed !== undefined) this.#claimable(group, p, createdClaimed);
    return p;
  }

  /**
   * Records that job `id` is claimable once `p` is durable, in `p`'s group
   * (made, with the reaction that forgets it, when undefined). Groups hold
   * the ids in an array: a map from id to promise, filled and emptied by
   * every group (a fill's commits name a thousand jobs each), grew and
   * shrank its table while the puts were in flight, and the tables died in
   * the old generation. A claim looks ids up (`claimableDurable`).
   */
  #claimable(group: ClaimableGroup | undefined, p: Promise<void>, id: string): ClaimableGroup {
    if (group === undefined) {
      group = { ids: [], lookup: undefined };
      this.#claimableAfter.set(p, group);
      const forget = forgetGroup(this.#claimableAfter, p);
      p.then(forget, forget);
    }
    group.ids.push(id);
    group.lookup?.add(id);
    return group;
  }

  /** Jobs of `queue` claimed and not yet handed to their claimer. */
  claimsInFlight(queue: string): number {
    return this.#claimsInFlight.get(queue) ?? 0;
  }

  /** Adds `n` (negative once they are handed out) to the jobs of `queue` claimed and not yet handed out. */
  countClaimsInFlight(queue: string, n: number): void {
    const left = (this.#claimsInFlight.get(queue) ?? 0) + n;
    if (left === 0) this.#claimsInFlight.delete(queue);
    else this.#claimsInFlight.set(queue, left);
  }

  /**
   * Resolves once every commit that made one of `ids` claimable is durable
   * (at once when all already are); rejects when one never will be.
   */
  claimableDurable(ids: readonly string[]): Promise<unknown> | undefined {
    let waits: Promise<void>[] | undefined;
    for (const [done, group] of this.#claimableAfter) {
      // A few ids are searched in place; more through a set made on the first look (a fill's groups are never looked at).
      const few = group.ids.length <= 16 && group.lookup === undefined;
      const lookup = few ? undefined : (group.lookup ??= new Set(group.ids));
      for (const id of ids) {
        if (!(lookup === undefined ? group.ids.includes(id) : lookup.has(id))) continue;
        (waits ??= []).push(done);
        break;
      }
    }
    return waits === undefined ? undefined : Promise.all(waits);
  }

  /**
   * Writes oversized payloads to their own objects, before any record refers
   * to them. The array itself, not a promise, when none is oversized (a
   * settlement's usual case): awaiting would cost the caller a turn and
   * this call an async frame for nothing to wait on.
   */
  prepare(items: readonly EnqueueItem[]): PreparedEnqueue[] | Promise<PreparedEnqueue[]> {
    // An item pushed into a settlement's effects by hand is checked here, as staging would have.
    const n = items.length;
    if (n === 1) return this.#prepareOne(items[0]!);
    // Lists made by pushing onto an empty list of objects, not by `map`: V8's optimized `map` makes a holey list
    // where its builtin makes a packed one, and each kind is another class to the readers (see array-kinds).
    // Sized for two items (see `objectsWithRoom`): a list that grew at its first push cost 152 B.
    const own = objectsWithRoom<EnqueueItem>(n);
    for (let i = 0; i < n; i++) own.push(ownEnqueueItem(items[i]!));
    // Before any payload is copied or written: a refused one changes nothing.
    checkPayloadSizes(own, this.maxPayloadBytes);
    callerIdsOfCommit(own);
    const out = objectsWithRoom<PreparedEnqueue>(n);
    for (let i = 0; i < n; i++) out.push(preparedItem(this.callerIds, own[i]!));
    // The list of payloads to offload made only when there is one: a settlement has one item, and none.
    let big: PreparedEnqueue[] | undefined;
    for (const p of out) if (this.payloads.shouldOffload(p.payload)) (big ??= []).push(p);
    return big === undefined ? out : this.#offload(out, big);
  }

  /**
   * `prepare` of one item (a settlement's usual case), read once from the
   * caller's list, in the same order of checks: no list of the checked
   * items, and the prepared list made as a literal of one (packed objects).
   */
  #prepareOne(given: EnqueueItem): PreparedEnqueue[] | Promise<PreparedEnqueue[]> {
    const item = ownEnqueueItem(given);
    checkPayloadSize(item, this.maxPayloadBytes);
    // One item has no caller id to repeat (`callerIdsOfCommit`).
    const p = preparedItem(this.callerIds, item);
    const out = [p];
    return this.payloads.shouldOffload(p.payload) ? this.#offload(out, [p]) : out;
  }

  async #offload(out: PreparedEnqueue[], big: PreparedEnqueue[]): Promise<PreparedEnqueue[]> {
    const now = this.clock.now();
    for (const p of big) {
      p.payloadRef = this.#ulid(now);
      this.inflightRefs.add(p.payloadRef);
    }
    const results = await Promise.allSettled(big.map((p) => this.payloads.write(p.payloadRef!, p.payload)));
    const failed = results.find((r) => r.status === "rejected");
    if (failed) {
      // No commit follows: the caller ids stop holding off draws, and the payload objects are deleted.
      this.#landCallerIds(out);
      for (const p of big) this.inflightRefs.delete(p.payloadRef!);
      await this.payloads.deleteAll(big.map((p) => p.payloadRef!));
      throw (failed as PromiseRejectedResult).reason;
    }
    return out;
  }

  /**
   * Ends the in-flight life of prepared payload objects (their records are
   * now in memory, or never will be) and deletes those that did not become
   * new jobs (dedup hits, a failed transaction). Call in the same turn as
   * the transaction.
   */
  discardUnused(prepared: readonly PreparedEnqueue[], outcomes: readonly EnqueueOutcome[] | undefined): void {
    let offloaded = false;
    for (const p of prepared) {
      // Its record is in memory now (a draw finds its key), or never will be.
      if (p.callerIdInFlight) this.#landCallerId(p);
      if (p.payloadRef === undefined) continue;
      this.inflightRefs.delete(p.payloadRef);
      offloaded = true;
    }
    // No payload object: nothing to delete, and no lists made (every settlement comes here).
    if (!offloaded) return;
    const unused = prepared.filter((p, i) => p.payloadRef !== undefined && outcomes?.[i]?.newlyEnqueued !== true).map((p) => p.payloadRef!);
    if (unused.length > 0) void this.payloads.deleteAll(unused);
  }

  #landCallerIds(prepared: readonly PreparedEnqueue[]): void {
    for (const p of prepared) if (p.callerIdInFlight) this.#landCallerId(p);
  }

  /** Ends the flight of `p`'s caller id, once (the flag is cleared). */
  #landCallerId(p: PreparedEnqueue): void {
    p.callerIdInFlight = false;
    this.callerIds.landed(p.opts.jobId!);
  }

  /** Applies caller KV ops and effect enqueues inside `txn`; outcomes align with `prepared`. */
  applyEffects(txn: Txn, ctx: TransitionContext, effects: SettlementEffects | undefined, prepared: readonly PreparedEnqueue[]): EnqueueOutcome[] {
    this.#applyKv(txn, effects);
    // A loop into a list of objects from the start (see array-kinds), not a `map` with a closure.
    const outcomes = objectsWithRoom<EnqueueOutcome>(prepared.length);
    for (let i = 0; i < prepared.length; i++) outcomes.push(insertJob(txn, ctx, prepared[i]!));
    return outcomes;
  }

  /**
   * `applyEffects` with the enqueue at `claimIndex` inserted already claimed
   * (see `insertJobRecord`), its outcome put in `outcomes` with the others'
   * (at their indexes in `prepared`, written in index order: an empty array stays packed). Returns what its insert wrote: `record` is
   * its record, undefined when it was a dedup hit, and `keys` its engine
   * keys when written claimed. A loop, not a `map` with a closure and a
   * result to take apart: this runs once per chained step.
   */
  applyEffectsClaiming(
    txn: Txn,
    ctx: TransitionContext,
    effects: SettlementEffects | undefined,
    prepared: readonly PreparedEnqueue[],
    claimIndex: number,
    outcomes: EnqueueOutcome[],
  ): InsertedJob | undefined {
    this.#applyKv(txn, effects);
    let claiming: InsertedJob | undefined;
    for (let i = 0; i < prepared.length; i++) {
      const p = prepared[i]!;
      if (i !== claimIndex) outcomes[i] = insertJob(txn, ctx, p);
      else {
        claiming = insertJobRecord(txn, ctx, p, true);
        outcomes[i] = claiming.outcome;
      }
    }
    return claiming;
  }

  #applyKv(txn: Txn, effects: SettlementEffects | undefined): void {
    if (effects !== undefined) commitKvOps(effects, txn);
  }

  /** After a durable commit that inserted jobs: wake workers, or the scheduler for future jobs. `handedOut`: the index of one claimed for its settler (no one to wake). */
  announceInserted(prepared: readonly PreparedEnqueue[], outcomes: readonly EnqueueOutcome[], now: number, handedOut = -1): void {
    // A loop, not `forEach` with a closure: every settlement comes here.
    for (let i = 0; i < prepared.length; i++) {
      const o = outcomes[i];
      if (!o?.newlyEnqueued) continue;
      if (o.superseded !== undefined) this.completions.finished(o.superseded, { kind: "superseded", by: o.jobId });
      // The job the settlement handed out already claimed needs no timer.
      if (i === handedOut) continue;
      const p = prepared[i]!;
      const debounceMs = p.opts.debounce?.periodMs ?? this.configs.get(p.queueName).debounce?.periodMs;
      // A debounced job waits for its window's end, at most its period from now (earlier when it joined an open window).
      if (debounceMs !== undefined) this.loop.rearm(now + debounceMs);
      else if (p.opts.runAt !== undefined && p.opts.runAt > now) this.loop.rearm(p.opts.runAt);
      else this.work.notify(p.queueName);
    }
  }
}

/** `item` (checked) as `QueueCore.prepare` hands it on, its caller id noted in `callerIds` (see there). */
function preparedItem(callerIds: CallerIdBound, item: EnqueueItem): PreparedEnqueue {
  const opts = item.opts!;
  // Checked options have no prototype: only the queue's own builder can have set this (see `DrawnIdEnqueueOptions`).
  const jobIdDrawn = (opts as DrawnIdEnqueueOptions).jobIdDrawn === true;
  // Before the commit, so an id drawn meanwhile, by this enqueue or another, passes over it (see `freshJobId`).
  // An id this queue drew is no caller's: noted, it would count as one a caller may have taken since the draw.
  const callerIdInFlight = opts.jobId !== undefined && !jobIdDrawn && callerIds.note(opts.jobId);
  // payloadRef its own field: left out, the insert would read one set on Object.prototype and lose the payload.
  return { queueName: item.queueName, payload: item.payload, payloadRef: undefined, opts, callerIdInFlight, jobIdDrawn, payloadOwned: payloadOwnedBy(item) };
}

/**
 * One transaction's `TransitionContext`: its time and what the transitions
 * ask of the queue, as methods rather than closures made per transaction
 * (one object per settlement instead of three).
 */
class CoreTransitionContext implements TransitionContext {
  readonly #core: QueueCore;
  readonly #seqMarks: SeqHighWater;

  constructor(
    core: QueueCore,
    readonly now: number,
    seqMarks: SeqHighWater,
    readonly superseded: { marks: boolean },
  ) {
    this.#core = core;
    this.#seqMarks = seqMarks;
  }

  /** A method, not a closure each queue makes: every queue's inserts call the same function. */
  seqHighWater(seq: string): string | undefined {
    return this.#seqMarks.markFor(seq);
  }

  config(queue: string): ResolvedQueueConfig {
    return this.#core.configs.get(queue);
  }

  /** A fresh monotonic ULID of this transaction's time. */
  newId(): string {
    return this.#core.newId(this.now);
  }

  callerIdsInCommit: ReadonlySet<string> | undefined = undefined;

  mayHoldDrawn(id: string): boolean {
    return this.#core.callerIds.mayHold(id);
  }

  callerIdInFlight(id: string): boolean {
    return this.#core.callerIds.inFlight(id);
  }

  mayHoldEarlierDraw(id: string): boolean {
    return this.#core.callerIds.mayHoldEarlierDraw(id);
  }
}

/** What the log says when the queue stops on its own: fenced by another process, or its store kept failing. */
function stoppedMessage(name: string, failure: Error): string {
  if (failure instanceof FencedError) {
    return `queue "${name}" stopped: another process opened this queue store and fenced this one; this process can no longer commit, and its queue is closed (${failure.message})`;
  }
  return `queue "${name}" stopped: ${failure.message}`;
}
