/**
 * @module Diagnostics: problems found in a spec, as data, and their rendering.
 *
 * Stages collect diagnostics instead of throwing, so one run reports every
 * problem of every file at once. Rendering (a code frame under the
 * position) is a separate function so tools can show diagnostics their way.
 */

/** Stable codes; tests and tools match on them, never on messages. */
export type DiagnosticCode =
  | "YAML_SYNTAX"
  | "DUPLICATE_KEY"
  | "SPEC_SCHEMA"
  | "UNKNOWN_REF"
  | "UNKNOWN_SIGNAL"
  | "UNKNOWN_STEP"
  | "BAD_KEY_TEMPLATE"
  | "NAME_COLLISION"
  | "DUPLICATE_PACKAGE"
  | "WAIT_WITHOUT_TIMEOUT"
  | "TIMEOUT_WITHOUT_WAIT"
  | "UNREACHABLE_STEP"
  | "BAD_ENTRY_STEP"
  | "UNSAFE_PATTERN"
  | "SPEC_TOO_LARGE"
  | "UNSUPPORTED_TAG"
  | "FORBIDDEN_NAME"
  | "BAD_CRON"
  | "UNKNOWN_TARGET"
  | "BAD_SCHEDULE"
  | "UNKNOWN_WORKFLOW"
  | "BAD_CHILD_WAIT"
  | "BAD_FLOW_CONTROL";

/** An error stops generation (no files are written); a warning is reported and generation goes on. */
export type Severity = "error" | "warning";

/** One problem at one place. Lines and columns are 1-based. */
export interface Diagnostic {
  readonly code: DiagnosticCode;
  readonly severity: Severity;
  readonly file: string;
  readonly line: number;
  readonly column: number;
  /** What is wrong and how to fix it. */
  readonly message: string;
}

/** Whether any diagnostic is an error (warnings never stop generation). */
export function hasErrors(diagnostics: readonly Diagnostic[]): boolean {
  return diagnostics.some((d) => d.severity === "error");
}

/** Sorts by file, line, column, then code, so output order never depends on stage order. */
export function sortDiagnostics(diagnostics: readonly Diagnostic[]): Diagnostic[] {
  return [...diagnostics].sort(
    (a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0) || a.line - b.line || a.column - b.column || (a.code < b.code ? -1 : a.code > b.code ? 1 : 0),
  );
}

/**
 * Renders a diagnostic as `file:line:col: severity CODE: message` followed
 * by the offending source line and a caret, when the source is given.
 */
export function renderDiagnostic(d: Diagnostic, source?: string): string {
  const head = `${d.file}:${d.line}:${d.column}: ${d.severity} ${d.code}: ${d.message}`;
  if (source === undefined) return head;
  const lines = source.split(/\r?\n/);
  const text = lines[d.line - 1];
  if (text === undefined) return head;
  const gutter = String(d.line).length;
  const frame: string[] = [];
  const prev = lines[d.line - 2];
  if (prev !== undefined && d.line > 1) frame.push(`${String(d.line - 1).padStart(gutter)} | ${prev}`);
  frame.push(`${String(d.line).padStart(gutter)} | ${text}`);
  frame.push(`${" ".repeat(gutter)} | ${" ".repeat(Math.max(0, d.column - 1))}^`);
  return `${head}\n${frame.join("\n")}`;
}
