/**
 * @module Background failures of a child a test runs as an operator would
 * (the `taquba` bin's commands, its dashboard): their stdout and stderr
 * are what the tests assert on, so the child reports on a file instead.
 * failure-monitor.mjs, preloaded into the child, appends each uncaught
 * exception, unhandled rejection and process warning there; `report` reads
 * them back as the `G ` lines `backgroundFailures` and
 * `expectNoUnexpectedFailures` read from a crash child's stdout (with the
 * engine and runtime warnings on its stderr).
 */
import { randomUUID } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { BACKGROUND_FAILURE_PREFIX, describeFailure } from "./background-errors.js";

const MONITOR = fileURLToPath(new URL("./failure-monitor.mjs", import.meta.url));

/** One child's report file, and how to start the child so it writes there. */
export class FailureMonitor {
  readonly file = join(tmpdir(), `taquba-failures-${randomUUID()}.jsonl`);
  /** Node's arguments that preload the monitor, before the script. */
  readonly execArgv: readonly string[] = ["--import", MONITOR];

  /** `env` with the report file named for the child. */
  env(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
    return { ...env, TAQUBA_TEST_FAILURES_FILE: this.file };
  }

  /** What the child reported so far as `G ` lines, beside its stderr: the shape `expectNoUnexpectedFailures` reads. */
  report(stderr: () => string): { readonly lines: readonly string[]; stderr(): string } {
    let text = "";
    try {
      text = readFileSync(this.file, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
    const lines = text
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => {
        const { kind, ...fields } = JSON.parse(l) as { kind: string; name?: string; message: string; stack?: string };
        return `${BACKGROUND_FAILURE_PREFIX}${kind} ${describeFailure(fields)}`;
      });
    return { lines, stderr };
  }

  /** Removes the report file (after the child ended, or when the test is done with it). */
  dispose(): void {
    rmSync(this.file, { force: true });
  }
}
