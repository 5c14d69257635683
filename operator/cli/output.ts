/**
 * @module How the operator CLI prints: aligned tables, colours only on a
 * terminal (and never with NO_COLOR), one JSON document with `--json`.
 */
import { styleText } from "node:util";

/** Where a command prints. Tests pass their own; `color` is decided once per process. */
export interface OperatorIo {
  out(text: string): void;
  err(text: string): void;
  /** Whether human output may carry ANSI colours. */
  readonly color: boolean;
}

/** The process's stdout and stderr; colours when stdout is a terminal and NO_COLOR is unset. */
export function processIo(): OperatorIo {
  const env = process.env;
  const color = process.stdout.isTTY === true && (env["NO_COLOR"] === undefined || env["NO_COLOR"] === "") && env["TERM"] !== "dumb";
  return {
    out: (t) => process.stdout.write(`${t}\n`),
    err: (t) => process.stderr.write(`${t}\n`),
    color,
  };
}

export type Tone = "ok" | "bad" | "warn" | "dim" | "bold";

const STYLE: Record<Tone, Parameters<typeof styleText>[0]> = {
  ok: "green",
  bad: "red",
  warn: "yellow",
  dim: "gray",
  bold: "bold",
};

/** `text` in a tone, or unchanged when colours are off. */
export function paint(io: OperatorIo, tone: Tone, text: string): string {
  return io.color ? styleText(STYLE[tone], text) : text;
}

/** Removes terminal control characters from user data (run ids, headers, error text), so none can drive the terminal. */
export function clean(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is removed
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, "?");
}

/** A cell of a table: plain text, or text with a tone. */
export type Cell = string | { readonly text: string; readonly tone: Tone };

/**
 * Columns padded to their widest cell (by code points, after cleaning),
 * headers dimmed on a terminal. The last column is not padded.
 */
export function table(io: OperatorIo, headers: readonly string[], rows: readonly (readonly Cell[])[]): string {
  const texts = rows.map((r) => r.map((c) => clean(typeof c === "string" ? c : c.text).replace(/\n/g, " ")));
  const widths = headers.map((h, i) => Math.max([...h].length, ...texts.map((r) => [...(r[i] ?? "")].length)));
  const line = (cells: readonly string[], tones: readonly (Tone | undefined)[]) =>
    cells
      .map((c, i) => {
        const padded = i === cells.length - 1 ? c : c + " ".repeat(Math.max(0, (widths[i] ?? 0) - [...c].length));
        const tone = tones[i];
        return tone === undefined ? padded : paint(io, tone, padded);
      })
      .join("  ")
      .trimEnd();
  const out = [
    line(
      headers,
      headers.map(() => "dim"),
    ),
  ];
  rows.forEach((r, i) => {
    out.push(
      line(
        texts[i] ?? [],
        r.map((c) => (typeof c === "string" ? undefined : c.tone)),
      ),
    );
  });
  return out.join("\n");
}

/** One JSON document, with byte arrays as base64 and bigints as strings. */
export function toJson(value: unknown): string {
  return JSON.stringify(
    value,
    (_k, v: unknown) => {
      if (v instanceof Uint8Array) return { base64: Buffer.from(v).toString("base64") };
      if (typeof v === "bigint") return v.toString();
      return v;
    },
    2,
  );
}

/** A duration in the largest sensible unit: `850ms`, `42s`, `3m12s`, `5h02m`, `2d04h`. */
export function formatAge(ms: number): string {
  if (!Number.isFinite(ms)) return "-";
  const neg = ms < 0;
  let v = Math.abs(Math.round(ms));
  const sign = neg ? "-" : "";
  if (v < 1000) return `${sign}${v}ms`;
  v = Math.floor(v / 1000);
  if (v < 60) return `${sign}${v}s`;
  const pad = (n: number) => String(n).padStart(2, "0");
  if (v < 3600) return `${sign}${Math.floor(v / 60)}m${pad(v % 60)}s`;
  if (v < 86400) return `${sign}${Math.floor(v / 3600)}h${pad(Math.floor((v % 3600) / 60))}m`;
  return `${sign}${Math.floor(v / 86400)}d${pad(Math.floor((v % 86400) / 3600))}h`;
}

/** An instant as ISO-8601 UTC, or "-" when absent. */
export function formatTime(ms: number | undefined): string {
  return ms === undefined || !Number.isFinite(ms) ? "-" : new Date(ms).toISOString();
}
