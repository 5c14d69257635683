/**
 * @module Cancel, wake and dead-job requeue: operations on jobs that
 * nobody holds a claim for (or, for cancel, a cooperative request to the
 * holder). All wait for durable commits.
 */
import { ValidationError } from "../errors.js";
import { DamagedRecord, filedOrDamaged, readOrDamaged, removeDamaged } from "./damaged-record.js";
import type { LeaseEntry } from "./lease-registry.js";
import { requireKvOnly, type SettlementEffects } from "./effects.js";
import { PayloadTooLargeError } from "./errors.js";
import { MAX_KV_VALUE_SIZE, validateJobId } from "./names.js";
import type { QueueCore } from "./queue-core.js";
import { copyJob, type JobRecord } from "./record.js";
import { appendHistory, deleteJob, type PreparedEnqueue, readJob, writeJob } from "./transitions.js";
import { emptyObjects } from "../engine/array-kinds.js";
import { Txn } from "./txn.js";
import { warmJobs } from "./warm.js";
import type { CancelOutcome, EnqueueOutcome, WakeOutcome } from "./types.js";

export async function cancelJob(core: QueueCore, jobId: string, effects?: SettlementEffects): Promise<CancelOutcome> {
  core.checkOpen();
  validateJobId(jobId);
  const prepared = effects === undefined ? emptyObjects<PreparedEnqueue>() : await core.prepare(effects.enqueues);
  const warming = warmJobs(core.engine, [jobId]);
  try {
    for (let w = warming; w !== undefined; w = warmJobs(core.engine, [jobId])) await w;
  } catch (err) {
    core.discardUnused(prepared, undefined);
    throw err;
  }
  let outcomes: EnqueueOutcome[] | undefined;
  let outcome: CancelOutcome;
  let commit: Promise<void> | undefined;
  let removed: JobRecord | undefined;
  let damaged: { detail: string; entries: number; payloadRef: string | undefined; lease: LeaseEntry | undefined } | undefined;
  const ctx = core.ctx(prepared);
  try {
    core.checkOpen();
    const txn = new Txn(core.engine);
    let r = readOrDamaged(txn, jobId);
    // A record naming another queue than its entry's, as it reads: deleted, it would move that queue's stats.
    if (r !== undefined && !(r instanceof DamagedRecord) && r.state !== "done" && r.state !== "dead") r = filedOrDamaged(txn, r);
    if (r instanceof DamagedRecord) {
      // Its record cannot say where it is filed: every index naming it is scanned, and all of it removed.
      outcome = "removed";
      const gone = removeDamaged(txn, core.engine, jobId);
      damaged = { detail: r.detail, entries: gone.entries.length, payloadRef: gone.payloadRef, lease: core.leases.get(jobId) };
      if (damaged.lease !== undefined) core.leases.remove(jobId);
      outcomes = core.applyEffects(txn, ctx, effects, prepared);
      commit = core.commit(txn, true);
    } else if (r === undefined || r.state === "done" || r.state === "dead") outcome = "not_found";
    else if (r.state === "claimed") {
      outcome = "requested";
      if (r.cancelRequested !== true) {
        const flagged = copyJob(r);
        flagged.cancelRequested = true;
        writeJob(txn, flagged, r);
        commit = core.commit(txn, true);
        // In the commit's turn: the claim's settlement must read the flagged record, not act on the one its claim kept.
        const held = core.leases.get(jobId);
        if (held !== undefined) held.recordAt = -1;
      }
    } else {
      outcome = "removed";
      removed = r;
      deleteJob(txn, r);
      outcomes = core.applyEffects(txn, ctx, effects, prepared);
      commit = core.commit(txn, true);
    }
  } finally {
    core.discardUnused(prepared, outcomes);
  }
  await commit;
  if (outcome === "requested") {
    const e = core.leases.get(jobId);
    if (e !== undefined && !e.requested) e.request(new Error(`cancellation of job ${jobId} was requested`));
  }
  if (damaged !== undefined) {
    core.log.warn(
      { jobId, reason: "record_corrupted" },
      `queue "${core.name}": the stored record of job ${jobId} was damaged (${damaged.detail}); cancel removed the job and the ${damaged.entries} index entries naming it`,
    );
    damaged.lease?.request(new Error(`job ${jobId} was cancelled: its stored record was damaged`));
    if (damaged.payloadRef !== undefined) await core.payloads.deleteAll([damaged.payloadRef]);
    core.completions.finished(jobId, { kind: "cancelled" });
    core.announceInserted(prepared, outcomes ?? [], ctx.now);
  }
  if (removed !== undefined) {
    if (removed.payloadRef !== undefined) await core.payloads.deleteAll([removed.payloadRef]);
    core.completions.finished(jobId, { kind: "cancelled" });
    core.announceInserted(prepared, outcomes ?? [], ctx.now);
  }
  return outcome;
}

