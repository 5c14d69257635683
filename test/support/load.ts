/**
 * @module Time limits of tests that start processes or do much real IO,
 * stretched by the machine's load: they guard against a hang, they do not
 * measure speed, and a machine shared by several runs can be many times
 * slower than a quiet one.
 */
import { availableParallelism, loadavg } from "node:os";

/** The most a limit is stretched: a hang still ends the test. */
const MAX_FACTOR = 4;

/**
 * `ms` times the one-minute load average per core, between 1 and 4 times:
 * read when the test is declared, which is when its limit is set.
 */
export function scaledForLoad(ms: number): number {
  const perCore = loadavg()[0]! / Math.max(1, availableParallelism());
  const factor = Number.isFinite(perCore) ? Math.min(MAX_FACTOR, Math.max(1, perCore)) : 1;
  return Math.round(ms * factor);
}

/**
 * The time limit of a test that runs much work in this process alone (many
 * random sequences against a model, a large fill in memory): a guard
 * against a hang, not a speed check. Such a test takes seconds of CPU; on
 * two cores under load its wall time is many times that (the queue model
 * test, 100 sequences, ran past vitest's default 30 s at a load of 16), and
 * a load spike while it runs is not seen by a limit read when the file was
 * loaded, so the limit is the largest stretch of 30 s outright.
 */
export const CPU_HEAVY_TEST_MS = MAX_FACTOR * 30_000;
