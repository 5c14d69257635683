/**
 * @module Background work of a queue: recovery of claims a previous process
 * held (at open), the lease reaper, promotion of due scheduled jobs and the
 * done/dead retention sweeps.
 *
 * One loop sleeps on a Clock timer until the earliest deadline among lease
 * expiries, scheduled run times and retention times; anything that creates
 * an earlier deadline calls `rearm`. There is no fixed polling interval.
 * Every commit here is non-durable: each step is idempotent when redone
 * after a crash (a lost promotion is promoted again, a lost requeue is
 * recovered again at the next open).
 */
import { decodeRateWindow, parseRateWindowKey, RATE_WINDOW, windowExpired } from "./rate-records.js";
import { waitInBackground, type TimedClock } from "../clock.js";
import type { Engine } from "../engine/engine.js";
import type { DeadLetteredEvent } from "./config.js";
import * as K from "./keys.js";
import { DamagedRecord, filedOrDamaged, readIndexedJob, readOrDamaged, setAsideClaimed, setAsideScheduled, sweepDamagedRetained } from "./damaged-record.js";
import type { LeaseRegistry } from "./lease-registry.js";
import type { Finish } from "./notifier.js";
import { copyJob, decodeSuperseded, type JobRecord } from "./record.js";
import { deleteJob, dropOrphanClaimedEntry, killJob, recordAttempt, requeueJob, writeJob, type TransitionContext } from "./transitions.js";
import { Txn } from "./txn.js";
import { warmJobs } from "./warm.js";

/** Pause before background work runs again after an unexpected error. */
const ERROR_RETRY_MS = 1000;

/** Jobs handled per transaction; bounds the time one turn of the event loop takes. */
const BATCH = 500;

/** What the background work needs from its queue. */
export interface MaintenanceHost {
  readonly engine: Engine;
  readonly clock: TimedClock;
  readonly leases: LeaseRegistry;
  context(): TransitionContext;
  /** Commits non-durably; the promise resolves when durable. */
  commitBackground(txn: Txn): Promise<void>;
  notifyWork(queue: string): void;
  finished(id: string, f: Finish): void;
  deadLettered(e: DeadLetteredEvent): void;
  deletePayloads(refs: string[]): Promise<void>;
  /** Told about unexpected errors of background work. */
  onError(err: unknown): void;
  /** The period the rate limit of `queue` (of its flow rule `rule`, when given) has now; undefined when it has none. */
  ratePeriodOf(queue: string, rule: string | undefined): number | undefined;
  /** Told about damage background work found and repaired. */
  warn(message: string): void;
}

/** Announces what a batch did once its commit is durable. */
function announce(host: MaintenanceHost, p: Promise<void>, queues: Set<string>, dead: DeadLetteredEvent[], removedRefs: string[]): void {
  for (const q of queues) host.notifyWork(q);
  p.then(
    () => {
      for (const e of dead) {
        host.finished(e.jobId, { kind: "dead" });
        host.deadLettered(e);
      }
      if (removedRefs.length > 0) void host.deletePayloads(removedRefs);
    },
    () => undefined,
  );
}

/**
 * Receives the wait for job records a pass found paged out (see warm.ts):
 * the pass stopped before that batch, and runs again once they are loaded.
 */
export type DeferPass = (warming: Promise<void>) => void;

/**
 * Batches of up to `BATCH` index keys under `prefix` (below `end`), each
 * read after the previous batch was committed, with the records of
 * `idOf(key)` readable. The caller must remove every key of a batch in its
 * commit, or the same batch comes back. When a batch's records are paged
 * out, it hands their loading to `defer` and ends.
 */
function* indexBatches(engine: Engine, prefix: string, end: string | undefined, idOf: (key: string) => string, defer: DeferPass): Generator<string[]> {
  for (;;) {
    const keys = [...engine.scan({ prefix, end, limit: BATCH })].map(([k]) => k);
    if (keys.length === 0) return;
    const warming = warmJobs(engine, keys.map(idOf));
    if (warming !== undefined) {
      defer(warming);
      return;
    }
    yield keys;
  }
}

