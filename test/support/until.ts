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

/** A bound of `ms` on the time this process is run from now; `stop` ends its probe. */
function runTimeBound(ms: number): { passed(): Promise<boolean>; stop(): void } {
  const probe = startLocalLatenessProbe();
  const from = Date.now();
  return {
    async passed() {
      const now = Date.now();
      // A stall is reported by the probe's first tick after it, which may come after this check.
      return now - from > ms && now - from - (await probe.notRunWithin(from, now)) > ms;
    },
    stop: () => probe.stop(),
  };
}

/**
 * Resolves once `cond()` is true, checking every 2 ms; rejects naming
 * `what` after `timeoutMs` (default 5 s) of this process being run.
 */
export async function until(what: string, cond: () => Promise<boolean> | boolean, timeoutMs = 5_000): Promise<void> {
  const bound = runTimeBound(timeoutMs);
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
