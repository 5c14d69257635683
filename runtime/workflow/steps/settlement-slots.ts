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

import type { ClaimedJob, ClaimNext } from "../../queue/types.js";
import type { CarriedRun } from "./step-carry.js";

/**
 * How a settlement submitted through a slot may take the run's next step
 * for the same worker (the queue's `ackClaimingNext`): the queue calls
 * `reserve` in the settlement's turn, and the processor calls `handOff`
 * once the settlement settled, with the step it claimed, if any.
 */
export interface SlotChain {
  /** True takes the worker's capacity for the next step: the worker is running and has a slot to spare beyond `waiting` more. */
  reserve(waiting: number): boolean;
  /**
   * Starts `next` on this worker (or gives it back when the worker stopped meanwhile), and returns an unused reservation. Once.
   * `carry`: the run's records as the settlement left them, for `next`'s slot (see step-carry).
   */
  handOff(next: ClaimedJob | undefined, carry?: CarriedRun): void;
}

/**
 * What a worker's slots report to it (one per worker): a freed slot, and a
 * chained step's reservation and hand-off, with whether the slot was still
 * held or had reserved. Methods of one object, not closures made per step.
 */
export interface SlotOwner {
  /** The slot was freed. */
  release(): void;
  /** `SlotChain.reserve` of a slot that has not reserved yet; `ownSlotHeld`: the settling step still holds its slot. */
  reserve(ownSlotHeld: boolean, waiting: number): boolean;
  /** `SlotChain.handOff`, once per slot; `reserved`: whether the slot's `reserve` said yes. */
  handOff(next: ClaimedJob | undefined, reserved: boolean, carry: CarriedRun | undefined): void;
}

/**
 * Also the `ClaimNext` of its step's settlement (see `claimingNext`): a
 * step's slot is its own, so the settlement that may claim the run's next
 * step names it here rather than in an object of its own per step.
 */
export class WorkerSlot implements SlotChain, ClaimNext {
  /** `ClaimNext.index`: the next step's enqueue in the settlement's effects (set by `claimingNext`). */
  index = -1;
  /** `ClaimNext.leaseMs`: the next step's lease (set by `claimingNext`). */
  leaseMs: number | undefined = undefined;
  readonly #owner: SlotOwner;
  #carried: CarriedRun | undefined;
  #held = true;
  #submitted = false;
  #reserved = false;
  #handedOff = false;

  /** Whether a settlement was handed to the queue through this slot: an error after that is the settlement's. */
  get settlementSubmitted(): boolean {
    return this.#submitted;
  }

  /** Whether the slot is still taken (not yet freed). */
  get held(): boolean {
    return this.#held;
  }

  /**
   * `owner`: the worker the slot reports to. The slot is its own chain, so a step costs one object here, not a chain and its closures.
   * `carried`: what the settlement that claimed the slot's job handed it (see step-carry), for `takeCarried`.
   */
  constructor(owner: SlotOwner, carried?: CarriedRun) {
    this.#owner = owner;
    this.#carried = carried;
  }

  /** What the settlement that claimed this slot's job handed it, once; undefined for a job claimed any other way. */
  takeCarried(): CarriedRun | undefined {
    const c = this.#carried;
    this.#carried = undefined;
    return c;
  }

  /** How this slot's settlement may claim the run's next step. */
  get chain(): SlotChain {
    return this;
  }

  /** This slot as the `ClaimNext` of its settlement: the enqueue at `index` claimed for this worker, leased for `leaseMs`. */
  claimingNext(index: number, leaseMs: number | undefined): ClaimNext {
    this.index = index;
    this.leaseMs = leaseMs;
    return this;
  }

  reserve(waiting: number): boolean {
    if (this.#reserved || this.#handedOff || !this.#owner.reserve(this.#held, waiting)) return false;
    this.#reserved = true;
    return true;
  }

  handOff(next: ClaimedJob | undefined, carry?: CarriedRun): void {
    if (this.#handedOff) return;
    this.#handedOff = true;
    this.#owner.handOff(next, this.#reserved, carry);
  }

  /**
   * Frees the slot and returns `settlement` for the caller to await its
   * durability. Call it with the settlement the queue was just handed.
   */
  freeAfterSubmitting<T>(settlement: T): T {
    this.#submitted = true;
    this.free();
    return settlement;
  }

  /** Frees the slot; later calls do nothing. */
  free(): void {
    if (!this.#held) return;
    this.#held = false;
    this.#owner.release();
  }
}
