/**
 * @module Claims and settlements. A claim is a non-durable commit that
 * registers an in-memory lease; a settlement checks that lease (the claim
 * token) and the stored record inside its transaction, so a settlement of
 * a lost claim applies nothing.
 */
import { instruments } from "../telemetry/metrics.js";
import { ClosedError, StoreCorruptedError, ValidationError, ValueNotWarmedError } from "../errors.js";
import { type SpanAttributes, traced, tracingWithinSpan } from "../telemetry/tracing.js";
import { type ClaimTicket, makeClaimedJob, ticketOf } from "./claimed-job.js";
import { ADMISSION_SCAN_BUDGET, admit, hasLimits } from "./admission.js";
import type { SettlementEffects } from "./effects.js";
import type { DeadLetteredEvent } from "./config.js";
import { ClaimLostError, JobRecordDamagedError, PayloadMissingError } from "./errors.js";
import * as K from "./keys.js";
import type { LeaseEntry } from "./lease-registry.js";
import { validateMillis, validatePositiveInt, validateQueueName } from "./names.js";
import type { Finish } from "./notifier.js";
import type { QueueCore } from "./queue-core.js";
import { copyJob, type JobRecord } from "./record.js";
import { DamagedRecord, dropDanglingPending, indexedJobOf, readIndexedJob, setAsideClaimed, setAsidePending } from "./damaged-record.js";
import { bytesEqual } from "../store/bytes-equal.js";
import {
  claimJob,
  completeJob,
  failJob,
  killJob,
  recordAttempt,
  requeueJob,
  writeJob,
  type JobKeys,
  type PreparedEnqueue,
  type TransitionContext,
} from "./transitions.js";
import { Txn } from "./txn.js";
import { emptyObjects, objectsWithRoom } from "../engine/array-kinds.js";
import { recordRateClaim, recordRateConfig, seedRateWindows } from "./rate-records.js";
import { warmJobs } from "./warm.js";
import { heldOncePrepared, holdPrepared } from "./held-settlement-payloads.js";
import type { AckedClaimingNext, ClaimedJob, ClaimNext, DeadLetterOptions, EnqueueOutcome, NackOptions, NackOutcome } from "./types.js";
import { describeValue } from "../option-values.js";

const decoder = new TextDecoder();

/** Whether a payload read failed for good (missing or corrupted), so its job is dead-lettered rather than the batch put back. */
function isUnreadable(f: PromiseSettledResult<unknown>): boolean {
  return f.status === "rejected" && (f.reason instanceof PayloadMissingError || f.reason instanceof StoreCorruptedError);
}

export async function claimBatch(core: QueueCore, queueName: string, max: number, leaseMs?: number): Promise<ClaimedJob[]> {
  // The common path only, in this function: a batch's claim runs about once per run, so its rarer parts (the
  // checks' refusals, damaged records, payloads fetched, a close meanwhile) are functions of their own and
  // the JIT optimizes what is left within a few hundred runs.
  const lease = checkedLease(core, queueName, max, leaseMs);
  const limits = core.limitsOf(queueName);
  // With a limit, jobs it holds back stay pending and the scan looks further, within a budget.
  const scanLimit = hasLimits(limits) ? max + ADMISSION_SCAN_BUDGET : max;
  let ids = pendingIds(core, queueName, scanLimit);
  let now: number;
  let txn: Txn;
  const scan = new ClaimScan();
  const claimed = scan.claimed;
  for (;;) {
    // Scan again after each wait: the scan and the claim must share one synchronous run.
    for (let w = warmJobs(core.engine, ids); w !== undefined; w = warmJobs(core.engine, ids)) {
      if (claimed.length === 0) await w;
      else if (await gaveBackWhileLoading(core, claimed, w)) throw new ClosedError(`queue "${core.name}"`);
      core.checkOpen();
      ids = pendingIds(core, queueName, scanLimit);
    }
    now = core.clock.now();
    txn = new Txn(core.engine);
    const before = claimed.length;
    const damaged = claimPending(core, txn, queueName, ids, max, now, limits, lease, scan);
    if (claimed.length > before) scan.firstClaimAt ??= now;
    // Damaged or missing records were passed: good jobs may wait after the scan, which then goes on to fill the batch.
    if (!damaged || claimed.length === max || (claimed.length > 0 && ids.length < scanLimit)) break;
    // Set aside (and the claims so far) in this commit: the next scan passes them.
    scan.commitSetAside(core, txn);
    ids = pendingIds(core, queueName, scanLimit);
  }
  if (scan.retryAt !== undefined) wakeWhenRateFrees(core, queueName, scan.retryAt);
  if (claimed.length === 0) return [];
  commitClaims(core, txn, queueName, limits, scan, (scan.firstClaimAt ?? now) + lease);
  // Counted until handed out: they hold their claimer's capacity already (see `mayChain`). In this function,
  // not a helper it awaits: no extra await on the path that hands the jobs to the worker.
  core.countClaimsInFlight(queueName, claimed.length);
  try {
    const durable = core.claimableDurable(claimed.map(([r]) => r.id));
    // Nothing to wait for (every claim durable, every payload inline): handed out in this turn, without
    // `allSettled`'s promises and turns. So a claim never promises its caller's callers a turn before its jobs
    // run: a worker may claim, run and settle a job before a reader that enqueued it reads it again.
    // A close that began while the scan waited takes the path below, which gives the jobs back.
    if (durable === undefined && !core.closing && claimed.every(([r]) => r.payloadRef === undefined))
      return claimed.map(([r, e]) => makeClaimedJob(core, core.leases, core.clock, r, e, r.payload, scan.stored.get(r.id)));
    const fetching = fetchedPayloads(core, claimed);
    const waiting = durable === undefined ? fetching : Promise.allSettled([durable, fetching]);
    core.claimsWaiting.add(waiting);
    let fetched: Awaited<typeof fetching>;
    try {
      if (durable !== undefined) await durable;
      fetched = await fetching;
      // A close began meanwhile: it waits for this claim, which gives its jobs back, attempts uncounted.
      if (core.closing) throw givenBackOnClose(core, claimed);
    } finally {
      core.claimsWaiting.delete(waiting);
    }
    // A missing or corrupted payload object never heals: dead-letter that job.
    // Any other failure (the store is unreachable) may pass: put the whole
    // batch back and report it.
    if (fetched.some((f) => f.status === "rejected")) return await afterFailedFetch(core, scan, fetched);
    return fetchedJobs(core, scan, fetched);
  } finally {
    core.countClaimsInFlight(queueName, -claimed.length);
  }
}

/** Commits the claims of `scan` (`txn`), with the queue's rate limit on record, and arms the lease loop for `expiry`, the first lease's end. */
function commitClaims(core: QueueCore, txn: Txn, queueName: string, limits: ReturnType<QueueCore["limitsOf"]>, scan: ClaimScan, expiry: number): void {
  // Also when the queue has no limit left: a removed rate limit must not stay on record for readers.
  recordRateConfig(txn, queueName, limits.rateLimit);
  if (scan.setAside === undefined) core.commitApplied(txn);
  else scan.commitSetAside(core, txn);
  const recordAt = core.foreignCommits;
  for (const c of scan.claimed) c[1].recordAt = recordAt;
  core.loop.rearm(expiry);
}