export async function wake(
  core: QueueCore,
  jobId: string,
  attached: Uint8Array | undefined,
  queueName: string | undefined,
  effects?: SettlementEffects,
): Promise<WakeOutcome> {
  core.checkOpen();
  validateJobId(jobId);
  if (attached !== undefined && !(attached instanceof Uint8Array)) throw new ValidationError("attached bytes must be a Uint8Array");
  requireKvOnly(effects, "a wake");
  for (let w = warmJobs(core.engine, [jobId]); w !== undefined; w = warmJobs(core.engine, [jobId])) await w;
  const txn = new Txn(core.engine);
  const r = readJob(txn, jobId);
  if (r === undefined || (queueName !== undefined && r.queue !== queueName)) return "not_found";
  if (r.state !== "scheduled") return "not_scheduled";
  // Attached bytes live in the record, which every later transition rewrites and a claim copies: bounded as a
  // payload, never below a KV value's limit (a workflow signal, up to that size, wakes its waiter with them).
  const maxAttached = Math.max(core.maxPayloadBytes, MAX_KV_VALUE_SIZE);
  if (attached !== undefined && attached.byteLength > maxAttached) throw new PayloadTooLargeError(r.queue, attached.byteLength, maxAttached, "attached");
  const now = core.clock.now();
  const woken = copyJob(r);
  woken.state = "pending";
  woken.runAt = undefined;
  woken.wokenAt = now;
  woken.attached = attached ?? r.attached;
  writeJob(txn, woken, r);
  core.applyEffects(txn, core.ctx(), effects, []);
  await core.commit(txn, true);
  core.work.notify(r.queue);
  return "woken";
}

export async function requeueDead(core: QueueCore, jobId: string, effects?: SettlementEffects): Promise<boolean> {
  core.checkOpen();
  validateJobId(jobId);
  requireKvOnly(effects, "a requeue of a dead job");
  for (let w = warmJobs(core.engine, [jobId]); w !== undefined; w = warmJobs(core.engine, [jobId])) await w;
  const txn = new Txn(core.engine);
  const r = readJob(txn, jobId);
  if (r === undefined || r.state !== "dead") return false;
  // The count names each delivery's end (a run's end token): past this it would repeat.
  if ((r.requeues ?? 0) >= Number.MAX_SAFE_INTEGER) {
    throw new ValidationError(`job ${r.id} was put back ${r.requeues} times, the most this queue counts: enqueue it again as a new job instead`);
  }
  const now = core.clock.now();
  appendHistory(txn, r.id, { attempt: r.attempts, recordedAt: now, outcome: "requeued" });
  const next: JobRecord = {
    ...r,
    state: "pending",
    attempts: 0,
    // Lasting, unlike the attempts: a delivery after the requeue is told from one before it (a run's end token).
    requeues: (r.requeues ?? 0) + 1,
    lastError: undefined,
    claimedAt: undefined,
    failedAt: undefined,
    cancelRequested: undefined,
    retainUntil: undefined,
  };
  writeJob(txn, next, r);
  core.applyEffects(txn, core.ctx(), effects, []);
  await core.commit(txn, true);
  core.work.notify(r.queue);
  return true;
}
