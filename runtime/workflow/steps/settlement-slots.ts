/**
 * @module Releasing a worker slot when a job's settlement is submitted.
 *
 * A slot bounds the steps being worked on (runner calls and their
 * bookkeeping), not the durability waits of settlements already handed to
 * the queue: holding a slot for a WAL flush would cap throughput at
 * `maxConcurrentSteps / flush latency` without protecting anything. The
 * worker still awaits every settlement before shutdown resolves, and the
 * queue hands out step k+1 only once step k's settlement (which enqueued
 * it) is durable.
 */
import type { ClaimedJob } from "../../queue/types.js";

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
