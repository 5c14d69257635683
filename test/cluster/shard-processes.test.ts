/**
 * @module Three worker processes over four shards and two client processes
 * over a local directory (the 1,000 runs): owners killed and
 * stopped at seeded points (the scenario in shard-scenario.ts; the S3
 * protocol server's run of it is shard-processes-s3.test.ts, a file of its
 * own so vitest runs the two side by side).
 */
import { describe, it } from "vitest";
import { useTempDirs } from "../support/temp-dirs.js";
import { testRandom } from "../support/seed.js";
import { RUNS, SLACK_MS, scenarioTestMs, shardScenario, TIMINGS } from "./shard-scenario.js";

const tempDir = useTempDirs("taquba-shard-proc-");

describe("three workers over four shards, two clients; a worker killed, another stopped", () => {
  it(
    "over a local directory",
    async () => {
      const dir = await tempDir();
      await shardScenario(`file://${dir}`, RUNS.local, process.env, SLACK_MS.local, TIMINGS.local, testRandom("shard processes over a local directory"));
    },
    scenarioTestMs(RUNS.local),
  );
});
