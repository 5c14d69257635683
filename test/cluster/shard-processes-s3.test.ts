/**
 * @module Three worker processes over four shards and two client processes
 * over the S3 protocol server (run in this process): owners killed and
 * stopped at seeded points (the scenario in shard-scenario.ts; the local
 * directory's run of it is shard-processes.test.ts, a file of its own so
 * vitest runs the two side by side).
 */
import { describe, it, onTestFinished } from "vitest";
import { useS3Server, withS3Environment } from "../support/use-s3-server.js";
import { startLocalLatenessProbe } from "../support/lateness-probe.js";
import { testRandom } from "../support/seed.js";
import { RUNS, SLACK_MS, scenarioTestMs, shardScenario, TIMINGS } from "./shard-scenario.js";

describe("three workers over four shards, two clients; a worker killed, another stopped", () => {
  describe("over the S3 protocol server", () => {
    const s3 = useS3Server();
    it(
      "runs",
      async () => {
        const serverStalls = startLocalLatenessProbe();
        onTestFinished(() => serverStalls.stop());
        // The checks read the bucket with this process's environment; the children get a copy of it.
        await withS3Environment(s3, () =>
          shardScenario(
            `s3://${s3.bucket}/shard-test?endpoint=${encodeURIComponent(s3.endpoint)}&forcePathStyle=true`,
            RUNS.s3,
            { ...process.env },
            SLACK_MS.s3,
            TIMINGS.s3,
            testRandom("shard processes over S3"),
            serverStalls.lines,
          ),
        );
      },
      scenarioTestMs(RUNS.s3),
    );
  });
});
