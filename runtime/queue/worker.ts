/**
 * @module `runWorker`: a claim-process-settle loop with bounded concurrency.
 *
 * It claims batches sized to its free slots, sleeps on the queue's
 * in-process notification when nothing is claimable (scheduled jobs reach
 * it through the queue's scheduler timer, which announces them), and on
 * shutdown stops claiming and waits for every in-flight job to settle.
 */
import { MAX_DELAY_MS } from "../time-bounds.js";
import { ClosedError, TaqubaError, ValidationError } from "../errors.js";
import { checkOptionalFunction, describeValue, hasMethods, optionFields, readExactOptions } from "../option-values.js";
import { SettlementEffects } from "./effects.js";
import { PermanentError } from "./errors.js";
import { validatePositiveInt, validateQueueName } from "./names.js";
import type { Queue } from "./queue.js";
import type { ClaimedJob } from "./types.js";

/**
 * Processes claimed jobs. Resolve to acknowledge (with the effects you
 * return, applied in the ack commit); throw `PermanentError` to dead-letter;
 * throw anything else to nack with backoff. A thrown error's message becomes
 * the job's `lastError`; an `effects` property holding `SettlementEffects`
 * is applied if the failure dead-letters the job; a finite non-negative
 * `retryAfterMs` property delays the retry at least that long.
 */
export interface Worker {
  process(job: ClaimedJob): Promise<void | SettlementEffects>;
}

/** Options of `runWorker`. */
export interface RunWorkerOptions {
  /** Most jobs processed at once. Default: 1. */
  concurrency?: number;
  /** Lease of each claim. Default: the queue's `leaseMs`. */
  leaseMs?: number;
  /** Most jobs per claim. Default: the free slots. */
  claimBatch?: number;
  /** Abort to stop claiming; `runWorker` resolves once in-flight jobs are settled. */
  signal?: AbortSignal;
  /** Told about settlement failures (a lost claim, a closed queue). Default: the queue's logger, at warn. */
  onError?: (error: unknown, job: ClaimedJob) => void;
}

/** Pause after a claim failed with a retryable error (an unreachable store). */
const CLAIM_RETRY_MS = 1000;

function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}

function failureEffects(err: unknown): SettlementEffects | undefined {
  const e = (err as { effects?: unknown } | null)?.effects;
  return e instanceof SettlementEffects ? e : undefined;
}

function retryAfterOf(err: unknown): number | undefined {
  const ms = (err as { retryAfterMs?: unknown } | null)?.retryAfterMs;
  // Beyond the longest delay a nack takes, wait that long rather than fail the settle.
  return typeof ms === "number" && Number.isFinite(ms) && ms >= 0 ? Math.min(ms, MAX_DELAY_MS) : undefined;
}

async function processOne(queue: Queue, worker: Worker, job: ClaimedJob, onError: (e: unknown, j: ClaimedJob) => void): Promise<void> {
  let result: void | SettlementEffects;
  try {
    result = await worker.process(job);
  } catch (err) {
    try {
      // Permanence follows `retryable` alone, as everywhere: a non-retryable TaqubaError is dead-lettered.
      if (err instanceof TaqubaError && !err.retryable) {
        await queue.deadLetter(job, messageOf(err), err instanceof PermanentError ? err.effects : undefined, { cause: err });
      } else await queue.nack(job, messageOf(err), failureEffects(err), { retryAfterMs: retryAfterOf(err), cause: err });
    } catch (settleErr) {
      onError(settleErr, job);
    }
    return;
  }
  try {
    await queue.ack(job, result instanceof SettlementEffects ? result : undefined);
  } catch (settleErr) {
    onError(settleErr, job);
  }
}

/**
 * Runs `worker` over `queueName` until `signal` aborts or the queue
 * closes, then waits for in-flight jobs. A retryable claim error (the
 * store is unreachable) is retried after a pause on the queue's clock; any
 * other claim error ends the loop (after in-flight jobs settle) by
 * rejecting with it.
 *
 * @example
 * const ac = new AbortController();
 * const done = runWorker(queue, "emails", { process: async (job) => send(job.payload) }, { concurrency: 8, signal: ac.signal });
 * // later
 * ac.abort();
 * await done;
 */
const RUN_WORKER_KEYS = optionFields<RunWorkerOptions>({ concurrency: true, leaseMs: true, claimBatch: true, signal: true, onError: true });

export async function runWorker(queue: Queue, queueName: string, worker: Worker, given: RunWorkerOptions = {}): Promise<void> {
  validateQueueName(queueName);
  // Each field read once, so what is checked is what runs; a getter that throws is refused by name.
  const opts = readExactOptions(given, RUN_WORKER_KEYS, "RunWorkerOptions") as RunWorkerOptions;
  if (opts.signal !== undefined && !hasMethods(opts.signal, ["addEventListener"]))
    throw new ValidationError(`RunWorkerOptions.signal must be an AbortSignal, got ${describeValue(opts.signal)}`);
  checkOptionalFunction("RunWorkerOptions.onError", opts.onError);
  const concurrency = opts.concurrency ?? 1;
  validatePositiveInt("RunWorkerOptions.concurrency", concurrency);
  if (opts.claimBatch !== undefined) validatePositiveInt("RunWorkerOptions.claimBatch", opts.claimBatch);
  if (opts.leaseMs !== undefined) validatePositiveInt("RunWorkerOptions.leaseMs", opts.leaseMs);
  const signal = opts.signal;
  const onError =
    opts.onError ??
    ((e: unknown, j: ClaimedJob) => queue.log.warn({ err: e, jobId: j.id, queue: queueName }, `taquba worker: settling job ${j.id} failed: ${messageOf(e)}`));
  const inflight = new Set<Promise<void>>();
  const aborted = new Promise<void>((resolve) => {
    if (signal === undefined) return;
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });
  let failure: unknown;
  try {
    while (!signal?.aborted && !queue.closed) {
      const free = concurrency - inflight.size;
      if (free === 0) {
        await Promise.race([...inflight, aborted]);
        continue;
      }
      const epoch = queue.workEpoch(queueName);
      let jobs: ClaimedJob[];
      try {
        jobs = await queue.claimBatch(queueName, Math.min(free, opts.claimBatch ?? free), opts.leaseMs);
      } catch (err) {
        if (err instanceof ClosedError) break;
        if (err instanceof TaqubaError && err.retryable) {
          // The store is unreachable for now; the claims were put back. Try again after a pause.
          queue.log.warn({ err, queue: queueName }, `taquba worker on "${queueName}": claim failed, retrying in ${CLAIM_RETRY_MS} ms: ${messageOf(err)}`);
          await queue.clock.waitUntil(queue.clock.now() + CLAIM_RETRY_MS, signal).catch(() => undefined);
          continue;
        }
        failure = err;
        break;
      }
      if (jobs.length === 0) {
        await queue.waitForWork(queueName, epoch, signal);
        continue;
      }
      for (const job of jobs) {
        const p: Promise<void> = processOne(queue, worker, job, onError).finally(() => inflight.delete(p));
        inflight.add(p);
      }
    }
  } finally {
    await Promise.allSettled([...inflight]);
  }
  if (failure !== undefined) throw failure;
}
