/**
 * @module One poll timer for all of a runtime's waits without a deadline.
 *
 * A wait's poll only bounds how late it notices a termination that nobody
 * in this process announces (one committed by another process): every
 * round that waits must be woken at most one poll interval after it
 * started. One timer, armed by the first round that joins and re-armed by
 * the first to join after it fires, wakes every round that joined before
 * it fired, so a round armed no timer of its own (a timer per round was
 * most of a wait's cost when the run's end is announced long before it).
 * A round woken early reads the run once more and waits again: the bound
 * holds, a read is spent.
 */
import { cancellableCall, type CancellableCall, type TimedClock } from "../../clock.js";
import { emptyObjects } from "../../engine/array-kinds.js";

/** What a poll wakes: a round's subscription (`RunWait`); waking one already woken does nothing. */
export interface PollWaiter {
  wake(): void;
}

export class WaitPoll {
  readonly #clock: TimedClock;
  readonly #intervalMs: number;
  /**
   * The rounds joined since the timer last fired. One that ended since
   * stays until then (waking it does nothing): a round's end costs no
   * search of this list. Made of objects' kind (see array-kinds): a runtime
   * opened after another's waits were optimized keeps them optimized.
   */
  #due: PollWaiter[] = emptyObjects();
  /** Rounds joined and not yet left; at 0 the timer is dropped, so an idle runtime keeps no timer. */
  #waiting = 0;
  #timer: CancellableCall | undefined;
  readonly #fire = (): void => {
    this.#timer = undefined;
    // A woken round goes on in a later turn, so none joins while this runs.
    const due = this.#due;
    for (let i = 0; i < due.length; i++) due[i]!.wake();
    due.length = 0;
  };

  constructor(clock: TimedClock, intervalMs: number) {
    this.#clock = clock;
    // At least 1 ms: the timer then never fires inside `join`, before it is stored.
    this.#intervalMs = Math.max(1, intervalMs);
  }

  /** Wakes `w` at most one interval from now; the round calls `leave` once it ends, woken or not. */
  join(w: PollWaiter): void {
    this.#due.push(w);
    this.#waiting++;
    this.#timer ??= cancellableCall(this.#clock, this.#clock.now() + this.#intervalMs, this.#fire);
  }

  /** Ends a round that joined. */
  leave(): void {
    if (--this.#waiting > 0) return;
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#due.length = 0;
  }
}
