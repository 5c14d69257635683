/**
 * @module Engine crash recovery (fixtures/crash-writer-rounds.ts) with the
 * writer's values paged out of memory: every value paged out through a
 * cache that keeps nothing, and values read back by block through a cache
 * of a few blocks (a file of its own, beside engine-crash.test.ts, so
 * vitest runs them side by side).
 */
import { describe, it } from "vitest";
import { useTempDirs } from "../support/temp-dirs.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { crashRounds } from "./fixtures/crash-writer-rounds.js";

const tempDir = useTempDirs("taquba-crash-");

describe("engine crash recovery", () => {
  it(
    "recovers the same with every value paged out and a cache that keeps nothing (compactions read old runs back)",
    {
      timeout: loadLimitTimeout(90_000),
    },
    () =>
      withinLoadLimit(90_000, async () => {
        await crashRounds(tempDir, "paged");
      }),
  );

  it("recovers the same with values read back by block through a cache of a few blocks that reads ahead", { timeout: loadLimitTimeout(90_000) }, () =>
    withinLoadLimit(90_000, async () => {
      await crashRounds(tempDir, "blocks");
    }),
  );
});