/** The lease of a claim of up to `max` jobs of `queueName` (`leaseMs`, or the queue's), every argument checked. */
function checkedLease(core: QueueCore, queueName: string, max: number, leaseMs: number | undefined): number {
  core.checkOpen();
  if (core.closing) throw new ClosedError(`queue "${core.name}"`);
  validateQueueName(queueName);
  validatePositiveInt("claimBatch max", max);
  const lease = leaseMs ?? core.configs.get(queueName).leaseMs;
  validatePositiveInt("leaseMs", lease);
  validateMillis("leaseMs", lease);
  return lease;
}

/**
 * What one batch claim's scans found: the claims (with their stored
 * bytes), when a held-back job may be claimed, the jobs set aside for
 * damaged records and when the first claim was made. An object rather than
 * closures over the claim's frame: nothing made per call for the rare cases.
 */
class ClaimScan {
  readonly claimed: [JobRecord, LeaseEntry][] = [];
  readonly stored = new Map<string, Uint8Array | undefined>();
  /** The earliest time a job held back by a limit may be claimed. */
  retryAt: number | undefined = undefined;
  /** Jobs set aside for damaged records, announced once the commit that set them aside is durable. */
  setAside: DeadLetteredEvent[] | undefined = undefined;
  /** When the first of the claims was made: the earliest lease expiry, when a scan went on after damaged jobs. */
  firstClaimAt: number | undefined = undefined;

  heldBack(at: number): void {
    this.retryAt = Math.min(this.retryAt ?? at, at);
  }

  aside(e: DeadLetteredEvent): void {
    (this.setAside ??= []).push(e);
  }

  /** Commits `txn` (durably) and announces the jobs set aside in it once it is durable. */
  commitSetAside(core: QueueCore, txn: Txn): void {
    announceSetAside(core, core.commit(txn, true), this.setAside ?? []);
    this.setAside = undefined;
  }
}

/** The claims' payloads: inline ones as they are, offloaded ones read from the store. */
function fetchedPayloads(core: QueueCore, claimed: readonly [JobRecord, LeaseEntry][]): Promise<PromiseSettledResult<Uint8Array>[]> {
  return Promise.allSettled(claimed.map(([r]) => (r.payloadRef === undefined ? r.payload : core.payloads.read(r.id, r.payloadRef, r.payloadSize))));
}

/** Gives the claims back (a close began while they waited; their attempts uncounted): the error the claim throws. */
function givenBackOnClose(core: QueueCore, claimed: readonly [JobRecord, LeaseEntry][]): ClosedError {
  release(
    core,
    claimed.map(([r, e]) => [r.id, e.token]),
  );
  return new ClosedError(`queue "${core.name}"`);
}

/**
 * The claimed jobs after a payload read failed: a missing or corrupted one
 * is dead-lettered; any other failure puts the rest of the batch back and
 * is thrown.
 */
async function afterFailedFetch(core: QueueCore, scan: ClaimScan, fetched: PromiseSettledResult<Uint8Array>[]): Promise<ClaimedJob[]> {
  const claimed = scan.claimed;
  // Both paths below read the claimed records again; a checkpoint may have paged them out meanwhile.
  // The claims' own: a batch that scanned more than once holds claims of scans before its last.
  const held = claimed.map(([r]) => r.id);
  for (let w = warmJobs(core.engine, held); w !== undefined; w = warmJobs(core.engine, held)) await w;
  const missing = claimed.filter((_, i) => isUnreadable(fetched[i]!));
  if (missing.length > 0)
    killMissing(
      core,
      missing,
      claimed.map(([r], i) => [r.id, fetched[i]!] as const),
    );
  const failure = fetched.find((f) => f.status === "rejected" && !isUnreadable(f));
  if (failure !== undefined) {
    release(
      core,
      claimed.filter(([r]) => !missing.some(([m]) => m.id === r.id)).map(([r, e]) => [r.id, e.token]),
    );
    throw (failure as PromiseRejectedResult).reason;
  }
  return fetchedJobs(core, scan, fetched);
}

/** The claimed jobs whose payloads were read. */
function fetchedJobs(core: QueueCore, scan: ClaimScan, fetched: PromiseSettledResult<Uint8Array>[]): ClaimedJob[] {
  const out: ClaimedJob[] = [];
  scan.claimed.forEach(([r, e], i) => {
    const f = fetched[i]!;
    if (f.status === "fulfilled") out.push(makeClaimedJob(core, core.leases, core.clock, r, e, f.value, scan.stored.get(r.id)));
  });
  return out;
}

/**
 * Claims in `txn` the first `max` of the pending jobs `ids` of `queueName`
 * that its limits admit, adding them to `claimed` (and their stored bytes
 * to `stored`); `heldBack` is told when a held-back job may be claimed.
 * A job whose record is damaged is set aside as dead in `txn` instead
 * (`aside`), and a pending entry whose record is gone dropped. Whether
 * either was: the claims may then be fewer than the good jobs waiting,
 * and the caller commits `txn` and scans again.
 */
function claimPending(
  core: QueueCore,
  txn: Txn,
  queueName: string,
  ids: readonly string[],
  max: number,
  now: number,
  limits: ReturnType<QueueCore["limitsOf"]>,
  lease: number,
  scan: ClaimScan,
): boolean {
  const { claimed, stored } = scan;
  let damaged = false;
  for (const id of ids) {
    if (claimed.length === max) break;
    const r = readIndexedJob(txn, id, queueName);
    if (r === undefined || r instanceof DamagedRecord) {
      damaged = clearBrokenPending(core, txn, core.ctx(), queueName, id, r, ids.length, (e) => scan.aside(e)) || damaged;
      continue;
    }
    if (r.state !== "pending") continue;
    // After a restart the windows start from what the previous owner made durable.
    seedRateWindows(txn, core.leases.windows, limits, r.headers, now);
    const a = admit(core.leases.slots, core.leases.windows, limits, r.headers, now);
    if (!a.admit) {
      if (a.retryAt !== undefined) scan.heldBack(a.retryAt);
      continue;
    }
    // The durable windows ride on this claim's commit: readers elsewhere see the rate limit, a restarted owner keeps counting.
    recordRateClaim(txn, core.leases.windows, limits, r.headers, now);
    const next = claimJob(txn, r, now);
    stored.set(next.id, txn.get(K.jobKey(next.id)));
    claimed.push([next, core.leases.add(next.id, queueName, now + lease, next.cancelRequested === true, a.slots)]);
  }
  return damaged;
}

/**
 * Clears the pending entry of job `id` whose record is damaged (`r`: set
 * aside as dead in `txn`, told to `aside`) or gone (`undefined`: the entry
 * dropped, and logged), as a claim passes such an entry; `scanned`
 * bounds the index entries looked through. Whether it was cleared.
 */
