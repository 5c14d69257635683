/**
 * @module Seeded randomness for tests that choose targets and delays at
 * random: the seed is printed when the test fails, and TAQUBA_TEST_SEED
 * replays it. A child process the test starts gets its own seed drawn
 * from the test's generator (see `childEnv` and child-seed.ts), so the
 * one printed seed also replays every choice the children make.
 */
import { onTestFailed } from "vitest";
import { seededRandom } from "../../runtime/store/prng.js";

/** A seeded random-number source; see `testRandom`. */
export interface TestRandom {
  seed: number;
  /** Uniform in [0, 1). */
  random(): number;
  /** A whole number in [0, below). */
  int(below: number): number;
  /** `process.env` plus a TAQUBA_TEST_SEED for one child process, drawn from this generator. */
  childEnv(env?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
}

/**
 * A random-number source for the test `name`: seeded from TAQUBA_TEST_SEED
 * when set, else from a fresh random seed. Call it inside the test: if the
 * test fails (a timeout included), the seed is printed, so the failure can
 * be run again with the same choices.
 */
export function testRandom(name: string): TestRandom {
  const fromEnv = process.env.TAQUBA_TEST_SEED;
  const seed = fromEnv !== undefined && fromEnv !== "" ? Number(fromEnv) >>> 0 : Math.floor(Math.random() * 2 ** 32);
  onTestFailed(() => console.log(`${name}: seed ${seed} (replay with TAQUBA_TEST_SEED=${seed})`));
  const random = seededRandom(seed);
  const int = (below: number) => Math.floor(random() * below);
  return { seed, random, int, childEnv: (env = process.env) => ({ ...env, TAQUBA_TEST_SEED: String(int(2 ** 32)) }) };
}
