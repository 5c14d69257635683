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
 * The least: the load is read once, when the test is declared, and a spike
 * after that (another test file starting processes) is not seen; nor is load
 * that began within the last minute, which the one-minute average shows only
 * in part (at the start of a run on a busy machine it is still low).
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

/**
 * `ms` times the load per core (the larger of the one-minute load average
 * and the threads runnable now), between 2 and 4 times: read when the test
 * is declared, which is when its limit is set.
 */
export function scaledForLoad(ms: number): number {
  const perCore = Math.max(loadavg()[0]!, runnableNow()) / Math.max(1, availableParallelism());
  const factor = Number.isFinite(perCore) ? Math.min(MAX_FACTOR, Math.max(MIN_FACTOR, perCore)) : MIN_FACTOR;
  return Math.round(ms * factor);
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