function clearBrokenPending(
  core: QueueCore,
  txn: Txn,
  ctx: TransitionContext,
  queue: string,
  id: string,
  r: DamagedRecord | undefined,
  scanned: number,
  aside: (e: DeadLetteredEvent) => void,
): boolean {
  if (r !== undefined) {
    const e = setAsidePending(txn, core.engine, ctx, queue, r, scanned);
    if (e !== undefined) aside(e);
    return e !== undefined;
  }
  if (!dropDanglingPending(txn, core.engine, queue, id, scanned)) return false;
  core.log.warn({ jobId: id, queue }, `queue "${core.name}": job ${id} of queue "${queue}" was listed pending without a stored record; its entry was dropped`);
  return true;
}

/**
 * Waits for `loading` (records a later scan of a batch claim reads) while
 * the batch holds `claimed` from an earlier commit: a close waits for it
 * too, and the claims are given back when a close began meanwhile
 * (true) or the load failed (rethrown). Left claimed, they waited for
 * their leases, or after the close for the next open's recovery, which
 * counts their attempts.
 */
async function gaveBackWhileLoading(core: QueueCore, claimed: readonly [JobRecord, LeaseEntry][], loading: Promise<void>): Promise<boolean> {
  const giveBack = () =>
    release(
      core,
      claimed.map(([r, e]) => [r.id, e.token]),
    );
  // Given back inside the promise the close waits for: the close goes on only once the claims are released.
  const waiting = loading.then(
    () => {
      if (!core.closing) return false;
      giveBack();
      return true;
    },
    (err: unknown) => {
      giveBack();
      throw err;
    },
  );
  core.claimsWaiting.add(waiting);
  try {
    return await waiting;
  } finally {
    core.claimsWaiting.delete(waiting);
  }
}

/** Tells the dead-letter listeners of the jobs set aside for their damaged records once `commit`, which set them aside, is durable. */
function announceSetAside(core: QueueCore, commit: Promise<void>, events: readonly DeadLetteredEvent[]): void {
  commit.then(
    () => {
      for (const ev of events) {
        core.completions.finished(ev.jobId, { kind: "dead" });
        core.host.deadLettered(ev);
      }
    },
    () => undefined,
  );
}

/** One pending wake-up per rate-limited queue of a queue store: the earliest time a held-back job may be claimed. */
const rateWakes = new WeakMap<QueueCore, Map<string, { at: number; stop: AbortController }>>();

/** Notifies the queue's workers when a rate limit next admits a job it held back; no polling. */
function wakeWhenRateFrees(core: QueueCore, queueName: string, at: number): void {
  let wakes = rateWakes.get(core);
  if (wakes === undefined) {
    wakes = new Map();
    rateWakes.set(core, wakes);
    const all = wakes;
    core.closedSignal.addEventListener("abort", () => {
      for (const w of all.values()) w.stop.abort();
      all.clear();
    });
  }
  const current = wakes.get(queueName);
  if (current !== undefined && current.at <= at) return;
  current?.stop.abort();
  const stop = new AbortController();
  const mine = { at, stop };
  wakes.set(queueName, mine);
  const map = wakes;
  core.clock.waitUntil(at, stop.signal).then(
    () => {
      if (map.get(queueName) === mine) map.delete(queueName);
      core.work.notify(queueName);
    },
    () => undefined,
  );
}

/** The ids of the first `max` pending jobs of `queueName`, in claim order. */
function pendingIds(core: QueueCore, queueName: string, max: number): string[] {
  const ids: string[] = [];
  for (const [, idBytes] of core.engine.scan({ prefix: K.pendingPrefix(queueName), limit: max })) ids.push(decoder.decode(idBytes));
  return ids;
}

/**
 * Dead-letters claimed jobs whose payload object is gone or corrupted, and
 * tells the dead-letter listeners. A job whose record was damaged
 * meanwhile is set aside for that instead: thrown here, it failed the
 * whole batch claim and left the jobs after it claimed with no lease.
 */
function killMissing(core: QueueCore, claims: [JobRecord, LeaseEntry][], fetched: ReadonlyArray<readonly [string, PromiseSettledResult<unknown>]>): void {
  const corrupted = new Set(fetched.filter(([, f]) => f.status === "rejected" && f.reason instanceof StoreCorruptedError).map(([id]) => id));
  if (core.isClosed) return;
  const txn = new Txn(core.engine);
  const ctx = core.ctx();
  const events: DeadLetteredEvent[] = [];
  for (const [claimedRecord, e] of claims) {
    if (!core.leases.holds(claimedRecord.id, e.token)) continue;
    core.leases.remove(claimedRecord.id);
    const r = readIndexedJob(txn, claimedRecord.id, claimedRecord.queue);
    if (r instanceof DamagedRecord) {
      events.push(setAsideClaimed(txn, ctx, K.claimedKey(claimedRecord.queue, r.id), claimedRecord.queue, r));
      continue;
    }
    if (r === undefined || r.state !== "claimed") continue;
    const bad = corrupted.has(r.id);
    const error = `payload object ${r.payloadRef ?? ""} is ${bad ? "corrupted (checksum mismatch)" : "missing"}`;
    recordAttempt(txn, r, ctx.now, "dead_lettered", error);
    const dead = killJob(txn, ctx, r, error);
    events.push({ jobId: r.id, queueName: r.queue, reason: bad ? "payload_corrupted" : "payload_missing", lastError: dead.lastError ?? error });
  }
  core.commit(txn, true).then(
    () => {
      for (const ev of events) {
        core.completions.finished(ev.jobId, { kind: "dead" });
        core.host.deadLettered(ev);
      }
    },
    () => undefined,
  );
}

/**
 * Puts claims this process could not hand out (a payload read failed) back
 * to pending, undoing their attempt. Non-durable like the claim.
 */
function release(core: QueueCore, claims: [string, number][]): void {
  if (core.isClosed) return;
  // A record a checkpoint paged out is loaded first, the claims kept meanwhile: reading it cold threw after
  // the lease was dropped, leaving the job claimed with no lease to expire until a reopen. A load that
  // fails leaves the lease, which expires and redelivers the job.
  const warming = warmJobs(
    core.engine,
    claims.filter(([id, token]) => core.leases.holds(id, token)).map(([id]) => id),
  );
  if (warming !== undefined) {
    const loading: Promise<void> = warming
      .then(
        () => release(core, claims),
        () => undefined,
      )
      // No caller is left to throw to: a failure after the load (the engine failed) is logged, never unhandled.
      .catch((err: unknown) =>
        core.log.error({ err }, `queue "${core.name}": giving back a claim failed; the job returns when its lease expires or the queue is reopened`),
      )
      .finally(() => core.releasesLoading.delete(loading));
    core.releasesLoading.add(loading);
    return;
  }
  const txn = new Txn(core.engine);
  const queues = new Set<string>();
  let aside: DeadLetteredEvent[] | undefined;
  for (const [id, token] of claims) {
    const lease = core.leases.holds(id, token);
    if (lease === undefined) continue;
    core.leases.remove(id);
    const r = readIndexedJob(txn, id, lease.queue);
    if (r instanceof DamagedRecord) {
      // Thrown here, it left this and the other claims given back claimed with no lease until a reopen.
      (aside ??= []).push(setAsideClaimed(txn, core.ctx(), K.claimedKey(lease.queue, id), lease.queue, r));
      continue;
    }
    if (r === undefined || r.state !== "claimed") continue;
    const back = copyJob(r);
    back.state = "pending";
    back.attempts = r.attempts - 1;
    back.claimedAt = undefined;
    writeJob(txn, back, r);
    queues.add(r.queue);
  }
  if (aside === undefined) core.commitApplied(txn);
  else announceSetAside(core, core.commit(txn, true), aside);
  for (const q of queues) core.work.notify(q);
}

