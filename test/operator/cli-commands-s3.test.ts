/**
 * @module The operator CLI as an operator runs it, against the S3 protocol
 * server while the owner runs in another process (the scenario in
 * cli-commands-scenario.ts; its own file, so vitest runs it beside the
 * local directory's, cli-commands.test.ts).
 */
import { describe, it } from "vitest";
import { S3Store } from "taquba";
import { useS3Server } from "../support/use-s3-server.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { cliScenario, SCENARIO_TEST_MS } from "./cli-commands-scenario.js";

const tempDir = useTempDirs("taquba-opscli-s3-proc-");

describe("the operator CLI against a running owner", () => {
  describe("on the S3 protocol server", () => {
    const s3 = useS3Server();

    it("with the usual AWS environment", { timeout: SCENARIO_TEST_MS }, async () => {
      const env = { ...process.env, AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER", AWS_REGION: "us-east-1", AWS_ENDPOINT_URL_S3: s3.endpoint };
      // This process's client gets the server's settings directly; the CLI and the owner read the environment.
      await cliScenario(
        `s3://${s3.bucket}/ops-cli`,
        env,
        await tempDir(),
        new S3Store({ bucket: s3.bucket, prefix: "ops-cli", clientConfig: s3.clientConfig }),
      );
    });
  });
});
