/**
 * @module `WorkerSlot`: the worker slot one claimed job holds, freed when
 * the job's settlement is submitted.
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

/**
 * How a settlement submitted through a slot may take the run's next step
 * for the same worker (the queue's `ackClaimingNext`): the queue calls
 * `reserve` in the settlement's turn, and the processor calls `handOff`
 * once the settlement settled, with the step it claimed, if any.
 */
export interface SlotChain {
  /** True takes the worker's capacity for the next step: the worker is running and has a slot to spare beyond `waiting` more. */
  reserve(waiting: number): boolean;
  /** Starts `next` on this worker (or gives it back when the worker stopped meanwhile), and returns an unused reservation. Once. */
  handOff(next: ClaimedJob | undefined): void;
}

export class WorkerSlot {
  #release: (() => void) | undefined;
  #submitted = false;

  /** Whether a settlement was handed to the queue through this slot: an error after that is the settlement's. */
  get settlementSubmitted(): boolean {
    return this.#submitted;
  }

  /** Whether the slot is still taken (not yet freed). */
  get held(): boolean {
    return this.#release !== undefined;
  }

  /** `release` is called once, when the slot is freed. `chain`: how this slot's settlement may claim the run's next step. */
  constructor(
    release: () => void,
    readonly chain?: SlotChain,
  ) {
    this.#release = release;
  }

  /**
   * Frees the slot and returns `settlement` for the caller to await its
   * durability. Call it with the settlement the queue was just handed.
   */
  freeAfterSubmitting<T>(settlement: Promise<T>): Promise<T> {
    this.#submitted = true;
    this.free();
    return settlement;
  }

  /** Frees the slot; later calls do nothing. */
  free(): void {
    const release = this.#release;
    this.#release = undefined;
    release?.();
  }
}
