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
 *
 * Store requests the timed action waits on are the other thing a loaded
 * machine stretches (a lease put that syncs a file behind other test files'
 * writes): the child runs them through `reportWait`, which prints
 * `waited <wall-ms> <ms> <key>` for one that took 20 ms or more, and
 * `stalledWithin` counts those lines as well.
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
 * In the child: runs a store request on `key` and prints `waited <wall-ms>
 * <ms> <key>` when it ended (or failed) at least 20 ms after it began.
 */
export async function reportWait<T>(key: string, request: () => Promise<T>): Promise<T> {
  const began = performance.now();
  try {
    return await request();
  } finally {
    reportWaitSince(began, key);
  }
}

/** `reportWait` for a listing: from its first page asked for to its end (or the reader's stop). */
export async function* reportListingWait<T>(prefix: string, listing: AsyncIterable<T>): AsyncIterable<T> {
  const began = performance.now();
  try {
    yield* listing;
  } finally {
    reportWaitSince(began, prefix);
  }
}

function reportWaitSince(began: number, key: string): void {
  const ms = Math.round(performance.now() - began);
  if (ms >= REPORT_FROM_MS) console.log(`waited ${Date.now()} ${ms} ${key}`);
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
 * lines are given was stalled or waiting on a reported store request (the
 * union of those spans, so a stall of the whole machine counts once): about
 * the time lost to not being run or to the store then. A span is reported
 * when it ends, so one ending just after `to` counts (it held up what
 * happened before it). Smaller ones (under 20 ms) are left to the test's
 * fixed slack. Pass only the `waited` lines of requests the timed action
 * waits on.
 */
export function stalledWithin(lineSets: readonly (readonly string[])[], from: number, to: number): number {
  const spans: [number, number][] = [];
  for (const lines of lineSets) {
    for (const l of lines) {
      if (!l.startsWith("late ") && !l.startsWith("waited ")) continue;
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
