/**
 * @module Mending one run whose records are damaged (`taquba runs repair`).
 *
 * A damaged run record, step pointer, end record or listing entry fails
 * every read of its run, so neither a cancel nor a retry can act on it.
 * The repair reads each record's bytes itself, keeps every field that
 * still passes the record's own check, and ends the run in one commit:
 *
 * - an active run (its run record or step pointer damaged) ends `failed`
 *   with an error saying it was repaired, through the same terminating
 *   effects a cancel commits (its waiters, group, parent and children are
 *   answered as for any end), its pending or scheduled step job removed
 *   in that commit (a claimed one is asked to stop);
 * - an ended run whose end record is damaged gets a new end record saying
 *   `failed`, repaired, keeping what still reads of the old one;
 * - a listing entry is rewritten from what still reads of it.
 *
 * One commit each, with the client's applied mark: a crash before it
 * leaves the damage for a second repair, one after it leaves a run whose
 * records read, which a second repair refuses as not damaged. A run
 * with no damaged record is refused, so a healthy run is never ended here.
 */
import { StoreCorruptedError, ValidationError } from "../../errors.js";
import { describeValue, isOptionObject, optionFields, readOptions, refuseUnknownFields } from "../../option-values.js";
import { SettlementEffects } from "../../queue/effects.js";
import { markEffects, type AppliedMark } from "../records/applied-mark.js";
import { decodeValue, encodeValue } from "../records/codec.js";
import { childrenPrefix, runKey, stepPointerKey, terminalRecordKey } from "../records/kv-keys.js";
import {
  decodeRunRecord,
  decodeStepPointer,
  decodeTerminalRecord,
  encodeTerminalRecord,
  type RunRecord,
  type StepPointer,
  type TerminalRecord,
} from "../records/records.js";
import { isStoredTime } from "../../value-ranges.js";
import type { RuntimeCore } from "../runtime-core.js";
import { RunNotDamagedError, RunNotFoundError } from "../workflow-errors.js";
import { instruments } from "../../telemetry/metrics.js";
import { RunId } from "./run-id.js";
import type { RunDamage } from "./run-damage.js";
import {
  decodeIndexEntry,
  EMPTY_VALUE,
  encodeIndexEntry,
  INDEX_OPTIONAL,
  parseSuffix,
  runEndedKey,
  runIndexKey,
  runIndexPrefix,
  type IndexEntry,
} from "./run-index.js";
import { terminationOfActive } from "./terminal.js";
import { terminalEffectsWithoutWorker } from "./workerless-outcome.js";

/** What a repair does (or, for a dry run, would do) to a run. */
export type RepairAction = "ended_failed" | "end_rewritten" | "index_rewritten";

/** What `repairRun` found and did. */
export interface RepairOutcome {
  readonly runId: string;
  /** The damaged records, each with what is wrong with it. */
  readonly damaged: readonly RunDamage[];
  /**
   * `ended_failed`: the active run ended failed (its step job removed, or
   * asked to stop when claimed); `end_rewritten`: the ended run's end record
   * now says failed; `index_rewritten`: only its listing entry was rewritten,
   * the run goes on.
   */
  readonly action: RepairAction;
  /** The step job the repair removes or stops, when the records name one. */
  readonly stepJobId?: string;
  /** True when nothing was written (`dryRun`). */
  readonly dryRun: boolean;
}

/** Options of `repairRun`. */
export interface RepairRunOptions {
  /** Read and say what the repair would do, writing nothing. */
  readonly dryRun?: boolean;
}

const REPAIR_RUN_FIELDS = optionFields<RepairRunOptions>({ dryRun: true });

/**
 * Checks `repairRun`'s options; returns whether they ask for a dry run.
 * `ValidationError` for anything else (also in a client, before writing):
 * a misspelt or mistyped dry run must never repair the run for real.
 */
export function checkRepairOptions(opts: unknown): boolean {
  if (opts === undefined) return false;
  if (!isOptionObject(opts)) throw new ValidationError(`repairRun takes options { dryRun?: boolean }, got ${describeValue(opts)}`);
  refuseUnknownFields(opts, REPAIR_RUN_FIELDS, "RepairRunOptions.", "RepairRunOptions");
  const { dryRun } = readOptions(opts, REPAIR_RUN_FIELDS, "RepairRunOptions");
  if (dryRun !== undefined && typeof dryRun !== "boolean") throw new ValidationError(`repairRun's dryRun must be true or false, got ${describeValue(dryRun)}`);
  return dryRun === true;
}

