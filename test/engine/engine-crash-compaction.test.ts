/**
 * @module Engine crash recovery (fixtures/crash-writer-rounds.ts) killed
 * among compactions: incremental checkpoints publishing beside slow
 * compactions, and runs folded by tiers at the cap.
 */
import { describe, expect, it } from "vitest";
import { useTempDirs } from "../support/temp-dirs.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { crashRounds } from "./fixtures/crash-writer-rounds.js";

const tempDir = useTempDirs("taquba-crash-");

describe("engine crash recovery", () => {
  it(
    "recovers the same with incremental checkpoints publishing while slow compactions run (killed during either)",
    {
      timeout: loadLimitTimeout(120_000),
    },
    () =>
      withinLoadLimit(120_000, async () => {
        const seen = await crashRounds(tempDir, "beside", undefined, 6, (s) => s.beside > 0 && s.folds > 0);
        // The kills really landed among overlapping checkpoints, some of which folded the runs beside a compaction.
        expect(seen.beside).toBeGreaterThan(0);
        expect(seen.folds).toBeGreaterThan(0);
      }),
  );

  it("recovers the same with runs folded by tiers at the cap instead of compacting (killed during a fold)", { timeout: loadLimitTimeout(90_000) }, () =>
    withinLoadLimit(90_000, async () => {
      const seen = await crashRounds(tempDir, "tiered", undefined, 6, (s) => s.tiers > 0);
      // The writer really folded runs by tiers between the kills.
      expect(seen.tiers).toBeGreaterThan(0);
    }),
  );
});
