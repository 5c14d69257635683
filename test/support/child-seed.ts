/**
 * @module The random choices of a child process a randomised test starts
 * (a crash child's handler delays): seeded from the TAQUBA_TEST_SEED the
 * test passes it (test/support/seed.ts `childEnv`), so the seed the test
 * prints on failure replays the child's choices too.
 */
import { seededRandom } from "../../runtime/store/prng.js";

/** A whole number in [0, below), from the seed the test gave this process. */
export function childRandomInt(): (below: number) => number {
  const fromEnv = process.env.TAQUBA_TEST_SEED;
  // Run by hand without a seed: pick one, and say which, so the run can be repeated.
  const seed = fromEnv !== undefined && fromEnv !== "" ? Number(fromEnv) >>> 0 : Math.floor(Math.random() * 2 ** 32);
  if (fromEnv === undefined || fromEnv === "") process.stderr.write(`child seed ${seed} (repeat with TAQUBA_TEST_SEED=${seed})\n`);
  const random = seededRandom(seed);
  return (below) => Math.floor(random() * below);
}