/**
 * `historyless`: the settled claim vouches that the job has no attempt
 * history (see `ClaimTicket.historyless`); `keys`: the job's engine keys as
 * its claim wrote them, when it kept them (see `JobKeys`).
 */
type Transition = (
  txn: Txn,
  ctx: TransitionContext,
  r: JobRecord,
  historyless: boolean,
  keys: JobKeys | undefined,
) => { record: JobRecord | undefined; applyEffects: boolean; finish?: Finish };

/**
 * The shared settlement: checks the claim is still held, applies the
 * transition and (when it says so) the effects in one durable commit.
 * Throws `ClaimLostError` and applies nothing otherwise.
 */
function settle(core: QueueCore, job: ClaimedJob, effects: SettlementEffects | undefined, transition: Transition, claimNext?: ClaimNext): Promise<Settled> {
  // A settlement span only under the span of the job's processing (a step attempt), not as a trace of its own.
  if (!tracingWithinSpan()) return settleNow(core, job, effects, transition, claimNext);
  return settleTraced(core, job, effects, transition, claimNext);
}

/** `settle` under a settlement span: apart, so that the untraced call makes no context for the span's closure. */
function settleTraced(
  core: QueueCore,
  job: ClaimedJob,
  effects: SettlementEffects | undefined,
  transition: Transition,
  claimNext?: ClaimNext,
): Promise<Settled> {
  return traced(
    "taquba.settle",
    settleAttributes(job),
    "internal",
    () => settleNow(core, job, effects, transition, claimNext),
    settledAttributes,
    settleErrorKind,
  );
}

/**
 * The stored record of the claimed job `id`, whose claim still holds. When
 * the store still holds the bytes its claim wrote, the record the claim
 * kept is used instead of decoding them again; only for a settlement that
 * does not write the record's payload back (an ack that deletes the job),
 * since the kept record's payload is the array the claim was handed, not a
 * decoded copy. Not even read while nothing but this queue committed since
 * the claim and no cancel wrote the record (`LeaseEntry.recordAt`); else
 * compared by content: the engine keeps its own copy of a job record (or
 * packs it), so the bytes it hands back are never the array the claim wrote.
 */
function heldRecord(core: QueueCore, txn: Txn, id: string, ticket: ClaimTicket, writesPayload: boolean): JobRecord | DamagedRecord | undefined {
  const kept = ticket.claimedBytes;
  if (!writesPayload && kept !== undefined && ticket.claim.recordAt === core.foreignCommits) return ticket.claimedRecord;
  const key = ticket.keys?.job ?? K.jobKey(id);
  const bytes = txn.get(key);
  if (bytes === undefined) return undefined;
  // Not copied: transitions build new records and never change the one they are given.
  if (!writesPayload && kept !== undefined && (bytes === kept || bytesEqual(bytes, kept))) return ticket.claimedRecord;
  // Settled as it reads, another job's record would settle that job, and another queue's move that queue's stats.
  return indexedJobOf(key, bytes, id, ticket.claim.queue);
}

/**
 * Sets aside in `txn` the job `id` this process holds claimed whose record
 * a settlement found damaged, and submits that commit (durable): the
 * settlement and its effects apply nothing, its caller gets a
 * `JobRecordDamagedError` once the job is dead.
 */
function setAsideHeld(
  core: QueueCore,
  txn: Txn,
  ctx: TransitionContext,
  id: string,
  ticket: ClaimTicket,
  damaged: DamagedRecord,
  claiming: boolean,
): Submitted {
  const queue = ticket.claim.queue;
  const event = setAsideClaimed(txn, ctx, ticket.keys?.claimed ?? K.claimedKey(queue, id), queue, damaged);
  const commit = core.commit(txn, true);
  const appliedAt = core.commits;
  core.leases.remove(id);
  const keep = core.configs.get(queue).deadRetentionMs;
  if (keep !== null) core.loop.rearm(ctx.now + keep);
  const error = new JobRecordDamagedError(id, damaged.detail, true);
  return new Submitted(core, id, queue, commit, NOTHING_SETTLED, [], [], ctx.now, 0, undefined, undefined, claiming, appliedAt, { event, error });
}

/** What a settlement that set its job aside applied of its own: nothing. */
const NOTHING_SETTLED: ReturnType<Transition> = { record: undefined, applyEffects: false };

/** `record`: what the job became; left out with `claimNext` (an ack, whose record nobody reads), which answers with `next` instead. */
type Settled = { record?: JobRecord | undefined; enqueued: EnqueueOutcome[]; next?: ClaimedJob | undefined };

/** A job a settlement enqueued already claimed for its settler (see `ackClaimingNext`). */
interface Chained {
  record: JobRecord;
  entry: LeaseEntry;
  payload: Uint8Array;
  /** `payload` is the job's own array (`PreparedEnqueue.payloadOwned`): handed out without a copy. */
  payloadOwned: boolean;
  index: number;
  /** The bytes of `record` the settlement stored. */
  stored: Uint8Array | undefined;
  keys: JobKeys | undefined;
}

/**
 * Whether the settlement may enqueue `claimNext`'s job already claimed: it
 * is due now and not debounced, its queue has no concurrency or rate limit
 * and no flow rules (admission then decides, at a claim), and the settler
 * reserves the capacity for it, leaving room for the jobs claimed and not
 * yet handed out and for every job pending on its queue that a claim would
 * take before it (priority, then FIFO: a chained run must not overtake
 * waiting work). When the settler has no room for those, it may still
 * take the job when none pending would be claimed before it. Called in the
 * settlement's turn.
 */
