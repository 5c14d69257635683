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

const noop = (): void => undefined;

/**
 * Runs until `signal` aborts (or the queue closes), then lets every
 * in-flight step finish. Settlement errors (a lost claim, a closed queue)
 * are logged: the queue redelivers the job, so no step is lost. A claim
 * that fails (an offloaded payload the store did not return) is logged and
 * retried with backoff: the claimed jobs went back to the queue, and the
 * worker keeps running through a store outage.
 */
export async function runStepWorker(core: RuntimeCore, signal: AbortSignal, log: FullLogger): Promise<void> {
  await new StepWorker(core, signal, log).run();
}

/**
 * One worker's counts and what its slots and steps report to: one object
 * per worker, its methods on the class, so a step's slot makes no closures
 * and the step path calls the same functions whichever runtime's worker it
 * serves (closures made per worker are new call targets to the compiler
 * each time a runtime starts).
 *
 * Whether the worker was told to stop is a field set by the signal's abort
 * listener, not read from the signal on the step path: Node gives every
 * `AbortSignal` a hidden class of its own, so a read of `aborted` there would
 * see another class with each runtime's signal and be compiled again.
 */
class StepWorker implements SlotOwner, StepWorkEnd {
  readonly #core: RuntimeCore;
  readonly #signal: AbortSignal;
  readonly #log: FullLogger;
  readonly #max: number;
  /** Set in the signal's abort event, which `abort()` dispatches before it returns. */
  #stopping: boolean;
  /** Resolves once the signal aborts. */
  readonly #aborted: Promise<void>;
  /** Steps in flight. */
  #running = 0;
  /** What to call when the last step in flight ends (while shutdown or a failure waits for them). */
  #settled: (() => void) | undefined = undefined;
  /** Slots in use: a slot is taken when a step starts and released when its settlement is submitted. */
  #busy = 0;
  /** Slots reserved for a run's next step, claimed with its previous step's settlement and handed over once that is durable. */
  #reserved = 0;
  /** Jobs the claim in progress may hand the worker (what it asked for), from its call until they are started. */
  #claiming = 0;
  #wake: () => void = noop;

  constructor(core: RuntimeCore, signal: AbortSignal, log: FullLogger) {
    this.#core = core;
    this.#signal = signal;
    this.#log = log;
    this.#max = core.maxConcurrentSteps;
    this.#stopping = signal.aborted;
    this.#aborted = new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      signal.addEventListener(
        "abort",
        () => {
          this.#stopping = true;
          resolve();
        },
        { once: true },
      );
    });
  }

  release(): void {
    this.#busy--;
    this.#wake();
  }

  // `ownSlotHeld`: whether the settling step still holds its slot. The queue calls `reserve` in the
  // settlement's turn, which may come before the slot is freed on its submission; that slot is the
  // one the next step takes, so it is not counted against the reservation. A slot freed before
  // (the settlement awaited an offloaded payload's put first) may have gone to a claim of this
  // worker meanwhile, whose jobs the queue stops counting before the worker starts them: the jobs
  // that claim may bring are counted too.
  reserve(ownSlotHeld: boolean, waiting: number): boolean {
    const inUse = this.#busy - (ownSlotHeld ? 1 : 0) + (ownSlotHeld ? 0 : this.#claiming);
    if (this.#stopping || this.#core.queue.closed || inUse + this.#reserved + waiting >= this.#max) return false;
    this.#reserved++;
    return true;
  }

  handOff(next: ClaimedJob | undefined, held: boolean, carry: CarriedRun | undefined): void {
    if (held) this.#reserved--;
    // A worker told to stop meanwhile does not take it: back to the queue for any worker.
    if (next !== undefined && !this.#stopping && !this.#core.queue.closed) {
      this.#start(next, carry);
      return;
    }
    if (next !== undefined) this.#core.queue.releaseClaim?.(next);
    if (held) this.#wake();
  }

  // What a step processed in `processStep`'s own frame reports at its end.
  stepFailed(job: ClaimedJob, e: unknown): void {
    this.#log.error({ err: e, jobId: job.id }, "workflow step settlement failed; the queue will redeliver the step");
  }

  stepEnded(): void {
    if (--this.#running === 0) this.#settled?.();
  }

  #start(job: ClaimedJob, carried?: CarriedRun): void {
    this.#busy++;
    this.#running++;
    const slot = new WorkerSlot(this, carried);
    const telemetry = startAttemptTelemetry(this.#core, job);
    // Without telemetry the step's whole life is `processStep`'s one async frame, counted in `#running`
    // rather than kept in a set of promises (a `.catch().finally()` chain costs more promises and closures).
    if (telemetry === undefined) void processStep(this.#core, job, slot, this.#log, this);
    else void this.#traced(job, slot, telemetry);
  }

  /** A step under an attempt span: processed inside the span, which ends after the slot is freed. */
  async #traced(job: ClaimedJob, slot: WorkerSlot, telemetry: AttemptTelemetry): Promise<void> {
    try {
      await telemetry.run(() => processJob(this.#core, job, slot, this.#log));
    } catch (e) {
      this.stepFailed(job, e);
    } finally {
      telemetry.end();
      slot.free();
      this.stepEnded();
    }
  }

  /** Resolves once no step is in flight. */
  async #allSettled(): Promise<void> {
    while (this.#running > 0) await new Promise<void>((r) => (this.#settled = r));
    this.#settled = undefined;
  }

  async run(): Promise<void> {
    const core = this.#core;
    // Consecutive failed claims: the backoff grows with them and resets on a good claim.
    let claimFailures = 0;
    while (!this.#stopping && !core.queue.closed) {
      const free = this.#max - this.#busy - this.#reserved;
      if (free <= 0) {
        await Promise.race([new Promise<void>((r) => (this.#wake = r)), this.#aborted]);
        continue;
      }
      const epoch = core.queue.workEpoch(core.queueName);
      let jobs: ClaimedJob[];
      this.#claiming = free;
      try {
        jobs = await core.queue.claimBatch(core.queueName, free, core.leaseMs);
      } catch (e) {
        this.#claiming = 0;
        // A queue closed under the worker ends the loop; a store fault is waited out; anything else ends it.
        if (core.queue.closed) break;
        if (!isStoreFault(e)) {
          await this.#allSettled();
          throw e;
        }
        claimFailures++;
        this.#log.error({ err: e, failures: claimFailures }, "workflow worker could not claim steps (store fault); retrying with backoff");
        await sleep(backoffMs(CLAIM_RETRY, claimFailures), this.#signal);
        continue;
      }
      claimFailures = 0;
      this.#claiming = 0;
      for (const job of jobs) this.#start(job);
      if (jobs.length === 0) await core.queue.waitForWork(core.queueName, epoch, this.#signal);
    }
    await this.#allSettled();
  }
}
