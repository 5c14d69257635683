/**
 * @module How long a checkpoint works between its turns of the event loop.
 *
 * A checkpoint shares the loop with commits and claims. With a fixed slice
 * (2 ms) it got a share that fell as the loop got busier: at 128 claim
 * loops a turn of theirs took tens of milliseconds, a checkpoint of 80 ms
 * of work took 1-3 s, and the WAL it had not yet covered (and the memtable's
 * changes with it) grew to twice its trigger meanwhile. So a slice is sized
 * from how long the turn the checkpoint last gave away took: about
 * `SHARE` of it, never under `MIN_SLICE_MS` nor over `MAX_SLICE_MS`, so a
 * checkpoint gets about a third of a busy loop and the longest block it
 * adds stays bounded.
 */
import { setImmediate as yieldToLoop } from "node:timers/promises";

/** The slice of an idle loop (and the first one). */
export const MIN_SLICE_MS = 2;
/** The longest slice, however long the others' turns take: what a commit may wait behind a checkpoint. */
export const MAX_SLICE_MS = 12;
/** A slice's length as a fraction of the turn given away before it. */
const SHARE = 0.5;

/** Slices of a checkpoint's work: `due()` says when to yield, `turn()` yields and sizes the next slice. */
export class TurnPacer {
  #start: number;
  #slice = MIN_SLICE_MS;

  constructor(readonly now: () => number = () => performance.now()) {
    this.#start = now();
  }

  /** Whether the slice under way is used up. */
  due(): boolean {
    return this.now() - this.#start >= this.#slice;
  }

  /** The length the next slice gets after the others took `othersMs` of the loop. */
  static sliceAfter(othersMs: number): number {
    const want = othersMs * SHARE;
    // NaN (a clock gone wrong) takes the least.
    if (!(want > MIN_SLICE_MS)) return MIN_SLICE_MS;
    return Math.min(want, MAX_SLICE_MS);
  }

  /** Gives the event loop a turn, and starts the next slice sized by how long that turn took. */
  async turn(): Promise<void> {
    const gave = this.now();
    await yieldToLoop();
    this.#start = this.now();
    this.#slice = TurnPacer.sliceAfter(this.#start - gave);
  }
}
