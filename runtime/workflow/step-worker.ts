/**
 * @module The step worker loop: claims step jobs up to the free slots and
 * processes them concurrently; waits on the queue's work notification when
 * there is nothing to claim (no polling).
 *
 * Slots bound the steps being worked on. A claimed step whose run still has
 * its previous settlement in flight (not yet durable) waits outside the
 * slots, in a bounded pool, and takes a slot when that settlement is
 * durable; ready steps are started before new claims.
 */
import type { ClaimedJob } from "../queue/types.js";
import { HEADER_RUN_ID } from "./reserved.js";
import type { RuntimeCore } from "./runtime-core.js";
import { onSettlementSubmitted } from "./settlement-slots.js";
import { processJob } from "./step-processor.js";

/**
 * Claimed steps that may wait for their predecessor's durability, per slot.
 * A wait lasts about one WAL write; with one waiter per slot, a slow store
 * left slots idle while later, already-durable runs sat unclaimed.
 */
const GATED_PER_SLOT = 4;

/** Where worker errors go; a logger such as pino's satisfies it. */
export interface WorkflowLogger {
  error(obj: unknown, msg?: string): void;
}

/**
 * Runs until `signal` aborts, then lets every in-flight step finish.
 * Settlement errors (a lost claim, a closed queue) are logged: the queue
 * redelivers the job, so no step is lost.
 */
export async function runStepWorker(core: RuntimeCore, signal: AbortSignal, log: WorkflowLogger): Promise<void> {
  const max = core.maxConcurrentSteps;
  const inFlight = new Set<Promise<void>>();
  // Slots in use: a slot is taken when a step starts and released when its settlement is submitted.
  let busy = 0;
  let gated = 0;
  const ready: ClaimedJob[] = [];
  let wake: () => void = () => undefined;

  const start = (job: ClaimedJob): void => {
    busy++;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      busy--;
      const next = ready.shift();
      if (next !== undefined) start(next);
      wake();
    };
    onSettlementSubmitted(job, release);
    const p: Promise<void> = processJob(core, job)
      .catch((e: unknown) => log.error({ err: e, jobId: job.id }, "workflow step settlement failed; the queue will redeliver the step"))
      .finally(() => {
        inFlight.delete(p);
        release();
      });
    inFlight.add(p);
  };

  const admit = (job: ClaimedJob): void => {
    const runId = job.headers[HEADER_RUN_ID];
    const before = runId === undefined ? undefined : core.settlements.pending(runId);
    if (before === undefined) {
      start(job);
      return;
    }
    gated++;
    const p = before.then(() => {
      gated--;
      inFlight.delete(p);
      if (busy < max) start(job);
      else ready.push(job);
      wake();
    });
    inFlight.add(p);
  };

  const aborted = new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
  while (!signal.aborted && !core.queue.closed) {
    const free = Math.min(max - busy - ready.length, GATED_PER_SLOT * max - gated);
    if (free <= 0) {
      await Promise.race([new Promise<void>((r) => (wake = r)), aborted]);
      continue;
    }
    const epoch = core.queue.workEpoch(core.queueName);
    let jobs: ClaimedJob[];
    try {
      jobs = await core.queue.claimBatch(core.queueName, free, core.leaseMs);
    } catch (e) {
      // A queue closed under the worker ends the loop; any other claim error ends it with that error.
      if (core.queue.closed) break;
      await Promise.allSettled([...inFlight]);
      throw e;
    }
    for (const job of jobs) admit(job);
    if (jobs.length === 0) await core.queue.waitForWork(core.queueName, epoch, signal);
  }
  // Drain: gated steps start as their predecessors settle; wait until nothing is left.
  for (;;) {
    while (ready.length > 0 && busy < max) start(ready.shift()!);
    if (inFlight.size === 0) break;
    await Promise.allSettled([...inFlight]);
  }
}