function mayChain(core: QueueCore, txn: Txn, ctx: TransitionContext, prepared: readonly PreparedEnqueue[], claimNext: ClaimNext): boolean {
  const now = ctx.now;
  const item = prepared[claimNext.index];
  if (item === undefined) return false;
  if (item.opts.runAt !== undefined && item.opts.runAt > now) return false;
  const cfg = core.configs.get(item.queueName);
  // Limits (the queue's own and its flow rules) are decided by admission at a claim; a debounced job waits for its window.
  if (core.hasLimits(item.queueName)) return false;
  if (item.opts.debounce !== undefined || cfg.debounce !== undefined) return false;
  const inFlight = core.claimsInFlight(item.queueName);
  // None pending (the stats count every pending job): nothing to look for.
  const pending = txn.pendingCount(item.queueName);
  if (pending === 0) return reserved(claimNext, inFlight);
  // Room for every pending job as well (a bound on those a claim takes first): the worker's next claim takes
  // them all, so none waits longer for this one. Jobs pending while a claim waits for durability are common.
  if (reserved(claimNext, inFlight + pending)) return true;
  // The new job takes the newest seq: any pending job of the same or a better priority goes first.
  const bound = K.pendingKey(item.queueName, item.opts.priority ?? cfg.defaultPriority, "~");
  const prefix = K.pendingPrefix(item.queueName);
  // The jobs set aside on the way go in `txn` (a callback made only here: every chained step passed one before).
  if (pendingAhead(core, txn, ctx, item.queueName, prefix, bound, setAsideIn(txn))) return false;
  for (const op of txn.batch.ops) if (op.kind === "put" && op.key.startsWith(prefix) && op.key < bound) return false;
  return reserved(claimNext, inFlight);
}

/** A callback that notes a job set aside in `txn`: made in a function of its own, so `mayChain` makes no context on the calls that never get here. */
function setAsideIn(txn: Txn): (e: DeadLetteredEvent) => void {
  return (e) => {
    (txn.setAside ??= []).push(e);
  };
}

/** Per queue store, the last pending job `pendingAhead` found readable ahead of a chained job, and its record's bytes then. */
const headsChecked = new WeakMap<QueueCore, { id: string; queue: string; bytes: Uint8Array }>();

/** Pending entries ahead of a chained job `mayChain` looks through for one a claim would take; past them it leaves the job pending. */
const CHAIN_AHEAD_CHECKS = 16;

/**
 * Whether a job pending on `queue` (entries under `prefix`) before `bound`
 * would be claimed before the chained job. An entry whose record is gone
 * is dropped in `txn`, one whose record is damaged set aside (`aside`), as
 * a claim does: otherwise each such entry refused one chain, for nothing.
 * True as well when the first `CHAIN_AHEAD_CHECKS` entries ahead are all
 * such, or a record ahead is paged out: whether a claim would take it
 * first is not known in this turn.
 */
function pendingAhead(
  core: QueueCore,
  txn: Txn,
  ctx: TransitionContext,
  queue: string,
  prefix: string,
  bound: string,
  aside: (e: DeadLetteredEvent) => void,
): boolean {
  let checked = 0;
  for (const [key, idBytes] of core.engine.scan({ prefix, limit: CHAIN_AHEAD_CHECKS })) {
    if (key >= bound) return false;
    checked++;
    const id = decoder.decode(idBytes);
    const recordKey = K.jobKey(id);
    let bytes: Uint8Array | undefined;
    try {
      bytes = txn.get(recordKey);
    } catch (err) {
      if (err instanceof ValueNotWarmedError) return true;
      throw err;
    }
    // The same job heads the queue for many chains in a row while jobs wait: decoded once, then compared.
    const known = headsChecked.get(core);
    if (bytes !== undefined && known !== undefined && known.id === id && known.queue === queue && bytesEqual(known.bytes, bytes)) return true;
    const r = bytes === undefined ? undefined : indexedJobOf(recordKey, bytes, id, queue);
    if (r === undefined || r instanceof DamagedRecord) {
      if (!clearBrokenPending(core, txn, ctx, queue, id, r, CHAIN_AHEAD_CHECKS, aside)) return true;
      continue;
    }
    // A record no longer pending: its entry is stale, and a claim passes over it too.
    if (r.state === "pending") {
      headsChecked.set(core, { id, queue, bytes: bytes!.slice() });
      return true;
    }
  }
  // Every entry checked was passed over: ahead of the chained job only when the scan stopped short of the rest.
  return checked === CHAIN_AHEAD_CHECKS;
}

/**
 * The caller's answer to `reserve`, which must be exactly `true` or `false`:
 * a truthy stand-in (1, "no", a promise) would take capacity it may not
 * have. Anything else throws before the settlement's commit is built.
 */
function reserved(claimNext: ClaimNext, waiting: number): boolean {
  const answer: unknown = claimNext.reserve(waiting);
  if (answer === true || answer === false) return answer;
  throw new ValidationError(
    `ClaimNext.reserve must answer true (take the job) or false (leave it pending), got ${describeValue(answer)}; the job was not acked and its claim is still held`,
  );
}

function settleAttributes(job: ClaimedJob): SpanAttributes {
  return { "taquba.queue": job.queueName, "taquba.job.id": job.id, "taquba.attempt": job.attempt };
}

/** The settlement span's outcome: what the job became. */
function settledAttributes(s: Settled): SpanAttributes {
  const state = s.record?.state;
  return { "taquba.outcome": state === "dead" ? "dead_lettered" : state === "pending" || state === "scheduled" ? "retried" : "completed" };
}

function settleErrorKind(e: unknown): { kind: string } {
  return { kind: e instanceof ClaimLostError ? "claim_lost" : e instanceof ClosedError ? "closed" : "commit" };
}

function settleNow(core: QueueCore, job: ClaimedJob, effects: SettlementEffects | undefined, transition: Transition, claimNext?: ClaimNext): Promise<Settled> {
  try {
    return settledAfter(startSettlement(core, job, effects, transition, claimNext));
  } catch (err) {
    return Promise.reject(err);
  }
}

/** Waits for a started settlement's commit and ends it (see `Submitted`). */
function settledAfter(started: Submitted | Promise<Submitted>): Promise<Settled> {
  return started instanceof Submitted ? settledInTurn(started) : started.then(settledInTurn);
}

/**
 * Checks the claim and builds and submits the settlement's commit: in the
 * caller's turn when nothing needs loading (the common case), else after
 * loading an offloaded payload or a paged-out record.
 */
function startSettlement(
  core: QueueCore,
  job: ClaimedJob,
  effects: SettlementEffects | undefined,
  transition: Transition,
  claimNext: ClaimNext | undefined,
): Submitted | Promise<Submitted> {
  core.checkOpen();
  const ticket = ticketOf(job);
  if (ticket === undefined) throw new ValidationError("settle only ClaimedJobs returned by a queue's claim, not copies of them");
  if (ticket.owner !== core) throw new ClaimLostError(job.id, "it was claimed through another Queue instance, such as one before a restart");
  // Read once: an object inheriting from a job can answer each read with another id, and a later read would
  // settle a job this claim's token does not hold (the check below reads the same value the settlement acts on).
  const id = job.id;
  // Awaited only when a payload is offloaded: a settlement otherwise builds its commit in the caller's turn.
  const preparing = effects === undefined ? emptyObjects<PreparedEnqueue>() : core.prepare(effects.enqueues);
  if (!Array.isArray(preparing)) return startPrepared(core, id, ticket, effects, transition, claimNext, preparing);
  const s = submitSettlement(core, id, ticket, effects, transition, claimNext, preparing);
  return s !== undefined ? s : startPrepared(core, id, ticket, effects, transition, claimNext, preparing, true);
}

