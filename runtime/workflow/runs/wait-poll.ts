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
 *
 * A round that ends before the timer fires (most do: its run's end is
 * announced) leaves the list at once, by the slot it holds in it. Left in
 * place until the fire, ended rounds piled up for a whole interval behind
 * one wait that lasts: without bound under a long poll (an hour, say), and
 * under the default one long enough to reach the old generation.
 */
import { cancellableCall, type CancellableCall, type TimedClock } from "../../clock.js";
import { emptyObjects } from "../../engine/array-kinds.js";

/** What a poll wakes: a round's subscription (`RunWait`); waking one already woken does nothing. */
export interface PollWaiter {
  wake(): void;
  /** @internal The waiter's index among a poll's joined rounds, -1 while it holds none; the poll's own field. */
  pollSlot: number;
}

export class WaitPoll {
  readonly #clock: TimedClock;
  readonly #intervalMs: number;
  /**
   * The rounds joined since the timer last fired that have not left, each at
   * its `pollSlot`. Made of objects' kind (see array-kinds): a runtime opened
   * after another's waits were optimized keeps them optimized.
   */
  readonly #due: PollWaiter[] = emptyObjects();
  /** Armed while `#due` holds a round: an idle runtime keeps no timer. */
  #timer: CancellableCall | undefined;
  readonly #fire = (): void => {
    this.#timer = undefined;
    // A woken round goes on in a later turn, so none joins or leaves while this runs.
    const due = this.#due;
    for (let i = 0; i < due.length; i++) {
      const w = due[i]!;
      w.pollSlot = -1;
      w.wake();
    }
    due.length = 0;
  };

  constructor(clock: TimedClock, intervalMs: number) {
    this.#clock = clock;
    // At least 1 ms: the timer then never fires inside `join`, before it is stored.
    this.#intervalMs = Math.max(1, intervalMs);
  }

  /** Rounds held for the next fire (for tests of the bound). */
  get held(): number {
    return this.#due.length;
  }

  /** Wakes `w` at most one interval from now, unless it leaves first; the round calls `leave` once it ends, woken or not. */
  join(w: PollWaiter): void {
    // A waiter joined twice is held once (its first join's bound is the tighter).
    if (w.pollSlot >= 0) return;
    const due = this.#due;
    w.pollSlot = due.length;
    due.push(w);
    this.#timer ??= cancellableCall(this.#clock, this.#clock.now() + this.#intervalMs, this.#fire);
  }

  /** Ends the round of `w`: out of the list now (the last one takes its slot), and the timer dropped with the last. */
  leave(w: PollWaiter): void {
    const at = w.pollSlot;
    // Woken by the timer (already out), or never joined.
    if (at < 0) return;
    const due = this.#due;
    // Only a waiter at its own slot: one of another poll, or one forged, leaves nothing of this one's.
    if (due[at] !== w) return;
    w.pollSlot = -1;
    const last = due.pop()!;
    if (last !== w) {
      due[at] = last;
      last.pollSlot = at;
    }
    if (due.length > 0) return;
    this.#timer?.cancel();
    this.#timer = undefined;
  }
}
