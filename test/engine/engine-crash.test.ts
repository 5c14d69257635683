/**
 * @module Engine crash recovery: a child process commits in several loops and is
 * killed with SIGKILL at a random point, repeatedly; reopening must recover
 * every commit it reported durable and no half batch, and no deleted key
 * may come back (the writer checkpoints incrementally and compacts). Here
 * values held in memory; paged values in engine-crash-values.test.ts, WAL
 * cohorts, compactions and S3 in the other engine-crash-*.test.ts files
 * (fixtures/crash-writer-rounds.ts).
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
});
