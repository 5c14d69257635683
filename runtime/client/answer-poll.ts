/**
 * @module How a command waits for its answer: it re-reads the answer
 * object after short intervals that double up to the client's poll
 * interval, and at once when notified that the answer appeared.
 *
 * Without notification (S3) the re-reads are the only way to see the
 * answer. With it (a local directory), they only cover a missed
 * notification; they still start short, so a missed one costs about as
 * long again as the owner took to answer (a few tens of milliseconds for
 * a quick owner) rather than a whole poll interval, and a slow owner is
 * re-read at the poll interval, never in a busy loop.
 */

/** The first re-read on a store without notification, where re-reading is how the answer is seen. */
export const FIRST_ANSWER_POLL_MS = 10;
/** The first re-read on a notified store, where it only covers a missed notification. */
export const FIRST_NOTIFIED_ANSWER_POLL_MS = 50;

/** The intervals between re-reads of an answer: the first, then each doubled, up to `capMs`. */
export function answerPollIntervals(notified: boolean, capMs: number): () => number {
  let next = Math.min(notified ? FIRST_NOTIFIED_ANSWER_POLL_MS : FIRST_ANSWER_POLL_MS, capMs);
  return () => {
    const ms = next;
    next = Math.min(next * 2, capMs);
    return ms;
  };
}

/** What `awaitAnswer` needs: a read, a wait and the time. */
export interface AnswerWaitPort<A> {
  /** The answer, or undefined while there is none. */
  read(): Promise<A | undefined>;
  /** A promise settled when the answer may have appeared (never, without notification), and its disposal. */
  notified(): { promise: Promise<void>; dispose(): void };
  /** Resolves after `ms`, or earlier when `early` settles (or the client closes). */
  sleep(ms: number, early: Promise<void>): Promise<void>;
  now(): number;
}

/**
 * Reads until the answer is there and resolves with it; past `deadline`
 * (ms), calls `timedOut` and throws what it returns.
 */
export async function awaitAnswer<A>(port: AnswerWaitPort<A>, intervals: () => number, deadline: number, timedOut: () => Error): Promise<A> {
  for (;;) {
    // Listening before the read: an answer written between the read and the sleep still wakes it.
    const changed = port.notified();
    try {
      const answer = await port.read();
      if (answer !== undefined) return answer;
      const now = port.now();
      if (now >= deadline) throw timedOut();
      await port.sleep(Math.min(intervals(), deadline - now), changed.promise);
    } finally {
      changed.dispose();
    }
  }
}
