/**
 * @module The seq high-water mark (`m/seq`): a bound at or above every id
 * and seq the queue handed out for a stored job, so that after a restart
 * new ids still sort after them (FIFO order within one millisecond, and
 * after the clock went back).
 *
 * Storing each new seq itself costs a key write per enqueue, one per
 * workflow step. Instead the mark stored is a bound a little ahead of the
 * seq (`AHEAD_MS` later, the smallest ULID of that millisecond), and a new
 * seq below a mark already applied stores nothing. A mark counts once the
 * commit storing it is applied to the engine, not once it is durable: the
 * engine makes commits durable in the order it applied them, after a WAL
 * write fails it makes none durable again (wal-writer.ts), and a reopen
 * recovers the commits applied up to some point, never one without those
 * before it (replay stops at the first missing WAL object, recovery.ts).
 * So a stored job whose commit relied on the mark is recovered only with
 * the mark. Counted only once durable,
 * every commit applied while the mark's own waited for its WAL put wrote
 * the mark again (5 % of a workflow's continuing steps on a MemoryStore,
 * bench/step-commit-ops.ts). A commit the engine refused was never applied
 * and counts nothing. Within one commit, the mark it stores covers its
 * later inserts below it: a batch of jobs stores one mark, not one each. The price: ids made within `AHEAD_MS` after a
 * restart carry a time up to that much ahead of the clock, as they already
 * do after the clock went back.
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
  /** Every seq at or below this is covered by a mark stored by an applied commit. */
  #covered: string;

  /** @param stored the mark stored when the queue opened ("" when none) */
  constructor(stored: string) {
    this.#covered = stored;
  }

  /** The mark to store with `seq`, or undefined when an applied one covers it. */
  markFor(seq: string): string | undefined {
    if (seq <= this.#covered) return undefined;
    const t = decodeTime(seq);
    return t + AHEAD_MS > TIME_MAX ? seq : floorOf(t + AHEAD_MS);
  }

  /** Records that the engine applied a commit storing `mark` (see the module documentation); call it in the commit's turn. */
  applied(mark: string): void {
    if (mark > this.#covered) this.#covered = mark;
  }
}