/** `startSettlement` once the enqueues are prepared, loading the job's record while a checkpoint has it paged out. */
async function startPrepared(
  core: QueueCore,
  id: string,
  ticket: ClaimTicket,
  effects: SettlementEffects | undefined,
  transition: Transition,
  claimNext: ClaimNext | undefined,
  preparing: readonly PreparedEnqueue[] | Promise<readonly PreparedEnqueue[]>,
  cold = false,
): Promise<Submitted> {
  // Copied before the first await: an item built for a commit in the caller's turn holds the caller's array,
  // which its code may change or detach once this awaits (see held-settlement-payloads).
  const held = Array.isArray(preparing)
    ? holdOrDiscard(core, preparing as readonly PreparedEnqueue[])
    : heldOncePrepared(effects?.enqueues ?? [], preparing as Promise<readonly PreparedEnqueue[]>);
  const prepared = Array.isArray(held) ? held : await held;
  for (let warm = cold; ; warm = true) {
    // Read first, loaded only when a checkpoint paged the record out (a cold read changes nothing):
    // warming every settlement's record first cost a lookup of its own. Then read again.
    if (warm) {
      try {
        for (let w = warmJobs(core.engine, [id]); w !== undefined; w = warmJobs(core.engine, [id])) await w;
      } catch (err) {
        // No commit follows: the enqueues' caller ids stop holding off draws and their offloaded payloads are deleted,
        // or every failed load would keep one more in flight for the life of the queue.
        core.discardUnused(prepared, undefined);
        throw err;
      }
    }
    const s = submitSettlement(core, id, ticket, effects, transition, claimNext, prepared);
    if (s !== undefined) return s;
  }
}

/** `holdPrepared`, discarding the prepared enqueues when a payload's bytes are gone: no commit follows. */
function holdOrDiscard(core: QueueCore, prepared: readonly PreparedEnqueue[]): readonly PreparedEnqueue[] {
  try {
    return holdPrepared(prepared);
  } catch (err) {
    core.discardUnused(prepared, undefined);
    throw err;
  }
}

/**
 * Builds the settlement's transaction and submits its commit, all in this
 * turn; undefined (nothing done) when the job's record is paged out. The
 * prepared enqueues the settlement does not use are discarded, except when
 * it returns undefined (they are the next try's).
 */
function submitSettlement(
  core: QueueCore,
  id: string,
  ticket: ClaimTicket,
  effects: SettlementEffects | undefined,
  transition: Transition,
  claimNext: ClaimNext | undefined,
  prepared: readonly PreparedEnqueue[],
): Submitted | undefined {
  let outcomes: EnqueueOutcome[] | undefined;
  let cold = false;
  try {
    core.checkOpen();
    const txn = new Txn(core.engine);
    let r: JobRecord | DamagedRecord | undefined;
    try {
      // The job's id must be its claim's (a token holds only its own job); the queue is the claim's, not the
      // job's field, which an object inheriting from the job could shadow.
      r = core.leases.holdsEntry(ticket.claim, id)
        ? heldRecord(core, txn, id, ticket, transition !== ackTransition || ackKeepsRecord(core, ticket.claim.queue))
        : undefined;
    } catch (err) {
      if (!(err instanceof ValueNotWarmedError)) throw err;
      cold = true;
      return undefined;
    }
    const ctx = core.ctx(prepared);
    if (r instanceof DamagedRecord) return setAsideHeld(core, txn, ctx, id, ticket, r, claimNext !== undefined);
    if (r === undefined || r.state !== "claimed") throw new ClaimLostError(id);
    const result = transition(txn, ctx, r, ticket.historyless === true, ticket.keys);
    let chained: Chained | undefined;
    if (!result.applyEffects) outcomes = emptyObjects();
    else if (claimNext !== undefined && mayChain(core, txn, ctx, prepared, claimNext)) {
      // Filled in index order, so packed, into room for them all (see array-kinds).
      const all = objectsWithRoom<EnqueueOutcome>(prepared.length);
      const inserted = core.applyEffectsClaiming(txn, ctx, effects, prepared, claimNext.index, all);
      // Only once every insert went in: the outcomes of a transaction that threw would spare its offloaded payloads.
      outcomes = all;
      const rec = inserted?.record;
      if (rec !== undefined && rec.state === "claimed") {
        const keys = inserted!.keys;
        const stored = txn.get(keys?.job ?? K.jobKey(rec.id));
        const lease = claimNext.leaseMs ?? core.configs.get(rec.queue).leaseMs;
        const item = prepared[claimNext.index]!;
        chained = {
          record: rec,
          entry: core.leases.add(rec.id, rec.queue, ctx.now + lease, false),
          payload: item.payload,
          payloadOwned: item.payloadOwned === true,
          index: claimNext.index,
          stored,
          keys,
        };
      }
    } else outcomes = core.applyEffects(txn, ctx, effects, prepared);
    const removedRef = result.record === undefined && r.payloadRef !== undefined ? r.payloadRef : undefined;
    const commit = core.commit(txn, true, chained?.record.id);
    // Noted before anything else runs: a commit after it is one this settlement's writes may no longer be read from.
    const appliedAt = core.commits;
    if (txn.setAside !== undefined) announceSetAside(core, commit, txn.setAside);
    if (chained?.stored !== undefined) chained.entry.recordAt = core.foreignCommits;
    // Removed in the same turn as the commit, so the reaper never sees a settled claim.
    core.leases.remove(id);
    if (chained !== undefined) core.loop.rearm(chained.entry.expiresAt);
    // The attempt the settled record counted, for the dead-letter log: the record's, not the job's field.
    return new Submitted(
      core,
      id,
      ticket.claim.queue,
      commit,
      result,
      outcomes,
      prepared,
      ctx.now,
      r.attempts,
      removedRef,
      chained,
      claimNext !== undefined,
      appliedAt,
    );
  } finally {
    if (!cold) core.discardUnused(prepared, outcomes);
  }
}

/** An ack submitted in its caller's turn (`ackClaimingNextInTurn`): await `durable` once, then call `settled()`, or `failed(err)` when it rejected, at once. */
export interface SubmittedAck {
  readonly durable: Promise<void>;
  settled(): AckedClaimingNext | Promise<AckedClaimingNext>;
  failed(err: unknown): void;
  /**
   * Instead of awaiting `durable`: calls `end.durable()` once the commit is
   * durable (the holder then calls `settled()` there), or `end.failed(err)`
   * when it failed (the holder then calls `failed(err)` there). The acks of
   * one WAL group share one reaction, which ends them in the order they
   * were submitted; a close that begins meanwhile still finds each one's
   * hand-out run when it sees the commit settle.
   */
  whenDurable?(end: DurableEnd): void;
  /**
   * Whether no commit of the queue was applied after this settlement's: the
   * state then holds what it wrote, so a value token read now is that of
   * the bytes it put (see `Queue.kvTokenNow`).
   */
  nothingCommittedSince?(): boolean;
}

/** What `SubmittedAck.whenDurable` calls when the ack's commit settles. Neither may throw: the other acks of the group are ended in the same reaction. */
export interface DurableEnd {
  durable(): void;
  failed(err: unknown): void;
}

