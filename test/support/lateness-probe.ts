/**
 * @module How late a child process's timers fire, for process tests that
 * assert a time bound (a takeover within the lease duration plus one
 * renewal interval): on busy cores a process that is not scheduled acts
 * late by exactly as long, whatever its logic, so the test measures that
 * lateness in the process whose action it times and allows it on top of
 * the bound, instead of a slack guessed for one machine.
 *
 * The child calls `startLatenessProbe()`: a timer every 100 ms, and a line
 * `late <wall-ms> <ms>` whenever it fired at least 20 ms late. The test
 * sums them over a window with `latenessWithin`.
 */

const TICK_MS = 100;
const REPORT_FROM_MS = 20;

/** In the child: prints `late <wall-ms> <ms>` for every tick that fired late. Never keeps the process alive. */
export function startLatenessProbe(): void {
  let last = performance.now();
  setInterval(() => {
    const now = performance.now();
    const late = Math.round(now - last - TICK_MS);
    last = now;
    if (late >= REPORT_FROM_MS) console.log(`late ${Date.now()} ${late}`);
  }, TICK_MS).unref();
}

/**
 * In the test: the lateness a child reported for stalls that ended from
 * `from` to `to` (wall ms): about the time it lost to not being run then.
 * Smaller stalls (under 20 ms a tick) are left to the test's fixed slack.
 */
export function latenessWithin(lines: readonly string[], from: number, to: number): number {
  let sum = 0;
  for (const l of lines) {
    if (!l.startsWith("late ")) continue;
    const [, at, ms] = l.split(" ");
    // A stall is reported when it ends: one that ended just after `to` held up what happened before it.
    if (Number(at) >= from && Number(at) <= to + TICK_MS) sum += Number(ms);
  }
  return sum;
}
