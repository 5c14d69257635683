/**
 * @module The operator CLI as an operator runs it, against a directory
 * store while the owner runs in another process (the scenario in
 * cli-commands-scenario.ts; the S3 protocol server's run of it is
 * cli-commands-s3.test.ts).
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, it } from "vitest";
import { useTempDirs } from "../support/temp-dirs.js";
import { cliScenario, SCENARIO_TEST_MS } from "./cli-commands-scenario.js";

const tempDir = useTempDirs("taquba-opscli-proc-");

describe("the operator CLI against a running owner", () => {
  it("on a local directory", { timeout: SCENARIO_TEST_MS }, async () => {
    const dir = await tempDir();
    await cliScenario(pathToFileURL(join(dir, "store")).href, process.env, dir);
  });
});
