/**
 * @module Releasing a worker slot when a job's settlement is submitted.
 *
 * A slot bounds the steps being worked on (runner calls and their
 * bookkeeping), not the durability waits of settlements already handed to
 * the queue: holding a slot for a WAL flush would cap throughput at
 * `maxConcurrentSteps / flush latency` without protecting anything. The
 * worker still awaits every settlement before shutdown resolves.
 *
 * The queue can hand out a job whose enqueue is applied but not yet durable
 * (the next step, enqueued by the previous step's ack). `RunSettlements`
 * lets the worker hold such a step until the previous settlement of its run
 * is durable, so a runner never sees step k+1 of a run before step k's
 * outcome is committed.
 */
import type { ClaimedJob } from "../queue/types.js";

const releases = new WeakMap<ClaimedJob, () => void>();

/** Registers what to call when `job`'s settlement is submitted. */
export function onSettlementSubmitted(job: ClaimedJob, release: () => void): void {
  releases.set(job, release);
}

/** Marks `job`'s settlement `p` as submitted (releasing its slot) and returns it. */
export function submitted<T>(job: ClaimedJob, p: Promise<T>): Promise<T> {
  const release = releases.get(job);
  releases.delete(job);
  release?.();
  return p;
}

/** Per run, the settlement of its latest step that is not yet durable. */
export class RunSettlements {
  readonly #pending = new Map<string, Promise<unknown>>();

  /** Records `p` as `runId`'s latest settlement until it completes. */
  track(runId: string, p: Promise<unknown>): void {
    const done = p.then(
      () => undefined,
      () => undefined,
    );
    this.#pending.set(runId, done);
    void done.then(() => {
      if (this.#pending.get(runId) === done) this.#pending.delete(runId);
    });
  }

  /** `runId`'s settlement in flight, if any. */
  pending(runId: string): Promise<unknown> | undefined {
    return this.#pending.get(runId);
  }

  /** Resolves once `runId`'s latest tracked settlement completed (at once when there is none). */
  async durable(runId: string): Promise<void> {
    await this.#pending.get(runId);
  }
}

const perQueue = new WeakMap<object, RunSettlements>();

/** Runtimes over one queue share the tracking. */
export function runSettlementsFor(queue: object): RunSettlements {
  let s = perQueue.get(queue);
  if (s === undefined) {
    s = new RunSettlements();
    perQueue.set(queue, s);
  }
  return s;
}
