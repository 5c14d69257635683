/**
 * @module `listRuns`: one page of a step queue's runs from the run index,
 * newest first. A page reads one index (every run, the runs of one name,
 * or the ended runs of one status), examines a bounded number of its
 * entries and reads each listed run's records: never the whole state.
 */
import { lastOf } from "../../own-fields.js";
import type { JobInfo } from "../../queue/types.js";
import type { KvPage, KvScanOptions } from "../../queue/view.js";
import type { RunRecords } from "./workflow-view.js";
import { decodeStepRecord, stepHistoryKey } from "./history-records.js";
import {
  decodeCursor,
  decodeIndexEntry,
  encodeCursor,
  nameHash,
  parseSuffix,
  runEndedPrefix,
  runIndexKey,
  runIndexPrefix,
  runNamesPrefix,
  timeBound,
  type IndexEntry,
  type IndexScan,
} from "./run-index.js";
import type { RunId } from "./run-id.js";
import { activeView, checkListOptions, rowOf, type CheckedListOptions } from "./run-rows.js";
import type { RunPage, RunRow, UnreadableRun } from "./run-listing.js";
import type { TerminalStatus } from "./run-types.js";
import { runDamageOf } from "./run-damage.js";

/** The reads a listing makes (a `WorkflowView` provides them). */
export interface RunReads {
  readonly queueName: string;
  records(runId: string): Promise<RunRecords>;
  job(jobId: string): Promise<JobInfo | null>;
  kvGet(key: string): Promise<Uint8Array | null>;
  kvScan(prefix: string, opts?: KvScanOptions): Promise<KvPage>;
}

const TERMINAL: readonly string[] = ["succeeded", "failed", "cancelled"];
/** Index entries read per store request. */
const SCAN_PAGE = 256;

/** The index a listing with these options reads (its cursor records which). */
export function scanOf(o: Pick<CheckedListOptions, "state" | "workflow">): IndexScan {
  if (o.state !== undefined && TERMINAL.includes(o.state)) return { kind: "ended", status: o.state as TerminalStatus };
  if (o.workflow !== undefined) return { kind: "name", hash: nameHash(o.workflow) };
  return { kind: "all" };
}

function prefixOf(q: string, scan: IndexScan, workflow: string | undefined): string {
  if (scan.kind === "ended") return runEndedPrefix(q, scan.status);
  if (scan.kind === "name") return runNamesPrefix(q, workflow!);
  return runIndexPrefix(q);
}

/** One page of runs; see `WorkflowView.listRuns`. */
export async function listRuns(reads: RunReads, options: unknown, what = "listRuns", only?: { kind: "job" | "workflow" }): Promise<RunPage> {
  const o = checkListOptions(options, what);
  const q = reads.queueName;
  const scan = scanOf(o);
  const prefix = prefixOf(q, scan, o.workflow);
  // Newest first: skip what was listed already, and what was submitted at or after `submittedBefore`.
  let after: string | undefined = o.cursor === undefined ? undefined : decodeCursor(o.cursor, scan);
  if (o.before !== undefined) {
    const bound = `${timeBound(o.before)}~`;
    if (after === undefined || after < bound) after = bound;
  }
  const budget = o.limit * 10 + 100;
  const runs: RunRow[] = [];
  const unreadable: UnreadableRun[] = [];
  let examined = 0;
  let last: string | undefined;
  for (;;) {
    const page = await reads.kvScan(prefix, { ...(after === undefined ? {} : { after: prefix + after }), limit: Math.min(SCAN_PAGE, budget - examined + 1) });
    for (const e of page.entries) {
      if (runs.length >= o.limit || examined >= budget) return done(runs, unreadable, encodeCursor(scan, last!));
      const suffix = e.key.slice(prefix.length);
      const parsed = parseSuffix(suffix);
      examined++;
      last = suffix;
      if (parsed === undefined) {
        unreadable.push({
          runId: suffix.slice(16) || suffix,
          reason: "the index entry's key is malformed",
          damage: { record: "index_entry", detail: "its key is malformed" },
        });
        continue;
      }
      if (o.after !== undefined && parsed.submittedAtMs < o.after) return done(runs, unreadable, undefined);
      try {
        const row = await readRow(reads, parsed.runId as RunId, parsed.submittedAtMs, scan.kind === "all" ? e.value : undefined);
        if (row !== undefined && matches(row, o, only)) runs.push(row);
      } catch (err) {
        const damage = runDamageOf(err, parsed.runId);
        unreadable.push({ runId: parsed.runId, reason: err instanceof Error ? err.message : String(err), ...(damage === undefined ? {} : { damage }) });
      }
    }
    if (page.nextCursor === undefined) return done(runs, unreadable, undefined);
    after = page.nextCursor.slice(prefix.length);
  }
}

function done(runs: RunRow[], unreadable: UnreadableRun[], cursor: string | undefined): RunPage {
  return { runs, ...(cursor === undefined ? {} : { nextCursor: cursor }), ...(unreadable.length === 0 ? {} : { unreadable }) };
}

function matches(row: RunRow, o: CheckedListOptions, only: { kind: "job" | "workflow" } | undefined): boolean {
  if (o.state !== undefined && row.state !== o.state) return false;
  if (o.workflow !== undefined && row.workflow !== o.workflow) return false;
  return only === undefined || row.kind === only.kind;
}

/**
 * The row of the run `runId` submitted at `submittedAtMs`, from its index
 * entry (given, or read) and its records; `undefined` when the entry is of
 * no current run (a run swept or resubmitted since the page was read).
 */
async function readRow(reads: RunReads, runId: RunId, submittedAtMs: number, entryBytes: Uint8Array | undefined): Promise<RunRow | undefined> {
  const q = reads.queueName;
  const key = runIndexKey(q, submittedAtMs, runId);
  const bytes = entryBytes ?? (await reads.kvGet(key));
  if (bytes === null) return undefined;
  const entry: IndexEntry = decodeIndexEntry(bytes, key);
  const r = await reads.records(runId);
  if (r.kind === "unknown") return undefined;
  if (r.kind === "active") {
    if (r.run.submittedAtMs !== entry.submittedAtMs) return undefined;
    const job = await reads.job(r.pointer.jobId);
    return rowOf(runId, entry, { kind: "active", run: r.run, pointer: r.pointer, view: activeView(r.run, r.pointer, job) });
  }
  const t = r.terminal;
  if (t.submittedAtMs !== undefined && t.submittedAtMs !== entry.submittedAtMs) return undefined;
  // The final step's name and attempt are in its history entry (absent when the step never ran).
  const hk = stepHistoryKey(q, runId, t.finalStep);
  const hb = await reads.kvGet(hk);
  const h = hb === null ? undefined : decodeStepRecord(hb, hk);
  const lastAttempt = (h === undefined ? undefined : lastOf(h.attempts))?.attempt ?? 0;
  return rowOf(runId, entry, { kind: "ended", terminal: t, stepName: h?.name, attempt: lastAttempt });
}
