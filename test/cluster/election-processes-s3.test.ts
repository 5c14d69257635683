/**
 * @module Three worker processes in an owner election and two client
 * processes over the S3 protocol server (run in this process): the owner
 * killed, stopped and shut down (the scenario in election-scenario.ts; the
 * local directory's run of it is election-processes.test.ts, a file of its
 * own so vitest runs the two side by side).
 */
import { describe, it, onTestFinished } from "vitest";
import { useS3Server, withS3Environment } from "../support/use-s3-server.js";
import { startLocalLatenessProbe } from "../support/lateness-probe.js";
import { electionScenario, SCENARIO_TEST_MS, SLACK_MS, sized, TIMINGS } from "./election-scenario.js";

describe("three workers in an owner election, two clients; the owner killed, stopped and shut down", () => {
  describe("over the S3 protocol server", () => {
    const s3 = useS3Server();
    it(
      "runs",
      async () => {
        const serverStalls = startLocalLatenessProbe();
        onTestFinished(() => serverStalls.stop());
        // The checks read the bucket with this process's environment; the children get a copy of it.
        await withS3Environment(s3, () =>
          electionScenario(
            `s3://${s3.bucket}/election-test?endpoint=${encodeURIComponent(s3.endpoint)}&forcePathStyle=true`,
            sized || 12,
            { ...process.env },
            SLACK_MS.s3,
            TIMINGS.s3,
            serverStalls.lines,
          ),
        );
      },
      SCENARIO_TEST_MS,
    );
  });
});
