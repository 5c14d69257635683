/**
 * @module Background failures of a crash test's child writer, on a line
 * the test reads. An engine's checkpoint, compaction, collection or merge
 * fails beside the writes: by default the engine only warns on stderr,
 * which no crash test reads, so a broken checkpoint passed unseen. A
 * fixture passes `reportBackgroundErrors()` as its engine's (or queue's
 * engine's) `onBackgroundError`; the test then checks
 * `backgroundFailures(child)` is empty, or matches the failure it injects.
 */
import { writeSync } from "node:fs";

/** Start of the stdout line a child prints for each background failure. */
export const BACKGROUND_FAILURE_PREFIX = "G ";

/**
 * What the engine writes on stderr for a background error when no handler
 * is given (or the handler threw), and what the default logger of the
 * queue and the workflow runtime writes for an error.
 */
const STDERR_FAILURES = ["taquba engine:", "taquba error:"];

/** `name: message` of `err` on one line. */
function describe(err: unknown): string {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return text.replace(/\s*\n\s*/g, " ");
}

/** Written synchronously: the test may SIGKILL the child right after. */
function print(what: string): void {
  writeSync(1, `${BACKGROUND_FAILURE_PREFIX}${what}\n`);
}

let hooked = false;

/**
 * Hooks the process's unhandled rejections (printed, then the process
 * exits with code 1, as it would unhooked) and warnings (printed, Node
 * still writes them on stderr), once per process, and returns the handler
 * to pass as `onBackgroundError`: it prints `G <name>: <message>`.
 */
export function reportBackgroundErrors(): (err: unknown) => void {
  if (!hooked) {
    hooked = true;
    process.on("unhandledRejection", (reason) => {
      print(`unhandled rejection ${describe(reason)}`);
      process.exit(1);
    });
    process.on("warning", (warning) => {
      // Notices of experimental Node features say nothing about the writer's work.
      if (warning.name !== "ExperimentalWarning") print(`warning ${describe(warning)}`);
    });
  }
  return (err) => print(describe(err));
}

/**
 * A logger for a queue or workflow runtime that prints each error it logs
 * as `G <message>: <error>` (warnings and below are dropped, as they are
 * no failure of the work).
 */
export function backgroundErrorLogger(): { error(obj: Record<string, unknown>, msg: string): void } {
  reportBackgroundErrors();
  return { error: (obj, msg) => print(`${msg}${obj.err === undefined ? "" : `: ${describe(obj.err)}`}`) };
}

/**
 * The background failures a child reported: its `G ` lines, and any
 * engine warning on its stderr (from a fixture that does not report them
 * on stdout, or whose handler failed).
 */
export function backgroundFailures(child: { readonly lines: readonly string[]; stderr(): string }): string[] {
  const printed = child.lines.filter((l) => l.startsWith(BACKGROUND_FAILURE_PREFIX));
  const warned = child
    .stderr()
    .split("\n")
    .filter((l) => STDERR_FAILURES.some((s) => l.includes(s)));
  return [...printed, ...warned];
}