/**
 * Ends a claim whose holder is gone (its process stopped, or its lease
 * expired): back to pending, or dead at the attempt limit. Returns whether
 * the job died.
 */
function endAbandonedClaim(
  txn: Txn,
  ctx: TransitionContext,
  r: JobRecord,
  reason: "interrupted" | "lease_expired",
  error: string,
  queues: Set<string>,
  dead: DeadLetteredEvent[],
): boolean {
  recordAttempt(txn, r, ctx.now, reason, error);
  if (r.attempts >= r.maxAttempts) {
    const killed = killJob(txn, ctx, r, error);
    dead.push({ jobId: r.id, queueName: r.queue, reason, lastError: killed.lastError ?? error });
    return true;
  }
  requeueJob(txn, r, undefined, error);
  queues.add(r.queue);
  return false;
}

/** Open-time recovery: every claimed record belonged to a previous process. */
export async function recoverClaims(host: MaintenanceHost): Promise<{ requeued: string[]; deadLettered: string[] }> {
  const requeued: string[] = [];
  const deadLettered: string[] = [];
  for (;;) {
    let warming: Promise<void> | undefined;
    recoverClaimBatches(host, requeued, deadLettered, (w) => (warming = w));
    if (warming === undefined) return { requeued, deadLettered };
    await warming;
  }
}

function recoverClaimBatches(host: MaintenanceHost, requeued: string[], deadLettered: string[], defer: DeferPass): void {
  for (const keys of indexBatches(host.engine, K.CLAIMED, undefined, K.lastField, defer)) {
    const txn = new Txn(host.engine);
    const ctx = host.context();
    const queues = new Set<string>();
    const dead: DeadLetteredEvent[] = [];
    for (const key of keys) {
      const r = readIndexedJob(txn, K.lastField(key), K.queueOfClaimedKey(key));
      if (r instanceof DamagedRecord) {
        // Thrown here, it failed every open of the store.
        dead.push(setAsideClaimed(txn, ctx, key, K.queueOfClaimedKey(key), r));
        deadLettered.push(r.id);
        continue;
      }
      if (r === undefined) {
        dropDanglingClaimed(host, txn, key, K.lastField(key), K.queueOfClaimedKey(key), "at open");
        continue;
      }
      if (r.state !== "claimed") {
        // Its record counts it in the state it is in: only the stale entry goes.
        dropOrphanClaimedEntry(txn, key);
        continue;
      }
      const died = endAbandonedClaim(txn, ctx, r, "interrupted", "interrupted: the process holding the claim stopped", queues, dead);
      (died ? deadLettered : requeued).push(r.id);
    }
    announce(host, host.commitBackground(txn), queues, dead, []);
  }
}

/** Requeues or dead-letters claims whose lease expired at or before `now`. Returns how many. */
export function reapExpired(host: MaintenanceHost, now: number, defer: DeferPass = throwDeferred): number {
  let total = 0;
  for (;;) {
    const expired = host.leases.expired(now, BATCH);
    if (expired.length === 0) return total;
    const warming = warmJobs(
      host.engine,
      expired.map((e) => e.id),
    );
    if (warming !== undefined) {
      defer(warming);
      return total;
    }
    const txn = new Txn(host.engine);
    const ctx = host.context();
    const queues = new Set<string>();
    const dead: DeadLetteredEvent[] = [];
    for (const e of expired) {
      host.leases.remove(e.id);
      const r = readIndexedJob(txn, e.id, e.queue);
      if (r instanceof DamagedRecord) {
        // Thrown here, it failed every pass (and the promotions and sweeps after it) once a second.
        dead.push(setAsideClaimed(txn, ctx, K.claimedKey(e.queue, e.id), e.queue, r));
        warnSetAside(host, r, e.queue, "its lease expired");
        total++;
        continue;
      }
      if (r === undefined) {
        const key = K.claimedKey(e.queue, e.id);
        if (txn.get(key) !== undefined) dropDanglingClaimed(host, txn, key, e.id, e.queue, "when its lease expired");
        continue;
      }
      if (r.state !== "claimed") continue;
      endAbandonedClaim(txn, ctx, r, "lease_expired", "lease expired", queues, dead);
      total++;
    }
    announce(host, host.commitBackground(txn), queues, dead, []);
  }
}

