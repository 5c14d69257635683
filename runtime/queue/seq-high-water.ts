/**
 * @module The seq high-water mark (`m/seq`): a bound at or above every id
 * and seq the queue handed out for a stored job, so that after a restart
 * new ids still sort after them (FIFO order within one millisecond, and
 * after the clock went back).
 *
 * Storing each new seq itself costs a key write per enqueue, one per
 * workflow step. Instead the mark stored is a bound a little ahead of the
 * seq (`AHEAD_MS` later, the smallest ULID of that millisecond), and a new
 * seq below a mark already durable stores nothing. Only a durable mark
 * counts: one written by a commit that never became durable may be lost,
 * and the seqs it covered with it, but a later commit relying on it would
 * not be (commits become durable in order, so a mark that is durable
 * covers every commit after it that is). The price: ids made within
 * `AHEAD_MS` after a restart carry a time up to that much ahead of the
 * clock, as they already do after the clock went back.
 */
import { decodeTime, encodeTime } from "ulid";

/** How far ahead of a new seq the stored mark is: about one mark written per this many ms of enqueues. */
export const AHEAD_MS = 1000;

/** The largest time a ULID holds. */
const TIME_MAX = 2 ** 48 - 1;

/** The lowest ULID of millisecond `ms`. */
function floorOf(ms: number): string {
  return `${encodeTime(ms, 10)}0000000000000000`;
}

/** What this queue store's marks cover. */
export class SeqHighWater {
  /** Every seq at or below this is covered by a durable mark. */
  #durable: string;

  /** @param stored the mark stored when the queue opened ("" when none) */
  constructor(stored: string) {
    this.#durable = stored;
  }

  /** The mark to store with `seq`, or undefined when a durable one covers it. */
  markFor(seq: string): string | undefined {
    if (seq <= this.#durable) return undefined;
    const t = decodeTime(seq);
    return t + AHEAD_MS > TIME_MAX ? seq : floorOf(t + AHEAD_MS);
  }

  /** Records that a commit storing `mark` is durable. */
  durable(mark: string): void {
    if (mark > this.#durable) this.#durable = mark;
  }
}
