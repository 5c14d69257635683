/**
 * @module Runs the `taquba` bin as a child process, as an operator would,
 * and collects its exit code and output. The run fails when the command
 * threw past its own error handling, left a promise rejected unhandled or
 * raised a process warning: reported on a file (test/support/
 * failure-monitor.ts), since its stdout and stderr are what the tests check.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expectNoUnexpectedFailures } from "../support/background-errors.js";
import { FailureMonitor } from "../support/failure-monitor.js";

const BIN = fileURLToPath(new URL("../../codegen/bin.js", import.meta.url));

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export function taquba(args: readonly string[], env: NodeJS.ProcessEnv = process.env, timeoutMs = 60_000): Promise<CliResult> {
  const monitor = new FailureMonitor();
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [...monitor.execArgv, BIN, ...args],
      { env: monitor.env({ ...env, NO_COLOR: "1" }), timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        try {
          expectNoUnexpectedFailures(
            `taquba ${args.join(" ")}`,
            monitor.report(() => stderr),
          );
        } catch (failures) {
          reject(failures);
          return;
        } finally {
          monitor.dispose();
        }
        if (err !== null && typeof err.code !== "number") reject(new Error(`taquba ${args.join(" ")} did not exit: ${err.message}\n${stderr}`));
        else resolve({ code: err === null ? 0 : (err.code as number), stdout, stderr });
      },
    );
  });
}