/** Moves scheduled jobs due at or before `now` to pending. Returns how many. */
export function promoteDue(host: MaintenanceHost, now: number, defer: DeferPass = throwDeferred): number {
  let total = 0;
  for (const keys of indexBatches(host.engine, K.SCHEDULED, K.SCHEDULED + K.padTime(now + 1), (k) => K.parseScheduledKey(k).id, defer)) {
    const txn = new Txn(host.engine);
    const ctx = host.context();
    const queues = new Set<string>();
    const dead: DeadLetteredEvent[] = [];
    for (const key of keys) {
      const at = K.parseScheduledKey(key);
      const r = readIndexedJob(txn, at.id, at.queue);
      if (r instanceof DamagedRecord) {
        dead.push(setAsideScheduled(txn, ctx, key, at.queue, r));
        warnSetAside(host, r, at.queue, "it came due");
        continue;
      }
      if (r === undefined) {
        // Counted scheduled with its entry, which is all that is left of it.
        txn.delete(key);
        if (txn.countOf(at.queue, "scheduled") > 0) txn.move(at.queue, "scheduled", null);
        host.warn(`job ${at.id} of queue "${at.queue}" was listed scheduled without a stored record; its entry was dropped when it came due`);
        continue;
      }
      if (r.state !== "scheduled" || K.scheduledKey(r.runAt ?? 0, r.queue, r.id) !== key) {
        txn.delete(key);
        continue;
      }
      const next = copyJob(r);
      next.state = "pending";
      next.runAt = undefined;
      writeJob(txn, next, r);
      queues.add(r.queue);
      total++;
    }
    announce(host, host.commitBackground(txn), queues, dead, []);
  }
  return total;
}

/** Removes done and dead records whose retention ended at or before `now`. */
export function sweepRetention(host: MaintenanceHost, now: number, defer: DeferPass = throwDeferred): number {
  let total = 0;
  for (const keys of indexBatches(host.engine, K.RETENTION, K.RETENTION + K.padTime(now + 1), (k) => K.parseRetentionKey(k).id, defer)) {
    const txn = new Txn(host.engine);
    const refs: string[] = [];
    for (const key of keys) {
      const { dueAt, id } = K.parseRetentionKey(key);
      let r = readOrDamaged(txn, id);
      if (r !== undefined && !(r instanceof DamagedRecord)) r = filedAsRetained(txn, r, dueAt);
      if (r instanceof DamagedRecord) {
        const swept = sweepDamagedRetained(txn, host.engine, id, key);
        if (swept.payloadRef !== undefined) refs.push(swept.payloadRef);
        if (swept.removed) {
          host.warn(
            `removed job ${id} at the end of its retention: its stored record could not be read (${r.detail}); other records of the store may be damaged too`,
          );
          total++;
        }
        continue;
      }
      if (r === undefined) {
        // The mark of a superseded job (debounce) is kept until its own retention ends.
        const markKey = K.supersededKey(id);
        const mark = txn.get(markKey);
        if (mark !== undefined && decodeSuperseded(markKey, mark).retainUntil === dueAt) txn.delete(markKey);
      }
      if (r === undefined || r.retainUntil !== dueAt || (r.state !== "done" && r.state !== "dead")) {
        txn.delete(key);
        continue;
      }
      deleteJob(txn, r);
      if (r.payloadRef !== undefined) refs.push(r.payloadRef);
      total++;
    }
    announce(host, host.commitBackground(txn), new Set(), [], refs);
  }
  return total;
}

/** `r`, or a `DamagedRecord` when it is a done or dead record due at `dueAt` that its index does not file (see `filedOrDamaged`). */
function filedAsRetained(txn: Txn, r: JobRecord, dueAt: number): JobRecord | DamagedRecord {
  if (r.retainUntil !== dueAt || (r.state !== "done" && r.state !== "dead")) return r;
  return filedOrDamaged(txn, r);
}

