/**
 * @module Three worker processes in an owner election and two client
 * processes over a local directory: the owner killed, stopped and shut
 * down (the scenario in election-scenario.ts; the S3 protocol server's run
 * of it is election-processes-s3.test.ts, a file of its own so vitest runs
 * the two side by side).
 */
import { describe, it } from "vitest";
import { useTempDirs } from "../support/temp-dirs.js";
import { electionScenario, SCENARIO_TEST_MS, SLACK_MS, sized, TIMINGS } from "./election-scenario.js";

const tempDir = useTempDirs("taquba-election-proc-");

describe("three workers in an owner election, two clients; the owner killed, stopped and shut down", () => {
  it(
    "over a local directory",
    async () => {
      const dir = await tempDir();
      await electionScenario(`file://${dir}`, sized || 36, process.env, SLACK_MS.local, TIMINGS.local);
    },
    SCENARIO_TEST_MS,
  );
});
