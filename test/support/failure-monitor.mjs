/**
 * Preloaded (`node --import`) into a child a test runs as an operator would
 * (the `taquba` bin's commands and its dashboard), whose stdout and stderr
 * the test reads as the operator sees them, so no report line can go there.
 * Each uncaught exception or unhandled rejection (watched, not handled: the
 * process still ends and prints as it would) and each process warning is
 * appended as one JSON line to the file TAQUBA_TEST_FAILURES_FILE names;
 * test/support/failure-monitor.ts reads it back as background failures.
 *
 * Inert without TAQUBA_TEST_FAILURES_FILE, which it removes from the
 * environment, so a grandchild does not write into its parent's file.
 */
import { appendFileSync } from "node:fs";
import process from "node:process";

const file = process.env.TAQUBA_TEST_FAILURES_FILE;
if (file !== undefined) {
  delete process.env.TAQUBA_TEST_FAILURES_FILE;
  // Written synchronously: the process may end right after, or be killed.
  const record = (kind, err) => {
    const fields = err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : { message: String(err) };
    appendFileSync(file, `${JSON.stringify({ kind, ...fields })}\n`);
  };
  process.on("uncaughtExceptionMonitor", (err, origin) => record(origin === "unhandledRejection" ? "unhandled rejection" : "uncaught exception", err));
  process.on("warning", (warning) => {
    // Notices of experimental Node features say nothing about the command's work.
    if (warning.name !== "ExperimentalWarning") record("warning", warning);
  });
}
