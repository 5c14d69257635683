/**
 * @module The queue's own error classes. Each one says what happened and what
 * the caller should do; all are `TaqubaError`s with a stable `code`.
 */
import { TaqubaError } from "../errors.js";
import type { SettlementEffects } from "./effects.js";

/**
 * The claim being settled is no longer held: its lease expired and the
 * reaper requeued the job, the job was recovered after a restart, or it was
 * already settled. Nothing was applied.
 */
export class ClaimLostError extends TaqubaError {
  constructor(
    readonly jobId: string,
    detail = "its lease expired or it was already settled",
  ) {
    super("CLAIM_LOST", `the claim on job ${jobId} is no longer held (${detail}); nothing was applied, the job will be (or was) redelivered`);
  }
}

/**
 * A caller-chosen job id is already used by a job that still exists, or
 * (`namedAt`, the two items' positions) the jobs enqueued together in one
 * call name it twice.
 */
export class DuplicateJobIdError extends TaqubaError {
  constructor(
    readonly jobId: string,
    namedAt?: readonly [number, number],
  ) {
    super(
      "DUPLICATE_JOB_ID",
      namedAt === undefined
        ? `job id ${JSON.stringify(jobId)} is already used by an existing job; choose another id or use a dedupKey for idempotent enqueues`
        : `job id ${JSON.stringify(jobId)} is named twice by the jobs enqueued together in this batch (items ${namedAt[0]} and ${namedAt[1]}); give each job its own id, or leave jobId out to have one generated. Nothing was enqueued`,
    );
  }
}

/** A caller KV value is larger than `MAX_KV_VALUE_SIZE`. */
export class KvValueTooLargeError extends TaqubaError {
  constructor(
    readonly key: string,
    readonly size: number,
    readonly max: number,
  ) {
    super(
      "KV_VALUE_TOO_LARGE",
      `the value for KV key ${JSON.stringify(key)} is ${size} bytes, more than the ${max} allowed; store large data as an object and keep a reference in KV`,
    );
  }
}

/**
 * A job's payload, or the bytes a wake attaches to a job (`part`), is larger
 * than the queue's `maxPayloadBytes`. Nothing was enqueued or woken (in a
 * batch or a settlement, nothing of it was applied).
 */
export class PayloadTooLargeError extends TaqubaError {
  constructor(
    readonly queueName: string,
    readonly size: number,
    readonly max: number,
    readonly part: "payload" | "attached" = "payload",
  ) {
    super(
      "PAYLOAD_TOO_LARGE",
      part === "payload"
        ? `the payload of a job for queue ${JSON.stringify(queueName)} is ${size} bytes, more than the ${max} this queue takes (OpenOptions.maxPayloadBytes); nothing was enqueued. Store large data as an object of its own and enqueue its key, or open the queue with a larger maxPayloadBytes (at most 1 GiB)`
        : `the bytes attached to a wake of a job of queue ${JSON.stringify(queueName)} are ${size} bytes, more than the ${max} a wake takes (OpenOptions.maxPayloadBytes, or 256 KiB when that is lower: attached bytes live in the job's record); the job was not woken. Store large data as an object of its own and attach its key, or open the queue with a larger maxPayloadBytes (at most 1 GiB)`,
    );
  }
}

/** A lease cannot be extended because a cancellation was requested for the job. */
export class CancelRequestedError extends TaqubaError {
  constructor(readonly jobId: string) {
    super("CANCEL_REQUESTED", `job ${jobId} has a cancellation request; stop working on it and settle it instead of extending its lease`);
  }
}

/** The object holding an offloaded payload is missing from the store. */
export class PayloadMissingError extends TaqubaError {
  constructor(
    readonly jobId: string,
    readonly objectKey: string,
  ) {
    super("PAYLOAD_MISSING", `the payload object ${JSON.stringify(objectKey)} of job ${jobId} is missing; it may have been removed outside the queue`, {
      retryable: true,
    });
  }
}

/**
 * Thrown by a worker to dead-letter its job at once, whatever the attempt
 * count. `effects`, when given, are applied in the dead-letter commit.
 *
 * @example
 * throw new PermanentError("the order does not exist");
 */
export class PermanentError extends TaqubaError {
  readonly effects: SettlementEffects | undefined;
  constructor(message: string, opts: { cause?: unknown; effects?: SettlementEffects } = {}) {
    super("PERMANENT", message, { cause: opts.cause });
    this.effects = opts.effects;
  }
}

/**
 * A job's stored record is damaged (cut short, a field of another kind, or
 * naming another job), so the job cannot be shown. A claim of its queue
 * sets a pending one aside as dead (reason `record_corrupted`, with what
 * could be read of it); a cancel removes it. With `setAside`, a settlement
 * of the job's claim met the damage: it applied nothing of its own (nor
 * its effects) and set the job aside as dead instead.
 */
export class JobRecordDamagedError extends TaqubaError {
  constructor(
    readonly jobId: string,
    readonly detail: string,
    readonly setAside = false,
  ) {
    super(
      "JOB_RECORD_DAMAGED",
      setAside
        ? `the stored record of job ${jobId} was damaged while it was claimed (${detail}); this settlement and its effects were not applied: the job was set aside as dead (record_corrupted) with what could be read of it; redrive it with requeueDead to run it again`
        : `the stored record of job ${jobId} is damaged (${detail}); a claim of its queue sets a waiting job aside as dead (record_corrupted) and shows what could be read of it, or cancel the job to remove it`,
    );
  }
}

/**
 * `recountStats` with `plan` refused: the queue's stats record or the
 * counts of its indexes are no longer those the confirmed plan (a dry
 * run's `StatsRecount.plan`) was made from; a job moved since, or the
 * record was written. Nothing was written: look again and confirm the new
 * plan.
 */
export class StatsPlanChangedError extends TaqubaError {
  constructor(readonly queueName: string) {
    super(
      "STATS_PLAN_CHANGED",
      `the stats of queue ${JSON.stringify(queueName)} were not recounted: its jobs or its stats record changed since the plan was made, so the recount would not write what was confirmed; ` +
        `nothing was written. Review the new plan (taquba queue recount ${queueName} --dry-run, dryRun: true) and confirm that one`,
    );
  }
}
