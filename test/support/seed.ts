/**
 * @module Seeded randomness for tests that choose targets and delays at
 * random: the seed is printed, and TAQUBA_TEST_SEED replays it.
 */
import { seededRandom } from "../../runtime/store/prng.js";

/**
 * A random-number source for the test `name`: seeded from TAQUBA_TEST_SEED
 * when set, else from a fresh random seed. Prints the seed, so a failure
 * seen once can be run again with the same choices.
 */
export function testRandom(name: string): { seed: number; random: () => number; int(below: number): number } {
  const fromEnv = process.env.TAQUBA_TEST_SEED;
  const seed = fromEnv !== undefined && fromEnv !== "" ? Number(fromEnv) >>> 0 : Math.floor(Math.random() * 2 ** 32);
  console.log(`${name}: seed ${seed} (replay with TAQUBA_TEST_SEED=${seed})`);
  const random = seededRandom(seed);
  return { seed, random, int: (below) => Math.floor(random() * below) };
}
