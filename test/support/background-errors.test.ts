/**
 * @module A child process's background failures against the ones its test
 * expects: an expected one passes, any other fails the check with the
 * child's name, the failure and where it was thrown. A real child process
 * reporting through `backgroundReporting()`, and one whose stdout and
 * stderr stay its own, reporting on a file through the failure monitor.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ELECTED_OWNER_FAILURES } from "../client/fixtures/expected-failures.js";
import { backgroundFailures, expectNoUnexpectedFailures, unexpectedFailures } from "./background-errors.js";
import { ChildScenario } from "./child-scenario.js";
import { FailureMonitor } from "./failure-monitor.js";
import { startScript } from "./child-script.js";
import { loadLimitTimeout, scaledForLoad, withinLoadLimit } from "./load.js";

const CHILD = fileURLToPath(new URL("./fixtures/reports-failures.ts", import.meta.url));
// The child loads the package through tsx: some 3 s of CPU, tens of seconds of wall time on two loaded cores.
const CHILD_TEST_MS = 60_000;

describe("a child's background failures", () => {
  it("pass when expected, and fail the check naming the child, each other failure and its stack", { timeout: loadLimitTimeout(CHILD_TEST_MS) }, () =>
    withinLoadLimit(CHILD_TEST_MS, async () => {
      const run = new ChildScenario(CHILD_TEST_MS);
      const child = run.track("owner 2", startScript(CHILD, []));
      expect(await child.exited, child.stderr()).toEqual({ code: 0, signal: null });
      expect(backgroundFailures(child)).toHaveLength(4);
      const unexpected = unexpectedFailures(child, ELECTED_OWNER_FAILURES);
      expect(unexpected.map((f) => f.split(" | ")[0])).toEqual([
        "G a request could not be applied: RangeError: an index past the end",
        "G workflow run order-1 step 0 failed on its last attempt; the run fails: PaymentDeclinedError: card declined",
        "G Error: the checkpoint could not be written",
      ]);
      expect(unexpected[1]).toMatch(/ \| at runStep \(app\.ts:41:13\)$/);

      let thrown: unknown;
      try {
        expectNoUnexpectedFailures("owner 2", child, ELECTED_OWNER_FAILURES);
      } catch (err) {
        thrown = err;
      }
      const message = (thrown as Error).message;
      expect(message).toMatch(/^owner 2 reported 3 unexpected background failures:/);
      expect(message).toContain("RangeError: an index past the end\n    at ");
      expect(message).toContain("reports-failures.ts");
      expect(message).not.toContain("FencedError");

      expect(() => run.expectNoUnexpectedFailures(() => ELECTED_OWNER_FAILURES)).toThrow(/owner 2: G a request could not be applied: RangeError/);
      // Every failure expected: nothing to report.
      expect(() => run.expectNoUnexpectedFailures(() => [...ELECTED_OWNER_FAILURES, { pattern: /^G /, why: "all of them" }])).not.toThrow();
      await run.stop();
    }),
  );
});

/** Runs `script` in a plain Node child with `monitor` preloaded; its exit code and output. */
function runMonitored(monitor: FailureMonitor, script: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [...monitor.execArgv, "-e", script],
      { env: monitor.env(process.env), timeout: scaledForLoad(10_000) },
      (err, stdout, stderr) => {
        if (err !== null && typeof err.code !== "number") reject(err);
        else resolve({ code: err === null ? 0 : (err.code as number), stdout, stderr });
      },
    );
  });
}

describe("a child's failures reported on a file (its stdout and stderr left as they are)", () => {
  it("records an unhandled rejection and a warning with their stacks, and the child still ends and prints as it would", async () => {
    const monitor = new FailureMonitor();
    try {
      const run = await runMonitored(
        monitor,
        'process.emitWarning("the cache is nearly full"); setTimeout(() => Promise.reject(new RangeError("an index past the end")), 10);',
      );
      // Node's own answer to both is unchanged: the warning and the rejection's stack on stderr, exit code 1.
      expect(run.code).toBe(1);
      expect(run.stdout).toBe("");
      expect(run.stderr).toContain("Warning: the cache is nearly full");
      expect(run.stderr).toContain("RangeError: an index past the end");
      const report = monitor.report(() => run.stderr);
      expect(report.lines.map((l) => l.split(" | ")[0])).toEqual([
        "G warning Warning: the cache is nearly full",
        "G unhandled rejection RangeError: an index past the end",
      ]);
      expect(report.lines[1]).toMatch(/ \| at /);
      expect(() => expectNoUnexpectedFailures("the command", report)).toThrow(
        /^the command reported 2 unexpected background failures:\n {2}G warning Warning: the cache is nearly full/,
      );
      expect(() => expectNoUnexpectedFailures("the command", report, [{ pattern: /^G /, why: "all of them" }])).not.toThrow();
    } finally {
      monitor.dispose();
    }
    expect(existsSync(monitor.file)).toBe(false);
  });

  it("records nothing for a child that fails in its own handling, and its grandchildren do not inherit the file", async () => {
    const monitor = new FailureMonitor();
    try {
      const run = await runMonitored(
        monitor,
        'console.log(String(process.env.TAQUBA_TEST_FAILURES_FILE)); console.error("usage: nothing"); process.exitCode = 2;',
      );
      expect(run).toEqual({ code: 2, stdout: "undefined\n", stderr: "usage: nothing\n" });
      expect(monitor.report(() => run.stderr).lines).toEqual([]);
    } finally {
      monitor.dispose();
    }
  });
});
