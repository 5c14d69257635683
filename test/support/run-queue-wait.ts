/**
 * @module How long another process waited to be run, for a test that times
 * what that process does (its exit after its last line). On busy cores a
 * process that is runnable but not run is late by exactly as long, and the
 * test process's own stalls (lateness-probe.ts) show only part of it: the
 * test process needs almost no CPU to notice, the watched one needs its
 * own share. Linux counts it: the second field of `/proc/<pid>/schedstat`
 * is the time the process's main thread spent runnable on a run queue.
 *
 * The watch reads it every 10 ms from the start and keeps the last value
 * read; once the process has exited and been reaped the file is gone, so a
 * wait in its last moments may be left out (the count errs low, never
 * high). Where the file does not exist (not Linux) the count is 0.
 */
import { readFileSync } from "node:fs";

const EVERY_MS = 10;

/** The run queue wait of `pid`'s main thread in ns, or undefined when it cannot be read (gone, or not Linux). */
function runQueueWaitNs(pid: number): number | undefined {
  try {
    const ns = Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[1]);
    return Number.isFinite(ns) ? ns : undefined;
  } catch {
    return undefined;
  }
}

/** A watch of one process; see the module documentation. */
export interface RunQueueWatch {
  /** How long (ms) the process waited to be run from the start of the watch to its last reading. */
  waitedMs(): number;
  stop(): void;
}

/** Starts watching how long `pid` waits to be run. */
export function watchRunQueueWait(pid: number): RunQueueWatch {
  const first = runQueueWaitNs(pid);
  let last = first;
  const timer = setInterval(() => {
    const now = runQueueWaitNs(pid);
    if (now !== undefined) last = now;
  }, EVERY_MS).unref();
  return {
    waitedMs: () => (first === undefined || last === undefined ? 0 : Math.round((last - first) / 1e6)),
    stop: () => clearInterval(timer),
  };
}
