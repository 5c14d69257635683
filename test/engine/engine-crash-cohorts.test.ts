/**
 * @module Engine crash recovery (fixtures/crash-writer-rounds.ts) with the
 * WAL's waves of 64 writers written as cohorts: two WAL objects a wave, and
 * two WAL puts on LocalStore's two put threads at once.
 */
import { describe, expect, it } from "vitest";
import { useTempDirs } from "../support/temp-dirs.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { crashRounds } from "./fixtures/crash-writer-rounds.js";

const tempDir = useTempDirs("taquba-crash-");

describe("engine crash recovery", () => {
  it("recovers the same with 64 writers whose waves go in two WAL objects each (walCohorts 2)", { timeout: loadLimitTimeout(60_000) }, () =>
    withinLoadLimit(60_000, async () => {
      await crashRounds(tempDir, "cohorts");
    }),
  );

  // Two WAL puts on LocalStore's two put threads at once: a later object may be stored before an earlier one,
  // and a kill between them leaves it unacknowledged and not replayed (recovery stops at the gap).
  it("recovers the same with two WAL puts at once on the two put threads (walCohorts 3, 64 writers)", { timeout: loadLimitTimeout(60_000) }, () =>
    withinLoadLimit(60_000, async () => {
      const seen = await crashRounds(tempDir, "queued", undefined, 6, (s) => s.queued > 0);
      expect(seen.queued, "commits sent while two WAL puts were on the threads").toBeGreaterThan(0);
    }),
  );
});
