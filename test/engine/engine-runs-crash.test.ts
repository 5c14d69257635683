/**
 * @module The engine over compact key runs killed mid-fill: a child writer
 * with a memtable of a few keys commits batches of edge keys and values
 * (runs-batches.ts) and is SIGKILLed at a random point, repeatedly, while
 * it freezes, merges and rewrites runs, checkpoints and compacts. Each
 * reopen must hold exactly the batches up to some point at or past the
 * last one reported durable: nothing lost, nothing half applied, no
 * deleted key back (the rounds and their checks: fixtures/crash-rounds.ts).
 */
import { describe, expect, it } from "vitest";
import { testRandom } from "../support/seed.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { scaledForLoad } from "../support/load.js";
import { durableCount, killRounds, useWorkloadTuning } from "./fixtures/crash-rounds.js";

const tempDir = useTempDirs("taquba-runs-crash-");
// Each round starts a TypeScript child, which takes seconds on a loaded machine: a hang guard, stretched by the load.
const LIMIT_MS = scaledForLoad(120_000);

useWorkloadTuning("runs");

describe("engine over compact key runs, killed mid-fill", () => {
  it("holds exactly a prefix of the batches, at least every one reported durable, after each SIGKILL (values paged by block in every other round)", {
    timeout: LIMIT_MS,
  }, async () => {
    const random = testRandom("engine runs crash");
    const { applied } = await killRounds({
      workload: "runs",
      dir: await tempDir(),
      random,
      rounds: 3,
      killWhen: (round) => {
        const target = 10 + random.int(round === 0 ? 80 : 40);
        return (lines) => durableCount(lines) >= target;
      },
      maxDelayMs: 30,
      maxExtra: 12,
    });
    expect(applied).toBeGreaterThanOrEqual(30);
  });
});
