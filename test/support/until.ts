/**
 * @module Waiting, in real time and bounded, for a condition that follows
 * real IO (an HTTP exchange, a child process) or background work, where no
 * event says it happened. Logic that depends on time uses `MockClock`
 * instead.
 *
 * The bound counts the time this process was run (its lateness probe, see
 * lateness-probe.ts): on busy cores a process that is not scheduled waits
 * for nothing of its own, and a wait of work that takes 50 ms once took
 * 604 ms of wall time at load 15-20. A hang still ends at the bound.
 */
import { startLocalLatenessProbe } from "./lateness-probe.js";
import { watchRunQueueWait } from "./run-queue-wait.js";

/**
 * A bound of `ms` on the time this process is run from now, and `child` too
 * when given (its wait to be run, see run-queue-wait.ts); `stop` ends the probes.
 */
function runTimeBound(ms: number, child?: number): { passed(): Promise<boolean>; stop(): void } {
  const probe = startLocalLatenessProbe();
  const childWaits = child === undefined ? undefined : watchRunQueueWait(child);
  const from = Date.now();
  return {
    async passed() {
      const now = Date.now();
      if (now - from <= ms) return false;
      // A stall is reported by the probe's first tick after it, which may come after this check.
      // Either process not being run holds up the condition: the larger of the two (they overlap on a busy machine).
      const notRun = Math.max(await probe.notRunWithin(from, now), childWaits?.waitedMs() ?? 0);
      return now - from - notRun > ms;
    },
    stop: () => {
      probe.stop();
      childWaits?.stop();
    },
  };
}

/** Options of `until`. */
export interface UntilOptions {
  /**
   * The process whose work the condition waits for (a child writing a file):
   * the time it waited to be run does not use up the bound either.
   */
  child?: number;
}

/**
 * Resolves once `cond()` is true, checking every 2 ms; rejects naming
 * `what` after `timeoutMs` (default 5 s) of this process (and `opts.child`) being run.
 */
export async function until(what: string, cond: () => Promise<boolean> | boolean, timeoutMs = 5_000, opts: UntilOptions = {}): Promise<void> {
  const bound = runTimeBound(timeoutMs, opts.child);
  try {
    while (!(await cond())) {
      if (await bound.passed()) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((r) => setTimeout(r, 2));
    }
  } finally {
    bound.stop();
  }
}

/**
 * Resolves once `check()` no longer throws (an `expect` of a state reached
 * by background work), checking every 2 ms; after `timeoutMs` (default 1 s)
 * of this process being run, throws what `check` last threw.
 */
export async function eventually(check: () => Promise<void> | void, timeoutMs = 1_000): Promise<void> {
  const bound = runTimeBound(timeoutMs);
  try {
    for (;;) {
      try {
        await check();
        return;
      } catch (err) {
        if (await bound.passed()) throw err;
      }
      await new Promise<void>((r) => setTimeout(r, 2));
    }
  } finally {
    bound.stop();
  }
}
