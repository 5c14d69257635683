/**
 * @module A command's wait for its answer, on a mock clock: on a notified
 * store a missed notification costs about as long again as the owner took
 * (not a whole poll interval), a notification wakes it at once, and an
 * owner that does not answer is re-read at the poll interval, never in a
 * busy loop, until the deadline.
 */
import { describe, expect, it } from "vitest";
import { MockClock } from "taquba";
import { answerPollIntervals, awaitAnswer, FIRST_ANSWER_POLL_MS, FIRST_NOTIFIED_ANSWER_POLL_MS } from "../../runtime/client/answer-poll.js";

const CAP_MS = 1000;
const START = 1_700_000_000_000;

interface Owner {
  /** When the answer is written (ms after the request), or never. */
  readonly answersAfterMs?: number;
  /** Whether the client is notified when it is written; false: the notification is missed. */
  readonly notifies: boolean;
}

/** Waits for an answer the simulated owner writes, moving the mock clock from one timer to the next; returns when it was seen and every read's time. */
async function waitFor(owner: Owner, notified: boolean, deadlineMs = 30_000): Promise<{ seenAfterMs: number | undefined; error?: unknown; reads: number[] }> {
  const clock = new MockClock(START);
  const reads: number[] = [];
  const listeners = new Set<() => void>();
  if (owner.answersAfterMs !== undefined && owner.notifies) {
    void clock.waitUntil(START + owner.answersAfterMs).then(() => {
      for (const l of [...listeners]) l();
    });
  }
  const waiting = awaitAnswer(
    {
      read: async () => {
        reads.push(clock.now() - START);
        return owner.answersAfterMs !== undefined && clock.now() - START >= owner.answersAfterMs ? "answer" : undefined;
      },
      notified: () => {
        let wake!: () => void;
        const promise = new Promise<void>((r) => (wake = r));
        listeners.add(wake);
        return { promise, dispose: () => listeners.delete(wake) };
      },
      sleep: (ms, early) => Promise.race([clock.waitUntil(clock.now() + ms), early]),
      now: () => clock.now(),
    },
    answerPollIntervals(notified, CAP_MS),
    START + deadlineMs,
    () => new Error("timed out"),
  );
  let settled: { value?: string; error?: unknown } | undefined;
  waiting.then(
    (value) => (settled = { value }),
    (error: unknown) => (settled = { error }),
  );
  for (let guard = 0; guard < 10_000; guard++) {
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    if (settled !== undefined) break;
    const next = clock.nextDeadline;
    if (next === undefined) throw new Error("the wait neither settled nor set a timer");
    clock.set(next);
  }
  if (settled === undefined) throw new Error("the wait did not settle");
  return { seenAfterMs: settled.error === undefined ? clock.now() - START : undefined, error: settled.error, reads };
}

describe("a command's wait for its answer", () => {
  it("on a notified store, a missed notification costs about as long again as the owner took, not the poll interval", async () => {
    for (const answersAfterMs of [5, 30, 120, 700]) {
      const { seenAfterMs, reads } = await waitFor({ answersAfterMs, notifies: false }, true);
      expect(seenAfterMs, `answer written after ${answersAfterMs} ms`).toBeLessThanOrEqual(
        Math.max(FIRST_NOTIFIED_ANSWER_POLL_MS, 2 * answersAfterMs + FIRST_NOTIFIED_ANSWER_POLL_MS),
      );
      expect(seenAfterMs!).toBeLessThan(CAP_MS);
      // Few reads on the way: the intervals double.
      expect(reads.length, `reads until ${answersAfterMs} ms`).toBeLessThanOrEqual(
        2 + Math.ceil(Math.log2(1 + answersAfterMs / FIRST_NOTIFIED_ANSWER_POLL_MS)),
      );
    }
    // The first re-read of a quick answer comes at the first interval.
    expect((await waitFor({ answersAfterMs: 30, notifies: false }, true)).seenAfterMs).toBe(FIRST_NOTIFIED_ANSWER_POLL_MS);
  });

  it("a notification wakes the wait at once, before the next re-read", async () => {
    for (const answersAfterMs of [1, 75, 400, 5_000]) {
      const { seenAfterMs } = await waitFor({ answersAfterMs, notifies: true }, true);
      expect(seenAfterMs, `notified at ${answersAfterMs} ms`).toBe(answersAfterMs);
    }
  });

  it("an owner that does not answer is re-read at the poll interval, never busily, until the deadline", async () => {
    for (const notified of [true, false]) {
      const { error, reads } = await waitFor({ notifies: notified }, notified, 60_000);
      expect(error).toMatchObject({ message: "timed out" });
      const first = notified ? FIRST_NOTIFIED_ANSWER_POLL_MS : FIRST_ANSWER_POLL_MS;
      expect(reads[0]).toBe(0);
      expect(reads[1]).toBe(first);
      const gaps = reads.slice(1).map((t, i) => t - reads[i]!);
      // Each gap at least the one before (doubling), none over the cap, all at the cap once it is reached.
      for (let i = 1; i < gaps.length - 1; i++) expect(gaps[i]!).toBeGreaterThanOrEqual(gaps[i - 1]!);
      expect(Math.max(...gaps)).toBe(CAP_MS);
      expect(reads.length, "reads in a minute").toBeLessThanOrEqual(60 + 10);
      // The last read is at the deadline, not after it.
      expect(reads.at(-1)).toBe(60_000);
    }
  });

  it("without notification the first re-read comes sooner, as the only way to see the answer", async () => {
    const { seenAfterMs } = await waitFor({ answersAfterMs: 3, notifies: false }, false);
    expect(seenAfterMs).toBe(FIRST_ANSWER_POLL_MS);
    // A poll interval below the first interval caps it.
    const small = answerPollIntervals(true, 20);
    expect([small(), small(), small()]).toEqual([20, 20, 20]);
  });
});
