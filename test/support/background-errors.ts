/**
 * @module Background failures of a crash test's child writer, on a line
 * the test reads. An engine's checkpoint, compaction, collection or merge
 * fails beside the writes: by default the engine only warns on stderr,
 * which no crash test reads, so a broken checkpoint passed unseen. A
 * fixture passes `reportBackgroundErrors()` as its engine's (or queue's
 * engine's) `onBackgroundError`; the test then checks
 * `backgroundFailures(child)` is empty, or matches the failure it injects.
 *
 * A child beside peers that are killed (a cluster's workers, an owner and
 * its clients) also sees failures that are the designed answer to that
 * (a lease lost while the machine stalled, a writer fenced by the owner
 * that took over): its test lists them as `ExpectedFailure`s and fails on
 * any other (`expectNoUnexpectedFailures`), naming the child, the failure
 * and its stack.
 */
import { writeSync } from "node:fs";

/** Start of the stdout line a child prints for each background failure. */
export const BACKGROUND_FAILURE_PREFIX = "G ";

/**
 * What the engine writes on stderr for a background error when no handler
 * is given (or the handler threw), and what the default logger of the
 * queue and the workflow runtime writes for an error.
 */
const STDERR_FAILURES = ["taquba engine:", "taquba error:", "taquba client inbox:"];

/** Stack frames kept on a failure's line: where it was thrown, without a line that runs on for the whole stack. */
const STACK_FRAMES = 12;

/** The fields of an error, or of the plain copy of one the workflow runtime logs (`{ name, message, stack }`). */
function errorFields(err: unknown): { name: string; message: string; stack: string | undefined } | undefined {
  if (err === null || typeof err !== "object") return undefined;
  const { name, message, stack } = err as { name?: unknown; message?: unknown; stack?: unknown };
  if (typeof message !== "string") return undefined;
  return { name: typeof name === "string" ? name : "Error", message, stack: typeof stack === "string" ? stack : undefined };
}

/** `name: message` of `err` on one line, then (for an error with a stack) ` | at <frame> < at <frame> ...`. */
export function describeFailure(err: unknown): string {
  const fields = errorFields(err);
  const text = fields === undefined ? String(err) : `${fields.name}: ${fields.message}`;
  const frames = fields?.stack === undefined ? [] : fields.stack.split("\n").filter((l) => /^\s+at /.test(l));
  const stack =
    frames.length === 0
      ? ""
      : ` | ${frames
          .slice(0, STACK_FRAMES)
          .map((f) => f.trim())
          .join(" < ")}`;
  return `${text.replace(/\s*\n\s*/g, " ")}${stack}`;
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
      print(`unhandled rejection ${describeFailure(reason)}`);
      process.exit(1);
    });
    process.on("warning", (warning) => {
      // Notices of experimental Node features say nothing about the writer's work.
      if (warning.name !== "ExperimentalWarning") print(`warning ${describeFailure(warning)}`);
    });
  }
  return (err) => print(describeFailure(err));
}

/**
 * A logger for a queue or workflow runtime that prints each error it logs
 * as `G <message>: <error>` (warnings and below are dropped, as they are
 * no failure of the work).
 */
export function backgroundErrorLogger(): { error(obj: Record<string, unknown>, msg: string): void } {
  reportBackgroundErrors();
  return { error: (obj, msg) => print(`${msg}${obj.err === undefined ? "" : `: ${describeFailure(obj.err)}`}`) };
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

/** A background failure a child's test expects: the lines `pattern` matches, and why they are no defect. */
export interface ExpectedFailure {
  readonly pattern: RegExp;
  readonly why: string;
}

/** The background failures of `child` that none of `expected` matches. */
export function unexpectedFailures(child: { readonly lines: readonly string[]; stderr(): string }, expected: readonly ExpectedFailure[] = []): string[] {
  return backgroundFailures(child).filter((f) => !expected.some((e) => e.pattern.test(f)));
}

/**
 * Throws when `child` (called `name` in the message) reported a background
 * failure that none of `expected` matches: each such failure on its own
 * line, with its stack.
 */
export function expectNoUnexpectedFailures(
  name: string,
  child: { readonly lines: readonly string[]; stderr(): string },
  expected: readonly ExpectedFailure[] = [],
): void {
  const found = unexpectedFailures(child, expected);
  if (found.length === 0) return;
  const shown = found.map((f) => `  ${f.replace(/ \| at /, "\n    at ").replaceAll(" < at ", "\n    at ")}`);
  throw new Error(`${name} reported ${found.length} unexpected background failure${found.length === 1 ? "" : "s"}:\n${shown.join("\n")}`);
}

/** What a child's queue, workflow runtime, inbox and engine take to report their failures on G lines. */
export function backgroundReporting(): { logger: { error(obj: Record<string, unknown>, msg: string): void }; onBackgroundError: (err: unknown) => void } {
  return { logger: backgroundErrorLogger(), onBackgroundError: reportBackgroundErrors() };
}
