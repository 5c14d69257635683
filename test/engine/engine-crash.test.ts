/**
 * @module Engine crash recovery: a child process commits in several loops and is
 * killed with SIGKILL at a random point, repeatedly; reopening must recover
 * every commit it reported durable and no half batch, and no deleted key
 * may come back (the writer checkpoints incrementally and compacts). Here
 * the ways of holding values; WAL cohorts, compactions and S3 in the other
 * engine-crash-*.test.ts files (fixtures/crash-writer-rounds.ts).
 */
import { describe, it } from "vitest";
import { useTempDirs } from "../support/temp-dirs.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { crashRounds } from "./fixtures/crash-writer-rounds.js";

const tempDir = useTempDirs("taquba-crash-");

describe("engine crash recovery", () => {
  it("recovers every durable commit and no half batch after SIGKILL, repeatedly", { timeout: loadLimitTimeout(60_000) }, () =>
    withinLoadLimit(60_000, async () => {
      await crashRounds(tempDir, "plain");
    }),
  );

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
