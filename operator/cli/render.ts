/**
 * @module Human renderings shared by several commands: a run's detail and
 * timeline, a key/value block, a state with its colour.
 */
import type { WaitingReason } from "../../runtime/queue/types.js";
import type { RunDetail, TimelineEntry } from "../inspect/run-detail.js";
import type { BytesPreview } from "../inspect/bytes-preview.js";
import { clean, formatAge, formatTime, paint, table, type Cell, type OperatorIo, type Tone } from "./output.js";

/** The colour of a state word. */
export function stateTone(state: string): Tone | undefined {
  if (state === "succeeded" || state === "completed" || state === "done") return "ok";
  if (state === "failed" || state === "dead" || state === "dead_lettered" || state === "lease_expired") return "bad";
  if (state === "waiting" || state === "scheduled" || state === "cancelling" || state === "cancelled" || state === "retried" || state === "interrupted")
    return "warn";
  return undefined;
}

export function stateCell(state: string): Cell {
  const tone = stateTone(state);
  return tone === undefined ? state : { text: state, tone };
}

/** `label  value` lines, labels padded to the widest. Values are cleaned of control characters. */
export function block(io: OperatorIo, rows: readonly (readonly [string, string | undefined])[]): string {
  const shown = rows.filter((r): r is readonly [string, string] => r[1] !== undefined);
  const width = Math.max(...shown.map(([l]) => l.length));
  return shown.map(([l, v]) => `${paint(io, "dim", l.padEnd(width))}  ${clean(v)}`).join("\n");
}

export function previewText(p: BytesPreview): string {
  const body = p.text !== undefined ? p.text : `base64:${p.base64 ?? ""}`;
  return `${body}${p.truncated ? " ..." : ""} (${p.size} bytes)`;
}

function headersText(h: Readonly<Record<string, string>>): string | undefined {
  const entries = Object.entries(h);
  return entries.length === 0 ? undefined : entries.map(([k, v]) => `${k}=${v}`).join(", ");
}

function entryText(e: TimelineEntry, now: number): string {
  switch (e.kind) {
    case "submitted":
      return "submitted";
    case "attempt":
      return `attempt ${e.attempt ?? "?"} ${e.outcome ?? ""}${e.startedAt === undefined ? "" : ` after ${formatAge(e.at - e.startedAt)}`}${e.error === undefined ? "" : `: ${e.error}`}`;
    case "delay":
      return `delayed until ${formatTime(e.until)}${e.until === undefined ? "" : ` (in ${formatAge(e.until - now)})`}`;
    case "wait":
      return `waiting for signal ${JSON.stringify(e.signalKey ?? "?")}${e.until === undefined ? "" : ` until ${formatTime(e.until)}`}`;
    case "signal":
      return `signal ${JSON.stringify(e.signalKey ?? "?")} ${e.outcome === "timed_out" ? "timed out" : `delivered${e.bytes === undefined ? "" : ` (${e.bytes} bytes)`}`}`;
    case "effects":
      return `wrote ${(e.keys ?? []).join(", ")}`;
    case "redrive":
      return `retried from step ${e.step ?? "?"}`;
    case "terminated":
      return `${e.outcome ?? "ended"}${e.error === undefined ? "" : `: ${e.error}`}`;
  }
}

/** The step job's id, state and attempt, and how often it was requeued when it was. */
function stepJobText(j: NonNullable<RunDetail["stepJob"]>): string {
  return `${j.id} (${j.state}, attempt ${j.attempt} of ${j.maxAttempts}${j.requeues === undefined ? "" : `, ${requeuedText(j.requeues)}`})`;
}

/** "requeued once", "requeued 3 times". */
function requeuedText(n: number): string {
  return n === 1 ? "requeued once" : `requeued ${n} times`;
}

/** A run as a readable page: its fields, then the timeline, then stacks of failed attempts. */
export function renderRun(io: OperatorIo, d: RunDetail, now: number): string {
  const tone = stateTone(d.state);
  const out = [
    block(io, [
      ["run", d.runId],
      ["workflow", d.workflow === undefined ? undefined : `${d.workflow}${d.kind === "job" ? " (job)" : ""}`],
      ["state", `${tone === undefined ? d.state : paint(io, tone, d.state)} at step ${d.step}`],
      ["submitted", d.submittedAt === undefined ? undefined : `${formatTime(d.submittedAt)} (${formatAge(now - d.submittedAt)} ago)`],
      ["ended", d.terminatedAt === undefined ? undefined : `${formatTime(d.terminatedAt)} (${formatAge(now - d.terminatedAt)} ago)`],
      ["waiting on", d.signalWait],
      ["held by", d.heldBy === undefined ? undefined : waitingText(d.heldBy)],
      ["step job", d.stepJob === undefined ? undefined : stepJobText(d.stepJob)],
      ["headers", headersText(d.headers)],
      ["group", d.group === undefined ? undefined : `${d.group.id} (member ${d.group.key})`],
      ["parent", d.parent === undefined ? undefined : `${d.parent.runId} (started at its step ${d.parent.step})`],
      ["superseded by", d.supersededBy],
      ["error", d.error === undefined ? undefined : `${d.error}${d.errorKind === undefined ? "" : ` [${d.errorKind}]`}`],
      ["public error", d.publicError === undefined ? undefined : `${d.publicError}${d.errorCode === undefined ? "" : ` [${d.errorCode}]`}`],
      ["result", d.result === undefined ? undefined : previewText(d.result)],
    ]),
    "",
    table(
      io,
      ["TIME", "STEP", "EVENT"],
      d.timeline.map((e) => [
        formatTime(e.at),
        e.step === undefined ? "-" : String(e.step),
        e.outcome !== undefined && stateTone(e.outcome) !== undefined ? { text: entryText(e, now), tone: stateTone(e.outcome)! } : entryText(e, now),
      ]),
    ),
  ];
  if (d.omitted !== undefined) out.push(paint(io, "dim", `(history bounded: ${d.omitted.steps} older steps and ${d.omitted.attempts} attempts left out)`));
  const page = d.historyPage;
  if (page !== undefined)
    out.push(
      paint(
        io,
        "dim",
        `(${page.count} history entries shown${page.after === undefined ? "" : ` after step ${page.after}`}${page.next === undefined ? "" : `; more follow: --history-after ${page.next}`})`,
      ),
    );
  const stacks = d.timeline.filter((e) => e.stack !== undefined);
  for (const e of stacks) {
    out.push("", paint(io, "dim", `step ${e.step ?? "?"} attempt ${e.attempt ?? "?"} ${e.errorName ?? "error"}:`));
    out.push(
      clean(e.stack ?? "")
        .split("\n")
        .map((l) => `  ${l}`)
        .join("\n"),
    );
  }
  return out.join("\n");
}

/** Why flow control holds a step or job back, in a line. */
export function waitingText(w: WaitingReason): string {
  const rule = "rule" in w && w.rule !== undefined ? ` of ${w.rule}` : "";
  switch (w.reason) {
    case "concurrency":
      return `concurrency limit${rule} for key ${JSON.stringify(w.key)} (${w.held} of ${w.limit} running)`;
    case "rate_limit":
      return `rate limit${rule} for key ${JSON.stringify(w.key)} (${w.limit} per ${w.periodMs} ms) until ${formatTime(w.until)}`;
    case "debounced":
      return `debounced (key ${JSON.stringify(w.key)}): a later submission with the key replaces it until ${formatTime(w.until)}`;
  }
}