/** The error a repaired run ends with, naming the records that were damaged. */
export function repairedError(damaged: readonly RunDamage[]): string {
  return `repaired by an operator: ${damaged.map((d) => `its ${RECORD_WORDS[d.record]} was damaged (${d.detail})`).join("; ")}`;
}

/** A run record's kind as words. */
export const RECORD_WORDS: Readonly<Record<RunDamage["record"], string>> = {
  run_record: "run record",
  step_pointer: "step pointer",
  end_record: "end record",
  index_entry: "listing entry",
};

/** The fields of the MessagePack map in `bytes`; none when they hold no map. */
function fieldsOf(bytes: Uint8Array | null): Record<string, unknown> {
  if (bytes === null) return {};
  try {
    const v = decodeValue(bytes);
    return v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Uint8Array) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * `base` with each of `fields` of `raw` that keeps it a record `decode`
 * accepts, one at a time in order: a field that fails the record's own
 * check is left at the base's value (or out).
 */
function salvaged<T>(base: Record<string, unknown>, raw: Record<string, unknown>, fields: readonly string[], decode: (b: Uint8Array) => T): T {
  let kept = base;
  for (const f of fields) {
    if (!Object.hasOwn(raw, f)) continue;
    const next = { ...kept, [f]: raw[f] };
    try {
      decode(encodeValue(next));
      kept = next;
    } catch (err) {
      if (!(err instanceof StoreCorruptedError)) throw err;
    }
  }
  return decode(encodeValue(kept));
}

/** The damage decoding `bytes` finds, or undefined when they decode (or are absent). */
function damageOf(bytes: Uint8Array | null, record: RunDamage["record"], decode: (b: Uint8Array) => unknown): RunDamage | undefined {
  if (bytes === null) return undefined;
  try {
    decode(bytes);
    return undefined;
  } catch (err) {
    if (err instanceof StoreCorruptedError) return { record, detail: err.detail };
    throw err;
  }
}

const RUN_FIELDS = [
  "submittedAtMs",
  "inputSha256",
  "incarnation",
  "headers",
  "submission",
  "priority",
  "maxAttempts",
  "group",
  "parent",
  "hasChildren",
  "memoPrefix",
  "memoSet",
] as const;
const POINTER_FIELDS = ["step", "jobId", "signalWait", "name"] as const;
const END_FIELDS = ["incarnation", "token", "memoPrefix", "submittedAtMs", "submission"] as const;
/** Every field of an index entry: its headers and the optional ones its decoder knows. */
const INDEX_FIELDS = ["headers", ...INDEX_OPTIONAL] as const;

/** The records of run `runId` as stored, each decoded or its damage. */
interface Found {
  runBytes: Uint8Array | null;
  pointerBytes: Uint8Array | null;
  endBytes: Uint8Array | null;
  /** The run's submission time, from its records or else from its listing entry's key. */
  at: number | undefined;
  indexKey: string | undefined;
  indexBytes: Uint8Array | null;
  damaged: RunDamage[];
}

async function readRecords(core: RuntimeCore, runId: string): Promise<Found> {
  const q = core.queueName;
  const [runBytes, pointerBytes, endBytes] = await Promise.all([
    core.queue.kvGet(runKey(q, runId)),
    core.queue.kvGet(stepPointerKey(q, runId)),
    core.queue.kvGet(terminalRecordKey(q, runId)),
  ]);
  // The listing entry's key holds the submission time, which the run or end record names.
  const at =
    [fieldsOf(runBytes)["submittedAtMs"], fieldsOf(endBytes)["submittedAtMs"]].find(isStoredTime) ??
    (runBytes === null && endBytes === null ? undefined : await listedAt(core, runId));
  const indexKey = at === undefined ? undefined : runIndexKey(q, at, runId);
  const indexBytes = indexKey === undefined ? null : await core.queue.kvGet(indexKey);
  const damaged = [
    damageOf(runBytes, "run_record", (b) => decodeRunRecord(b, runKey(q, runId))),
    damageOf(pointerBytes, "step_pointer", (b) => decodeStepPointer(b, stepPointerKey(q, runId))),
    // An end record beside a run record is one a re-opened run keeps no longer reading.
    runBytes === null ? damageOf(endBytes, "end_record", (b) => decodeTerminalRecord(b, terminalRecordKey(q, runId))) : undefined,
    damageOf(indexBytes, "index_entry", (b) => decodeIndexEntry(b, indexKey!)),
  ].filter((d): d is RunDamage => d !== undefined);
  return { runBytes, pointerBytes, endBytes, at, indexKey, indexBytes, damaged };
}

/**
 * The submission time in the key of run `runId`'s newest listing entry, for
 * records that lost it: a run ended at another time would be listed nowhere
 * (its entry names a submission its records do not). One pass over the
 * listing, which only a repair of such records makes.
 */
async function listedAt(core: RuntimeCore, runId: string): Promise<number | undefined> {
  const prefix = runIndexPrefix(core.queueName);
  let after: string | undefined;
  for (;;) {
    const page = await core.queue.kvScan(prefix, { limit: 1000, ...(after === undefined ? {} : { after }) });
    for (const e of page.entries) {
      const parsed = parseSuffix(e.key.slice(prefix.length));
      if (parsed?.runId === runId) return parsed.submittedAtMs;
    }
    if (page.nextCursor === undefined) return undefined;
    after = page.nextCursor;
  }
}

/** The listing entry rewritten from what still reads of it (the run record's fields where it has none). */
function mendedIndex(found: Found, submittedAtMs: number, run: Partial<RunRecord>): Uint8Array | undefined {
  if (found.indexKey === undefined || !found.damaged.some((d) => d.record === "index_entry")) return undefined;
  const key = found.indexKey;
  const entry: IndexEntry = salvaged({ submittedAtMs, headers: run.headers ?? {} }, fieldsOf(found.indexBytes), INDEX_FIELDS, (b) => decodeIndexEntry(b, key));
  return encodeIndexEntry(entry);
}

/**
 * @internal Repairs run `runIdIn` (see the module documentation); `mark` commits
 * with the repair. Throws `RunNotFoundError` for a run with no records and
 * `RunNotDamagedError` for one whose records read.
 */
export async function repairRun(
  core: RuntimeCore,
  runIdIn: RunId | string,
  opts: RepairRunOptions = {},
  mark?: AppliedMark<RepairOutcome>,
): Promise<RepairOutcome> {
  const runId = RunId.parse(runIdIn);
  const q = core.queueName;
  const dryRun = checkRepairOptions(opts);
  // Twice at most: a step transition may rewrite the records between the read and the commit.
  for (let round = 0; ; round++) {
    const found = await readRecords(core, runId);
    const { runBytes, pointerBytes, endBytes, damaged } = found;
    if (runBytes === null && pointerBytes === null && endBytes === null && found.indexBytes === null) throw new RunNotFoundError(runId);
    if (damaged.length === 0) throw new RunNotDamagedError(runId, runBytes === null ? "ended" : "active");
    const now = core.clock.now();
    const rawRun = fieldsOf(runBytes);
    const submittedAtMs = found.at ?? now;
    const active = runBytes !== null || pointerBytes !== null;
    const healthyRun = !damaged.some((d) => d.record !== "index_entry");
    const base = (action: RepairAction, stepJobId?: string): RepairOutcome => ({
      runId,
      damaged,
      action,
      ...(stepJobId === undefined ? {} : { stepJobId }),
      dryRun,
    });

    if (healthyRun) {
      // Only the listing entry: rewritten, the run goes on.
      const run = runBytes === null ? {} : decodeRunRecord(runBytes, runKey(q, runId));
      const entry = mendedIndex(found, submittedAtMs, run)!;
      const out = base("index_rewritten");
      if (dryRun) return out;
      const effects = new SettlementEffects().kvPut(found.indexKey!, entry);
      if (
        await core.queue.kvCompareAndApply([{ key: found.indexKey!, value: found.indexBytes }], mark === undefined ? effects : markEffects(mark, out, effects))
      )
        return out;
    } else if (!active) {
      // An ended run whose end record does not read: a new end record saying failed, repaired.
      const key = terminalRecordKey(q, runId);
      const raw = fieldsOf(endBytes);
      const rec: TerminalRecord = salvaged(
        {
          runId,
          status: "failed",
          errorKind: "permanent",
          error: repairedError(damaged),
          finalStep: typeof raw["finalStep"] === "number" && Number.isSafeInteger(raw["finalStep"]) && raw["finalStep"] >= 0 ? raw["finalStep"] : 0,
          terminatedAtMs: isStoredTime(raw["terminatedAtMs"]) ? raw["terminatedAtMs"] : now,
          ...(found.at === undefined ? {} : { submittedAtMs: found.at }),
          incarnation: `repaired-${now}`,
          token: `repaired:${now}`,
          // The outcome is this record's, whatever result record the old one named.
          inline: { headers: {} },
        },
        raw,
        END_FIELDS,
        (b) => decodeTerminalRecord(b, key),
      );
      const out = base("end_rewritten");
      if (dryRun) return out;
      const effects = new SettlementEffects().kvPut(key, encodeTerminalRecord(rec));
      if (found.at !== undefined) {
        // The run now lists by its new status: its entry under the old one (whichever it was) goes.
        for (const s of ["succeeded", "cancelled"] as const) effects.kvDelete(runEndedKey(q, s, found.at, runId));
        effects.kvPut(runEndedKey(q, "failed", found.at, runId), EMPTY_VALUE);
      }
      const entry = mendedIndex(found, submittedAtMs, {});
      if (entry !== undefined) effects.kvPut(found.indexKey!, entry);
      const expected = [{ key, value: endBytes }, ...(entry === undefined ? [] : [{ key: found.indexKey!, value: found.indexBytes }])];
      if (await core.queue.kvCompareAndApply(expected, mark === undefined ? effects : markEffects(mark, out, effects))) return out;
    } else {
      const pointerKey = stepPointerKey(q, runId);
      const pointer: Partial<StepPointer> = salvagedPointer(fieldsOf(pointerBytes), pointerKey);
      const hasChildren = (await core.queue.kvScan(childrenPrefix(q, runId), { limit: 1 })).entries.length > 0;
      const run = salvagedRun(runId, rawRun, submittedAtMs, pointer.jobId ?? `repaired-${now}`, runKey(q, runId));
      const jobId = pointer.jobId;
      const job = jobId === undefined ? null : await core.queue.view().job(jobId);
      const out = base("ended_failed", job === null ? undefined : jobId);
      if (dryRun) return out;
      const t = terminationOfActive(
        runId,
        { ...run, ...(hasChildren ? { hasChildren: true } : {}) },
        {
          status: "failed",
          errorKind: "permanent",
          error: repairedError(damaged),
          finalStep: pointer.step ?? 0,
          token: `${jobId ?? run.incarnation}:repaired`,
          signalWait: job?.state === "scheduled" ? pointer.signalWait : undefined,
        },
        now,
        core.memos.prefix,
        job,
      );
      const effects = await terminalEffectsWithoutWorker(core, t);
      const entry = mendedIndex(found, submittedAtMs, run);
      if (entry !== undefined) effects.kvPut(found.indexKey!, entry);
      const marked = mark === undefined ? effects : markEffects(mark, out, effects);
      let committed = false;
      if (job !== null && (job.state === "pending" || job.state === "scheduled")) {
        // The step job goes with the end, in one commit.
        committed = (await core.queue.cancelJob(jobId!, marked)) === "removed";
      }
      if (!committed) {
        committed = await core.queue.kvCompareAndApply(
          [
            { key: runKey(q, runId), value: runBytes },
            { key: pointerKey, value: pointerBytes },
          ],
          marked,
        );
        // A claimed step is asked to stop; its settlement finds the run ended.
        if (committed && job?.state === "claimed") await core.queue.cancelJob(jobId!);
      }
      if (committed) {
        core.noteTerminated(runId, now);
        instruments()?.runsTerminated.add(1, { "taquba.queue": q, "taquba.outcome": "failed" });
        return out;
      }
    }
    if (round >= 1) throw new RunNotDamagedError(runId, "changing");
  }
}

function salvagedPointer(raw: Record<string, unknown>, key: string): Partial<StepPointer> {
  const p = salvaged({ step: 0, jobId: "-" }, raw, POINTER_FIELDS, (b) => decodeStepPointer(b, key));
  const out: Partial<StepPointer> = { ...p };
  if (!Object.hasOwn(raw, "step") || p.step !== raw["step"]) delete out.step;
  if (p.jobId === "-") delete out.jobId;
  return out;
}

function salvagedRun(runId: string, raw: Record<string, unknown>, submittedAtMs: number, incarnation: string, key: string): RunRecord {
  return salvaged(
    { runId, submittedAtMs, inputSha256: "", incarnation, headers: {} },
    raw,
    RUN_FIELDS.filter((f) => f !== "submittedAtMs"),
    (b) => decodeRunRecord(b, key),
  );
}
