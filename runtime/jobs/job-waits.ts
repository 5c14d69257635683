/**
 * @module `JobWaits`: the waits of one runner's job handles, woken by the
 * runtime's in-process termination announcements.
 *
 * Every termination committed through this process's queue (the worker's
 * settlements, cancels, dead-step reconciliation) is announced after it is
 * durable; a wait registers on the announcement of its run, so a termination
 * costs one map lookup plus the reads of that run's own waiters, whatever
 * the number of waits. Handles of one run share one registration.
 *
 * The fallback for a termination no announcement reached (committed by
 * another process that has since taken the store over, or before this
 * process subscribed) is ONE shared timer per runner, not one per wait:
 * each poll interval it re-reads at most {@link FALLBACK_BATCH} waiting
 * runs, oldest checked first, and moves them to the back. A poll's cost is
 * thus bounded whatever the number of waits, and an unannounced termination
 * is noticed within `ceil(waiting runs / FALLBACK_BATCH)` poll intervals.
 */
import type { TimedClock } from "../clock.js";
import type { RunEvents } from "../workflow/runs/run-events.js";
import { NO_WORKER_WARNING_MS } from "../workflow/workflow-runtime.js";

/** Runs re-read per fallback poll. */
export const FALLBACK_BATCH = 64;

interface Entry {
  readonly wakers: Set<() => void>;
  readonly dispose: () => void;
}

/** A registered wait: `promise` resolves when the run may have ended (the caller re-reads); `dispose` drops it. */
export interface JobWait {
  readonly promise: Promise<void>;
  dispose(): void;
  /** Set once the queue closed or its engine failed: the wait is over for good, settle with this error. */
  readonly closedError: Error | undefined;
}

/** The waits of one runner's job handles (see the module comment); `runner.waits`. */
export class JobWaits {
  readonly #events: RunEvents;
  readonly #clock: TimedClock;
  readonly #pollIntervalMs: number;
  /** Whether the run is still active; false for terminated or unknown runs. */
  readonly #isActive: (runId: string) => Promise<boolean>;
  /** Insertion order is the fallback's check order: a checked run moves to the back. */
  readonly #waiting = new Map<string, Entry>();
  #poller: AbortController | undefined;
  /** Since when some wait has been registered without a break (the poller's start), on the runner's clock. */
  #busySince = 0;
  /** Runs re-read by the fallback poll so far (for tests and benchmarks). */
  fallbackReads = 0;

  /** Called at each poll while a wait is older than `NO_WORKER_WARNING_MS` (the runtime warns once when no worker runs). */
  readonly #onLongWait: () => void;

  constructor(
    events: RunEvents,
    clock: TimedClock,
    pollIntervalMs: number,
    isActive: (runId: string) => Promise<boolean>,
    onLongWait: () => void = () => undefined,
  ) {
    this.#onLongWait = onLongWait;
    this.#events = events;
    this.#clock = clock;
    this.#pollIntervalMs = pollIntervalMs;
    this.#isActive = isActive;
  }

  /** How many runs have waits registered. */
  get size(): number {
    return this.#waiting.size;
  }

  /**
   * Registers a wait on `runId`. Register BEFORE reading the run's records,
   * so a termination between the read and the wait still wakes it.
   */
  register(runId: string): JobWait {
    let entry = this.#waiting.get(runId);
    if (entry === undefined) {
      const sub = this.#events.next(runId);
      const wakers = new Set<() => void>();
      entry = { wakers, dispose: () => sub.dispose() };
      this.#waiting.set(runId, entry);
      void sub.promise.then(() => this.#wake(runId));
    }
    let waker!: () => void;
    const promise = new Promise<void>((resolve) => (waker = resolve));
    entry.wakers.add(waker);
    this.#ensurePoller();
    const e = entry;
    const events = this.#events;
    return {
      promise,
      get closedError() {
        return events.closedError;
      },
      dispose: () => {
        e.wakers.delete(waker);
        if (e.wakers.size === 0 && this.#waiting.get(runId) === e) {
          this.#waiting.delete(runId);
          e.dispose();
          if (this.#waiting.size === 0) this.#stopPoller();
        }
      },
    };
  }

  /** Wakes every wait of `runId` and drops its registration (they re-register if the run is still active). */
  #wake(runId: string): void {
    const e = this.#waiting.get(runId);
    if (e === undefined) return;
    this.#waiting.delete(runId);
    e.dispose();
    for (const w of e.wakers) w();
    if (this.#waiting.size === 0) this.#stopPoller();
  }

  #ensurePoller(): void {
    if (this.#poller !== undefined) return;
    const stop = new AbortController();
    this.#poller = stop;
    this.#busySince = this.#clock.now();
    void this.#pollLoop(stop.signal);
  }

  #stopPoller(): void {
    this.#poller?.abort();
    this.#poller = undefined;
  }

  async #pollLoop(signal: AbortSignal): Promise<void> {
    const clock = this.#clock;
    while (!signal.aborted) {
      try {
        await clock.waitUntil(clock.now() + this.#pollIntervalMs, signal);
      } catch {
        return;
      }
      if (clock.now() - this.#busySince >= NO_WORKER_WARNING_MS) this.#onLongWait();
      const batch: Array<[string, Entry]> = [];
      for (const item of this.#waiting) {
        if (batch.length >= FALLBACK_BATCH) break;
        batch.push(item);
      }
      for (const [runId, e] of batch) {
        // Move to the back first, so the next poll checks others even if this read fails.
        if (this.#waiting.get(runId) === e) {
          this.#waiting.delete(runId);
          this.#waiting.set(runId, e);
        }
      }
      await Promise.all(
        batch.map(async ([runId, e]) => {
          this.fallbackReads++;
          let active: boolean;
          try {
            active = await this.#isActive(runId);
          } catch {
            // A failed read wakes the waits: their own read reports the error to the caller.
            active = false;
          }
          if (!active && this.#waiting.get(runId) === e) this.#wake(runId);
        }),
      );
    }
  }
}
