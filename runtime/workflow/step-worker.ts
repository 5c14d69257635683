/**
 * @module The step worker loop: claims step jobs up to the free slots and
 * processes them concurrently; waits on the queue's work notification when
 * there is nothing to claim (no polling).
 */
import type { RuntimeCore } from "./runtime-core.js";
import { onSettlementSubmitted } from "./settlement-slots.js";
import { processJob } from "./step-processor.js";

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
  const inFlight = new Set<Promise<void>>();
  // Slots in use: a slot is taken at claim and released when the job's settlement is submitted.
  let busy = 0;
  let slotFreed: () => void = () => undefined;
  const aborted = new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
  while (!signal.aborted && !core.queue.closed) {
    const free = core.maxConcurrentSteps - busy;
    if (free <= 0) {
      await Promise.race([new Promise<void>((r) => (slotFreed = r)), aborted]);
      continue;
    }
    const epoch = core.queue.workEpoch(core.queueName);
    let jobs;
    try {
      jobs = await core.queue.claimBatch(core.queueName, free, core.leaseMs);
    } catch (e) {
      // A queue closed under the worker ends the loop; any other claim error ends it with that error.
      if (core.queue.closed) break;
      await Promise.allSettled([...inFlight]);
      throw e;
    }
    for (const job of jobs) {
      busy++;
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        busy--;
        slotFreed();
      };
      onSettlementSubmitted(job, release);
      const p: Promise<void> = processJob(core, job)
        .catch((e: unknown) => log.error({ err: e, jobId: job.id }, "workflow step settlement failed; the queue will redeliver the step"))
        .finally(() => {
          inFlight.delete(p);
          release();
        });
      inFlight.add(p);
    }
    if (jobs.length === 0) await core.queue.waitForWork(core.queueName, epoch, signal);
  }
  await Promise.allSettled([...inFlight]);
}