/** Per WAL group (the commit promise the engine hands every commit of the group), the acks waiting on it, in submission order. */
const groupEnds = new Map<Promise<void>, DurableEnd[]>();

/**
 * Ends `end` when `durable` settles: the first ack of a group attaches the
 * one reaction that ends all of them (an await per ack cost each one a
 * reaction, its closures and a turn of its own).
 */
function endWhenDurable(durable: Promise<void>, end: DurableEnd): void {
  const ends = groupEnds.get(durable);
  if (ends !== undefined) {
    ends.push(end);
    return;
  }
  const group = [end];
  groupEnds.set(durable, group);
  durable.then(
    () => endGroup(durable, group, undefined, false),
    (err: unknown) => endGroup(durable, group, err, true),
  );
}

/** Ends every ack of `group`, each on its own: one that throws (which it must not) neither stops the others nor is lost. */
function endGroup(durable: Promise<void>, group: DurableEnd[], err: unknown, failed: boolean): void {
  groupEnds.delete(durable);
  let thrown: { error: unknown } | undefined;
  for (const end of group) {
    try {
      if (failed) end.failed(err);
      else end.durable();
    } catch (error) {
      thrown ??= { error };
    }
  }
  // Rejects the reaction's own promise, which nothing awaits: reported as an unhandled rejection.
  if (thrown !== undefined) throw thrown.error;
}

/**
 * Ends a settlement submitted in its caller's turn (a `SubmittedAck`, or the
 * queue's own `Submitted`): awaits its commit, then `settled()`; when the
 * commit failed, `failed(err)` and the error again. Nothing else awaited in
 * between, as `Submitted` requires.
 */
export async function settledInTurn<T>(s: { readonly durable: Promise<void>; settled(): T | Promise<T>; failed(err: unknown): void }): Promise<T> {
  try {
    await s.durable;
  } catch (err) {
    s.failed(err);
    throw err;
  }
  return s.settled();
}

/**
 * A settlement whose commit is submitted. Its holder awaits `durable` once
 * and then calls `settled()`, or `failed(err)` when it rejected, at once
 * (no other await between): a close waits for a chained claim's commit and
 * counts on its hand-out having run when that commit settles.
 */
export class Submitted {
  #chained: Chained | undefined;
  readonly #waiting: Promise<void> | undefined;

  constructor(
    private readonly core: QueueCore,
    private readonly id: string,
    private readonly queue: string,
    /** The settlement's commit: resolves when durable. */
    readonly durable: Promise<void>,
    private readonly result: ReturnType<Transition>,
    private readonly outcomes: EnqueueOutcome[],
    private readonly prepared: readonly PreparedEnqueue[],
    private readonly now: number,
    private readonly settledAttempt: number,
    private readonly removedRef: string | undefined,
    chained: Chained | undefined,
    private readonly claiming: boolean,
    /** The queue's commit count right after this settlement's commit (`QueueCore.commits`). */
    private readonly appliedAt: number,
    /** The job's record was found damaged: the commit set it aside, and `settled()` throws `error`. */
    private readonly setAside?: { event: DeadLetteredEvent; error: JobRecordDamagedError },
  ) {
    this.#chained = chained;
    // A chained claim waits for its commit like any claim: a close that begins meanwhile waits for it.
    // The commit's own promise, counted: no promise and reaction of its own per chained step.
    this.#waiting = chained === undefined ? undefined : durable;
    if (this.#waiting !== undefined) core.claimsWaiting.add(this.#waiting);
  }

  /** See `SubmittedAck.whenDurable`. */
  whenDurable(end: DurableEnd): void {
    endWhenDurable(this.durable, end);
  }

  /** See `SubmittedAck.nothingCommittedSince`. */
  nothingCommittedSince(): boolean {
    return this.core.commits === this.appliedAt;
  }

  /** The commit failed: the claim of a job that never became durable goes with it. */
  failed(_err: unknown): void {
    const chained = this.#chained;
    this.#stopWaiting();
    if (chained !== undefined && this.core.leases.holdsEntry(chained.entry, chained.record.id)) this.core.leases.remove(chained.record.id);
  }

  /** The commit is durable: hands out the chained job and tells everyone else what the settlement did. */
  settled(): Settled | Promise<Settled> {
    const core = this.core;
    if (this.setAside !== undefined) {
      const { event, error } = this.setAside;
      core.completions.finished(this.id, { kind: "dead" });
      core.host.deadLettered(event);
      core.log.warn({ jobId: this.id, queue: this.queue }, `queue "${core.name}": ${error.message}`);
      throw error;
    }
    let chained = this.#chained;
    // A close began meanwhile: the job goes back, attempt uncounted, rather than out to a caller no one lets settle it.
    if (chained !== undefined && core.closing) {
      try {
        release(core, [[chained.record.id, chained.entry.token]]);
      } catch (err) {
        this.failed(err);
        throw err;
      }
      chained = undefined;
    }
    this.#stopWaiting();
    // Handed out only now that the settlement that enqueued it is durable, and only while its lease holds.
    const next =
      chained !== undefined && !core.isClosed && core.leases.holdsEntry(chained.entry, chained.record.id)
        ? makeClaimedJob(
            core,
            core.leases,
            core.clock,
            chained.record,
            chained.entry,
            chained.payload,
            chained.stored,
            true,
            chained.keys,
            chained.payloadOwned,
          )
        : undefined;
    if (this.removedRef !== undefined) return this.#announceAfterDelete(this.removedRef, next, chained?.index);
    return this.#announce(next, chained?.index);
  }

  /** `#announce` once the removed payload object is deleted: apart, so `settled()` makes no context for its closure. */
  #announceAfterDelete(ref: string, next: ClaimedJob | undefined, chainedIndex: number | undefined): Promise<Settled> {
    return this.core.payloads.deleteAll([ref]).then(() => this.#announce(next, chainedIndex));
  }

  #stopWaiting(): void {
    if (this.#waiting !== undefined) this.core.claimsWaiting.delete(this.#waiting);
    this.#chained = undefined;
  }

  #announce(next: ClaimedJob | undefined, chainedIndex: number | undefined): Settled {
    const core = this.core;
    const { result, outcomes, id } = this;
    const rec = result.record;
    if (rec?.state === "scheduled") core.loop.rearm(rec.runAt!);
    if (rec?.state === "pending") core.work.notify(rec.queue);
    if (rec?.retainUntil !== undefined) core.loop.rearm(rec.retainUntil);
    if (result.finish) core.completions.finished(id, result.finish);
    if (result.finish?.kind === "dead") {
      const queue = this.queue;
      const attempt = this.settledAttempt;
      instruments()?.deadLetters.add(1, { "taquba.queue": queue });
      core.log.error(
        { jobId: id, queue, attempt, lastError: rec?.lastError },
        `queue "${core.name}": job ${id} of queue "${queue}" was dead-lettered after attempt ${attempt}`,
      );
    }
    if (result.applyEffects) core.announceInserted(this.prepared, outcomes, this.now, chainedIndex);
    // For `ackClaimingNext` the shape it answers with, so it can hand this promise on as it is.
    if (this.claiming) return { enqueued: outcomes, next };
    return { record: rec, enqueued: outcomes };
  }
}

