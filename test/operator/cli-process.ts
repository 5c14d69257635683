/**
 * @module Runs the `taquba` bin as a child process, as an operator would,
 * and collects its exit code and output.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";

const BIN = fileURLToPath(new URL("../../codegen/bin.js", import.meta.url));

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export function taquba(args: readonly string[], env: NodeJS.ProcessEnv = process.env, timeoutMs = 60_000): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [BIN, ...args], { env: { ...env, NO_COLOR: "1" }, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err !== null && typeof err.code !== "number") reject(new Error(`taquba ${args.join(" ")} did not exit: ${err.message}\n${stderr}`));
      else resolve({ code: err === null ? 0 : (err.code as number), stdout, stderr });
    });
  });
}
