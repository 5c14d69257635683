/**
 * @module Waiting, in real time and bounded, for a condition that follows
 * real IO (an HTTP exchange, a child process), where no event says it
 * happened. Logic that depends on time uses `MockClock` instead.
 */

/**
 * Resolves once `cond()` is true, checking every 2 ms; rejects naming
 * `what` after `timeoutMs` (default 5 s).
 */
export async function until(what: string, cond: () => Promise<boolean> | boolean, timeoutMs = 5_000): Promise<void> {
  const giveUp = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > giveUp) throw new Error(`timed out waiting for ${what}`);
    await new Promise<void>((r) => setTimeout(r, 2));
  }
}
