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
 * sums them over a window with `stalledWithin`, together with the test
 * process's own stalls when it serves the store (`startLocalLatenessProbe`).
 */

const TICK_MS = 100;
const REPORT_FROM_MS = 20;

/** Calls `report` with `late <wall-ms> <ms>` for every tick that fired late, and `ticked` after every tick. Never keeps the process alive. */
function probe(report: (line: string) => void, ticked: () => void = () => undefined): NodeJS.Timeout {
  let last = performance.now();
  return setInterval(() => {
    const now = performance.now();
    const late = Math.round(now - last - TICK_MS);
    last = now;
    if (late >= REPORT_FROM_MS) report(`late ${Date.now()} ${late}`);
    ticked();
  }, TICK_MS).unref();
}

/** In the child: prints `late <wall-ms> <ms>` for every tick that fired late. */
export function startLatenessProbe(): void {
  probe((line) => console.log(line));
}

/** The probe of the test process; see `startLocalLatenessProbe`. */
export interface LocalLatenessProbe {
  readonly lines: string[];
  /**
   * How long this process was not run from `from` to `to` (wall ms, as
   * `Date.now()`), once the probe has ticked after `to`: a stall is
   * reported when it ends, and one that ends later held up what came before.
   */
  notRunWithin(from: number, to: number): Promise<number>;
  stop(): void;
}

/**
 * In the test process, which serves the S3 protocol server to the children
 * (its stalls hold up every store answer they wait for), or whose own
 * timers a test times: the same lines, collected until `stop`.
 */
export function startLocalLatenessProbe(): LocalLatenessProbe {
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  const timer = probe(
    (line) => lines.push(line),
    () => {
      for (const w of [...waiters]) w();
    },
  );
  return {
    lines,
    async notRunWithin(from, to) {
      while (Date.now() <= to + TICK_MS) {
        await new Promise<void>((resolve) => {
          const done = () => {
            waiters.delete(done);
            resolve();
          };
          waiters.add(done);
        });
      }
      return stalledWithin([lines], from, to);
    },
    stop: () => clearInterval(timer),
  };
}

/**
 * The time from `from` to `to` during which any of the processes whose
 * lines are given was stalled (the union of their stalls, so a stall of the
 * whole machine counts once): about the time lost to not being run then. A
 * stall is reported when it ends, so one ending just after `to` counts (it
 * held up what happened before it). Smaller stalls (under 20 ms a tick) are
 * left to the test's fixed slack.
 */
export function stalledWithin(lineSets: readonly (readonly string[])[], from: number, to: number): number {
  const spans: [number, number][] = [];
  for (const lines of lineSets) {
    for (const l of lines) {
      if (!l.startsWith("late ")) continue;
      const [, at, ms] = l.split(" ");
      const end = Number(at);
      if (end >= from && end <= to + TICK_MS) spans.push([end - Number(ms), end]);
    }
  }
  spans.sort((a, b) => a[0] - b[0]);
  let sum = 0;
  let reach = Number.NEGATIVE_INFINITY;
  for (const [start, end] of spans) {
    if (end <= reach) continue;
    sum += end - Math.max(start, reach);
    reach = end;
  }
  return sum;
}
