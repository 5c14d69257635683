/**
 * @module The engine killed while its memtable takes young runs back: a
 * child writer whose memtable grows and shrinks between 16 and 128 keys
 * rewrites working sets pass after pass (each grow takes runs back),
 * deletes the last set's keys as it goes and checkpoints every few WAL
 * objects, and is SIGKILLed at a random point after a take-back, round
 * after round, values paged in every other round. Each reopen (writer and
 * reader) must hold exactly the batches up to some point at or past the
 * last one reported durable: nothing acknowledged lost, nothing half
 * applied, no deleted key back (the rounds and their checks:
 * fixtures/crash-rounds.ts).
 */
import { describe, expect, it } from "vitest";
import { testRandom } from "../support/seed.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { scaledForLoad } from "../support/load.js";
import { durableCount, killRounds, useWorkloadTuning } from "./fixtures/crash-rounds.js";

const tempDir = useTempDirs("taquba-take-back-crash-");
const LIMIT_MS = scaledForLoad(180_000);

useWorkloadTuning("take-back");

describe("engine killed while its memtable takes young runs back", () => {
  it("holds exactly a prefix of the batches, at least every one reported durable, after each SIGKILL", { timeout: LIMIT_MS }, async () => {
    const random = testRandom("take-back crash");
    const { lives } = await killRounds({
      workload: "take-back",
      dir: await tempDir(),
      random,
      rounds: 4,
      killWhen: () => {
        // Killed some batches after a take-back of this life, while the next ones (and checkpoints) run.
        const after = 1 + random.int(20);
        let seenAt = -1;
        return (lines) => {
          if (seenAt < 0 && lines.some((l) => l.startsWith("T "))) seenAt = durableCount(lines);
          return seenAt >= 0 && durableCount(lines) >= seenAt + after;
        };
      },
      maxDelayMs: 20,
      // At most four batches are in flight.
      maxExtra: 4,
    });
    const takeBacks = lives.reduce((n, lines) => n + lines.filter((l) => l.startsWith("T ")).length, 0);
    expect(takeBacks).toBeGreaterThanOrEqual(4);
  });
});