const ackTransition: Transition = (txn, ctx, r, historyless, keys) => {
  // Without done retention the history goes with the record, so skip writing it.
  if (ctx.config(r.queue).doneRetentionMs !== undefined) {
    recordAttempt(txn, r, ctx.now, "completed");
  }
  return { record: completeJob(txn, ctx, r, historyless, keys), applyEffects: true, finish: { kind: "done" } };
};

/** Whether an ack of a job of `queue` writes its record back (as a done record) rather than deleting it. */
function ackKeepsRecord(core: QueueCore, queue: string): boolean {
  return core.configs.get(queue).doneRetentionMs !== undefined;
}

export async function ack(core: QueueCore, job: ClaimedJob, effects?: SettlementEffects): Promise<EnqueueOutcome[]> {
  const res = await settle(core, job, effects, ackTransition);
  return res.enqueued;
}

/**
 * An ack whose enqueue at `claimNext.index` is written already claimed by
 * the caller, in the ack's own commit, when `mayChain` allows it: one
 * commit instead of the ack, then a claim. The claimed job is handed out
 * once that commit is durable, with a lease like any claim's (it expires
 * and the job is redelivered when the caller never settles it; a crash
 * leaves it claimed and recovery requeues it). Otherwise the job is
 * enqueued pending as by `ack`.
 */
export function ackClaimingNext(core: QueueCore, job: ClaimedJob, effects: SettlementEffects, claimNext: ClaimNext): Promise<AckedClaimingNext> {
  try {
    checkClaimNext(effects, claimNext);
  } catch (err) {
    // Rejected, not thrown at the call, as every other refusal of a settlement is.
    return Promise.reject(err);
  }
  // The settlement's own promise, not an async frame that awaits it only to reshape it:
  // with `claimNext` it settles with `{ enqueued, next }` (see `Submitted.settled`).
  return settle(core, job, effects, ackTransition, claimNext) as Promise<AckedClaimingNext>;
}

/**
 * `ackClaimingNext` for a caller that awaits the commit in its own frame:
 * when the settlement can be built in this turn (nothing to load, no
 * settlement span), its `Submitted` (await `durable`, then call `settled()`
 * or `failed(err)`, see there), else the promise `ackClaimingNext` gives.
 * Never throws: a refusal is a rejected promise. Taken by every step that
 * continues its run at once; it saves the step an async frame, a promise
 * and a turn.
 */
export function ackClaimingNextInTurn(
  core: QueueCore,
  job: ClaimedJob,
  effects: SettlementEffects,
  claimNext: ClaimNext,
): SubmittedAck | Promise<AckedClaimingNext> {
  try {
    checkClaimNext(effects, claimNext);
  } catch (err) {
    return Promise.reject(err);
  }
  if (tracingWithinSpan()) return settle(core, job, effects, ackTransition, claimNext) as Promise<AckedClaimingNext>;
  try {
    const started = startSettlement(core, job, effects, ackTransition, claimNext);
    // With `claimNext`, `settled()` answers `{ enqueued, next }`.
    return started instanceof Submitted ? (started as unknown as SubmittedAck) : (settledAfter(started) as Promise<AckedClaimingNext>);
  } catch (err) {
    return Promise.reject(err);
  }
}

/** Refuses a `claimNext` that cannot be used with `effects`. Checked before its fields are read: a TypeError from inside the settlement would not say what was wrong. */
function checkClaimNext(effects: SettlementEffects, claimNext: ClaimNext): void {
  if (claimNext === null || typeof claimNext !== "object" || typeof claimNext.reserve !== "function") {
    throw new ValidationError(`ackClaimingNext takes a ClaimNext { index, leaseMs?, reserve(waiting) }, got ${describeValue(claimNext)}`);
  }
  if (!Number.isInteger(claimNext.index) || claimNext.index < 0 || claimNext.index >= effects.enqueues.length) {
    throw new ValidationError(
      `ackClaimingNext's index must name one of the effects' ${effects.enqueues.length} enqueues, got ${describeValue(claimNext.index)}`,
    );
  }
  if (claimNext.leaseMs !== undefined) {
    validatePositiveInt("leaseMs", claimNext.leaseMs);
    validateMillis("leaseMs", claimNext.leaseMs);
  }
}

/**
 * Gives back a claim its holder will not work (a worker shutting down):
 * the job returns to pending with the attempt uncounted. Not durable, like
 * the claim; nothing happens when the claim already ended.
 */
export function releaseClaim(core: QueueCore, job: ClaimedJob): void {
  const ticket = ticketOf(job);
  if (ticket === undefined || ticket.owner !== core) return;
  release(core, [[job.id, ticket.claim.token]]);
}

export async function nack(core: QueueCore, job: ClaimedJob, error: string, effects?: SettlementEffects, opts: NackOptions = {}): Promise<NackOutcome> {
  const message = String(error);
  const retryAfterMs = validateRetryAfter(opts.retryAfterMs);
  if (opts.countAttempt === false) return nackUncounted(core, job, message, retryAfterMs);
  const res = await settle(core, job, effects, (txn, ctx, r) => {
    const { record, dead } = failJob(txn, ctx, r, message, retryAfterMs);
    recordAttempt(txn, r, ctx.now, dead ? "dead_lettered" : "retried", message, opts.cause);
    return dead ? { record, applyEffects: true, finish: { kind: "dead" } } : { record, applyEffects: false };
  });
  if (res.record?.state === "dead") return { kind: "dead", enqueued: res.enqueued };
  return { kind: "retried", runAt: res.record?.runAt ?? core.clock.now() };
}

/** A nack that gives the attempt back: the job returns to pending (or scheduled), never dead. No effects apply. */
async function nackUncounted(core: QueueCore, job: ClaimedJob, message: string, retryAfterMs: number): Promise<NackOutcome> {
  const res = await settle(core, job, undefined, (txn, ctx, r) => {
    recordAttempt(txn, r, ctx.now, "retried", message);
    const back = copyJob(r);
    back.attempts = Math.max(0, r.attempts - 1);
    return { record: requeueJob(txn, back, retryAfterMs > 0 ? ctx.now + retryAfterMs : undefined, message), applyEffects: false };
  });
  return { kind: "retried", runAt: res.record?.runAt ?? core.clock.now() };
}

function validateRetryAfter(ms: number | undefined): number {
  if (ms === undefined) return 0;
  validateMillis("nack's retryAfterMs", ms);
  return ms;
}

export async function deadLetter(
  core: QueueCore,
  job: ClaimedJob,
  error: string,
  effects?: SettlementEffects,
  opts: DeadLetterOptions = {},
): Promise<EnqueueOutcome[]> {
  const message = String(error);
  const res = await settle(core, job, effects, (txn, ctx, r) => {
    recordAttempt(txn, r, ctx.now, "dead_lettered", message, opts.cause);
    return { record: killJob(txn, ctx, r, message), applyEffects: true, finish: { kind: "dead" } };
  });
  return res.enqueued;
}
