/**
 * @module The step worker loop: claims step jobs up to the free slots and
 * processes them concurrently; waits on the queue's work notification when
 * there is nothing to claim (no polling).
 *
 * Slots bound the steps being worked on; a slot is released once its
 * step's settlement is handed to the queue, not when it is durable. The
 * queue hands out a step only once the settlement that enqueued it is
 * durable, so a runner never sees step k+1 before step k is committed.
 *
 * A step that continues its run at once may take the next step in its own
 * settlement (the queue's `ackClaimingNext`): the slot it frees becomes a
 * reservation, and the next step starts on this worker once the settlement
 * is durable, with no claim of its own. The queue allows it only when the
 * step queue has no admission limits, and the worker takes it only with a
 * slot left for every step already waiting there (or claimed and not yet
 * started), so no waiting work is overtaken; a worker that is stopping
 * does not reserve.
 */
import type { FullLogger } from "../../logger.js";
import type { ClaimedJob } from "../../queue/types.js";
import type { RuntimeCore } from "../runtime-core.js";
import { type SlotOwner, WorkerSlot } from "./settlement-slots.js";
import type { CarriedRun } from "./step-carry.js";
import { processJob, processStep, type StepWorkEnd } from "./step-processor.js";
import { type AttemptTelemetry, startAttemptTelemetry } from "./step-telemetry.js";

import { backoffMs, isStoreFault, sleep, type StoreRetryPolicy } from "../store-retry.js";

/** Backoff between failed claims: from 50 ms up to 5 s while the store keeps failing. */
const CLAIM_RETRY: StoreRetryPolicy = { attempts: Infinity, baseDelayMs: 50, maxDelayMs: 5000 };

/**
 * Runs until `signal` aborts (or the queue closes), then lets every
 * in-flight step finish. Settlement errors (a lost claim, a closed queue)
 * are logged: the queue redelivers the job, so no step is lost. A claim
 * that fails (an offloaded payload the store did not return) is logged and
 * retried with backoff: the claimed jobs went back to the queue, and the
 * worker keeps running through a store outage.
 */
export async function runStepWorker(core: RuntimeCore, signal: AbortSignal, log: FullLogger): Promise<void> {
  const max = core.maxConcurrentSteps;
  // Steps in flight, and what to call when the last one ends (while shutdown or a failure waits for them).
  let running = 0;
  let settled: (() => void) | undefined;
  // Slots in use: a slot is taken when a step starts and released when its settlement is submitted.
  let busy = 0;
  // Slots reserved for a run's next step, claimed with its previous step's settlement and handed over once that is durable.
  let reserved = 0;
  // Jobs the claim in progress may hand the worker (what it asked for), from its call until they are started.
  let claiming = 0;
  let wake: () => void = () => undefined;

  // What every slot reports to: one object per worker, so a step's slot makes no closures.
  // `reserve`'s `ownSlotHeld`: whether the settling step still holds its slot. The queue calls `reserve` in the
  // settlement's turn, which may come before the slot is freed on its submission; that slot is the
  // one the next step takes, so it is not counted against the reservation. A slot freed before
  // (the settlement awaited an offloaded payload's put first) may have gone to a claim of this
  // worker meanwhile, whose jobs the queue stops counting before the worker starts them: the jobs
  // that claim may bring are counted too.
  const owner: SlotOwner = {
    release: () => {
      busy--;
      wake();
    },
    reserve: (ownSlotHeld, waiting) => {
      const inUse = busy - (ownSlotHeld ? 1 : 0) + (ownSlotHeld ? 0 : claiming);
      if (signal.aborted || core.queue.closed || inUse + reserved + waiting >= max) return false;
      reserved++;
      return true;
    },
    handOff: (next, held, carry) => {
      if (held) reserved--;
      // A worker told to stop meanwhile does not take it: back to the queue for any worker.
      if (next !== undefined && !signal.aborted && !core.queue.closed) {
        start(next, carry);
        return;
      }
      if (next !== undefined) core.queue.releaseClaim?.(next);
      if (held) wake();
    },
  };

  // What a step processed in `processStep`'s own frame reports at its end: one object per worker.
  const ends: StepWorkEnd = {
    stepFailed: (job, e) => log.error({ err: e, jobId: job.id }, "workflow step settlement failed; the queue will redeliver the step"),
    stepEnded: () => {
      if (--running === 0) settled?.();
    },
  };

  const start = (job: ClaimedJob, carried?: CarriedRun): void => {
    busy++;
    running++;
    const slot = new WorkerSlot(owner, carried);
    const telemetry = startAttemptTelemetry(core, job);
    // Without telemetry the step's whole life is `processStep`'s one async frame, counted in `running`
    // rather than kept in a set of promises (a `.catch().finally()` chain costs more promises and closures).
    if (telemetry === undefined) void processStep(core, job, slot, log, ends);
    else void traced(job, slot, telemetry);
  };

  // A step under an attempt span: processed inside the span, which ends after the slot is freed.
  const traced = async (job: ClaimedJob, slot: WorkerSlot, telemetry: AttemptTelemetry): Promise<void> => {
    try {
      await telemetry.run(() => processJob(core, job, slot, log));
    } catch (e) {
      ends.stepFailed(job, e);
    } finally {
      telemetry.end();
      slot.free();
      ends.stepEnded();
    }
  };
  /** Resolves once no step is in flight. */
  const allSettled = async (): Promise<void> => {
    while (running > 0) await new Promise<void>((r) => (settled = r));
    settled = undefined;
  };

  const aborted = new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
  // Consecutive failed claims: the backoff grows with them and resets on a good claim.
  let claimFailures = 0;
  while (!signal.aborted && !core.queue.closed) {
    const free = max - busy - reserved;
    if (free <= 0) {
      await Promise.race([new Promise<void>((r) => (wake = r)), aborted]);
      continue;
    }
    const epoch = core.queue.workEpoch(core.queueName);
    let jobs: ClaimedJob[];
    claiming = free;
    try {
      jobs = await core.queue.claimBatch(core.queueName, free, core.leaseMs);
    } catch (e) {
      claiming = 0;
      // A queue closed under the worker ends the loop; a store fault is waited out; anything else ends it.
      if (core.queue.closed) break;
      if (!isStoreFault(e)) {
        await allSettled();
        throw e;
      }
      claimFailures++;
      log.error({ err: e, failures: claimFailures }, "workflow worker could not claim steps (store fault); retrying with backoff");
      await sleep(backoffMs(CLAIM_RETRY, claimFailures), signal);
      continue;
    }
    claimFailures = 0;
    claiming = 0;
    for (const job of jobs) start(job);
    if (jobs.length === 0) await core.queue.waitForWork(core.queueName, epoch, signal);
  }
  await allSettled();
}