/**
 * Drops the claimed entry `key` of job `id` of `queue`, whose record is
 * gone: the stats no longer count it claimed (a done count the entry
 * carries is kept), and the operator is told.
 */
function dropDanglingClaimed(host: MaintenanceHost, txn: Txn, key: string, id: string, queue: string, when: string): void {
  dropOrphanClaimedEntry(txn, key);
  // An entry put without its count (not by this queue) leaves the count as it is: it never goes below zero.
  if (txn.countOf(queue, "claimed") > 0) txn.move(queue, "claimed", null);
  host.warn(`job ${id} of queue "${queue}" was listed claimed without a stored record; its entry was dropped ${when}`);
}

/** Tells the operator of a damaged job background work set aside as dead. */
function warnSetAside(host: MaintenanceHost, damaged: DamagedRecord, queue: string, when: string): void {
  host.warn(
    `job ${damaged.id} of queue "${queue}" was set aside as dead (record_corrupted) when ${when}: its stored record could not be read (${damaged.detail}); other records of the store may be damaged too`,
  );
}

/** Longest time between two sweeps of the durable rate windows. */
export const RATE_SWEEP_EVERY_MS = 60_000;

/**
 * Deletes the durable rate windows whose last claim left the period by
 * `now` (keys of tenants that stopped submitting), `BATCH` per commit; the
 * period is the larger of the stored and the configured one. A damaged
 * window (it cannot say when its claims were) is deleted once it was seen
 * damaged for the configured period (a restarted owner holds its key that
 * long from it), at the first pass after the one that first saw it when
 * no rate limit applies to it now, and the deletion is reported. A window
 * of a flow rule this process has not defined is deleted only a sweep
 * interval after a pass first found it expired: the first pass runs at
 * open, before the owner defines its rules, whose period may have been
 * raised. `damagedSince` carries, between passes, when each such window
 * (damaged, or of an undefined rule) was first seen (only those still
 * waiting are kept). Window records are small and never paged.
 */
export function sweepRateWindows(host: MaintenanceHost, now: number, damagedSince: Map<string, number> = new Map()): number {
  const expired: string[] = [];
  const seen = new Map(damagedSince);
  damagedSince.clear();
  for (const [k, bytes] of host.engine.scan({ prefix: RATE_WINDOW })) {
    const at = parseRateWindowKey(k);
    const configured = at === undefined ? undefined : host.ratePeriodOf(at.queue, at.rule);
    const w = decodeRateWindow(bytes);
    if (w !== undefined) {
      if (!windowExpired(w, now, configured)) continue;
      // A flow rule not defined (yet) may count a longer period than the stored one (raised at a restart):
      // an owner defines its rules after it opened the queue, so the window waits a sweep interval for them.
      if (at?.rule !== undefined && configured === undefined) {
        const since = seen.get(k);
        if (since === undefined || now - since < RATE_SWEEP_EVERY_MS) {
          damagedSince.set(k, since ?? now);
          continue;
        }
      }
      expired.push(k);
      continue;
    }
    const since = seen.get(k);
    if (since === undefined || now - since < (configured ?? 0)) {
      damagedSince.set(k, since ?? now);
      continue;
    }
    expired.push(k);
    const whose =
      at === undefined
        ? "of an unknown queue"
        : `of key ${JSON.stringify(at.key)} of queue "${at.queue}"${at.rule === undefined ? "" : ` (flow rule "${at.rule}")`}`;
    host.warn(
      `deleted a damaged rate-limit window record ${whose}: it could not say when its claims were, so the key was held one full period first; other records of the store may be damaged too`,
    );
  }
  // All in this turn: no claim renews a window between the scan and the commits.
  for (let i = 0; i < expired.length; i += BATCH) {
    const txn = new Txn(host.engine);
    for (const k of expired.slice(i, i + BATCH)) txn.delete(k);
    host.commitBackground(txn).catch(() => undefined);
  }
  return expired.length;
}

