/**
 * @module Time limits of tests that start processes or do much real IO,
 * stretched by the machine's load: they guard against a hang, they do not
 * measure speed, and a machine shared by several runs can be many times
 * slower than a quiet one.
 */
import { readFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";

/** The most a limit is stretched: a hang still ends the test. */
const MAX_FACTOR = 4;
/**
 * The least: a limit read once, when the test is declared, does not see a
 * spike after that (another test file starting processes), and none sees
 * load that began within the last minute in full, which the one-minute
 * average shows only in part (at the start of a run on a busy machine it is
 * still low).
 */
const MIN_FACTOR = 2;

/** Threads runnable right now (Linux: the fourth field of /proc/loadavg), or 0 where that is not known. */
function runnableNow(): number {
  try {
    const runnable = Number(readFileSync("/proc/loadavg", "utf8").split(" ")[3]?.split("/")[0]);
    return Number.isFinite(runnable) ? runnable : 0;
  } catch {
    return 0;
  }
}

/** The load per core (the larger of the one-minute load average and the threads runnable now), between 2 and 4. */
export function loadFactor(): number {
  const perCore = Math.max(loadavg()[0]!, runnableNow()) / Math.max(1, availableParallelism());
  return Number.isFinite(perCore) ? Math.min(MAX_FACTOR, Math.max(MIN_FACTOR, perCore)) : MIN_FACTOR;
}

/**
 * `ms` times the load per core (the larger of the one-minute load average
 * and the threads runnable now), between 2 and 4 times, read now: given as
 * a test's `timeout`, when the test is declared (the file loads). A test
 * that starts processes takes `loadLimitTimeout` and `withinLoadLimit`
 * instead, which read the load while it runs.
 */
export function scaledForLoad(ms: number): number {
  return Math.round(ms * loadFactor());
}

/**
 * The bound of one wait inside a process scenario (a takeover, a child's
 * start, a phase of the work), read when the wait starts: `quietMs` on a
 * quiet machine, stretched by the load per core beyond 2, up to twice
 * `quietMs`. Such a wait guards against a hang; a promise about time (a
 * lease's takeover) is checked on its own, net of the time a process was
 * not run, so stretching the guard weakens nothing.
 */
export function waitBound(quietMs: number, factor: () => number = loadFactor): number {
  return Math.round((quietMs * factor()) / MIN_FACTOR);
}

/** How often `withinLoadLimit` reads the load again. */
const RELOAD_EVERY_MS = 1_000;
/** vitest's own timeout is this much past the largest stretch, so that the test's limit speaks first. */
const BACKSTOP_MS = 5_000;

/**
 * The vitest `timeout` of a test whose body runs in `withinLoadLimit(ms, ...)`:
 * the largest stretch of `ms` and a little more. vitest fixes it when the
 * test is declared, so it only backs the limit that body sets itself.
 */
export function loadLimitTimeout(ms: number): number {
  return MAX_FACTOR * ms + BACKSTOP_MS;
}

/**
 * Runs `body` under a time limit of `ms` stretched by the load (as
 * `scaledForLoad`), read when it starts and again every second: the limit
 * is the largest stretch read so far, so a load that rises while the test
 * runs (or between the file's loading and the test's start) is seen. Rejects
 * with the limit and the stretch once the time since the start passed it;
 * the body is not stopped (a child it started is killed after the test).
 * Give the test `{ timeout: loadLimitTimeout(ms) }`.
 */
export function withinLoadLimit<T>(ms: number, body: () => Promise<T>, factor: () => number = loadFactor, everyMs = RELOAD_EVERY_MS): Promise<T> {
  const start = Date.now();
  let most = factor();
  let timer: ReturnType<typeof setInterval> | undefined;
  const over = new Promise<never>((_, reject) => {
    timer = setInterval(() => {
      most = Math.max(most, factor());
      const limit = Math.round(ms * most);
      const took = Date.now() - start;
      if (took > limit) {
        reject(
          new Error(
            `the test ran ${took} ms, past its limit of ${limit} ms (${ms} ms stretched ${most.toFixed(2)} times by the load, the most read since it started)`,
          ),
        );
      }
    }, everyMs);
  });
  return Promise.race([body(), over]).finally(() => clearInterval(timer));
}

/**
 * The time limit of a test that runs much work in this process alone (many
 * random sequences against a model, hundreds of file system races, parsing
 * every module): a guard against a hang, not a speed check. Such a test
 * takes seconds of CPU; on two cores under load its wall time is many times
 * that (the queue model test, 100 sequences, ran past vitest's default 30 s
 * at a load of 16), and a load spike while it runs is not seen by a limit
 * read when the file was loaded, so the limit is the largest stretch of 30 s
 * outright.
 */
export const HEAVY_TEST_MS = MAX_FACTOR * 30_000;