/** For callers that warm nothing: a pass that meets paged records must be given a `defer`. */
function throwDeferred(warming: Promise<void>): never {
  warming.catch(() => undefined);
  throw new Error("a maintenance pass met paged-out job records without a way to wait for them");
}

/** The earliest instant at which some background work is due. */
export function nextDeadline(host: MaintenanceHost): number | undefined {
  let next = host.leases.nextExpiry();
  for (const prefix of [K.SCHEDULED, K.RETENTION]) {
    for (const [k] of host.engine.scan({ prefix, limit: 1 })) {
      const t = K.leadingTime(k);
      if (next === undefined || t < next) next = t;
    }
  }
  return next;
}

/** The loop that runs the reaper, the scheduler and the sweeps when due. */
export class MaintenanceLoop {
  #stopped = false;
  #wait: AbortController | undefined;
  #armedAt: number | undefined;
  #done: Promise<void> | undefined;
  /** Job records a pass found paged out, loading; the loop runs again once they are in. */
  #warming: Promise<void> | undefined;

  constructor(private readonly host: MaintenanceHost) {}

  start(): void {
    this.#done = this.#run();
  }

  /**
   * Runs everything due now, synchronously. A pass that meets paged-out job
   * records stops there; the loop loads them and runs again at once.
   */
  runDue(): void {
    this.#passes((w) => {
      this.#warming ??= w;
      this.#wait?.abort();
    });
  }

  /**
   * Runs everything due now and resolves once done: synchronously when no
   * job record it needs is paged out, else after loading them.
   */
  async runDueNow(): Promise<void> {
    for (;;) {
      let warming: Promise<void> | undefined;
      this.#passes((w) => (warming ??= w));
      if (warming === undefined) return;
      await warming;
    }
  }

  /** When the durable rate windows are swept next (see `sweepRateWindows`). */
  #rateSweepAt = 0;
  /** Damaged rate windows, with when a sweep first saw each. */
  readonly #damagedWindows = new Map<string, number>();

  #passes(defer: DeferPass): void {
    const now = this.host.clock.now();
    reapExpired(this.host, now, defer);
    promoteDue(this.host, now, defer);
    sweepRetention(this.host, now, defer);
    if (now >= this.#rateSweepAt) {
      this.#rateSweepAt = now + RATE_SWEEP_EVERY_MS;
      sweepRateWindows(this.host, now, this.#damagedWindows);
    }
  }

  /** Called when something becomes due at `at`; wakes the loop if it sleeps past it. */
  rearm(at: number): void {
    if (this.#armedAt === undefined || at < this.#armedAt) this.#wait?.abort();
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      let failed = false;
      try {
        this.runDue();
      } catch (err) {
        // A failed commit poisons the engine and closes the queue; stop quietly.
        if (this.host.engine.closed) return;
        // Anything else (an undecodable record) would fail again at once:
        // report it and retry after a pause instead of spinning.
        failed = true;
        this.host.onError(err);
      }
      if (this.#stopped) return;
      const warming = this.#warming;
      if (warming !== undefined) {
        this.#warming = undefined;
        try {
          await warming;
          continue;
        } catch (err) {
          if (this.host.engine.closed) return;
          failed = true;
          this.host.onError(err);
        }
      }
      let next = nextDeadline(this.host);
      if (failed) next = this.host.clock.now() + ERROR_RETRY_MS;
      else if (next !== undefined && next <= this.host.clock.now()) {
        // More is due than one pass handled (or the clock moved); yield, then go on.
        await new Promise<void>((r) => setImmediate(r));
        continue;
      }
      const ac = new AbortController();
      this.#wait = ac;
      this.#armedAt = next;
      try {
        if (next === undefined) await new Promise<void>((r) => ac.signal.addEventListener("abort", () => r(), { once: true }));
        // Not a reason to keep the process alive: a worker waiting for work is (see WorkNotifier).
        else await waitInBackground(this.host.clock, next, ac.signal);
      } catch {
        // aborted by rearm or stop
      }
      this.#wait = undefined;
      this.#armedAt = undefined;
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wait?.abort();
    await this.#done;
  }
}
