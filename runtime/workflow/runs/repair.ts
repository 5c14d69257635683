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
 * - a listing entry is rewritten from what still reads of it;
 * - the records beside the run's own that its fields name (the signal wait
 *   its step waits on, its group member record, its entry under its parent,
 *   its children's entries) are checked too: an active run ends failed as
 *   above, an ended run keeps its end and they are rewritten from it (an
 *   ended parent's damaged child entries are rewritten with each child's
 *   policy, and a job settling its children as its own settlement would
 *   have goes in the same commit; the repair then settles them itself).
 *
 * One commit each, with the client's applied mark, compared on the
 * damaged bytes read: a crash before it leaves the damage for a second
 * repair, one after it leaves a run whose records read, which a second
 * repair refuses as not damaged; of two repairs at once, one commits and
 * the other, reading again, is refused so too. A run
 * with no damaged record is refused, so a healthy run is never ended here.
 *
 * With `remove`, the run is ended or mended so (a commit without the
 * mark), then its records go (`run-removal`, the mark on its last commit).
 */
import { StoreCorruptedError, ValidationError } from "../../errors.js";
import { describeValue, isOptionObject, optionFields, readOptions, refuseUnknownFields } from "../../option-values.js";
import { SettlementEffects } from "../../queue/effects.js";
import type { KvExpectation } from "../../queue/kv-ops.js";
import { markEffects, type AppliedMark } from "../records/applied-mark.js";
import { decodeValue, encodeValue, sha256Hex } from "../records/codec.js";
import { childEntryKey, childrenPrefix, groupMemberKey, runKey, signalWaitKey, stepPointerKey, terminalRecordKey } from "../records/kv-keys.js";
import {
  decodeChildEntry,
  decodeGroupMember,
  decodeSignalWait,
  encodeChildEntry,
  encodeGroupMember,
  isParentClosePolicy,
  decodeRunRecord,
  decodeStepPointer,
  decodeTerminalRecord,
  encodeTerminalRecord,
  type GroupMemberRecord,
  type ParentClosePolicy,
  type RunRecord,
  type StepPointer,
  type TerminalRecord,
} from "../records/records.js";
import { isStoredTime } from "../../value-ranges.js";
import type { RuntimeCore } from "../runtime-core.js";
import { bytesEqual } from "../../store/bytes-equal.js";
import { RepairPlanChangedError, RunNotDamagedError, RunNotFoundError } from "../workflow-errors.js";
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
import { settleEndedParent } from "../children/child-runs.js";
import { HEADER_PARENT_ENDED, HEADER_PARENT_STATUS, HEADER_PARENT_SUBMISSION } from "../records/reserved.js";
import { terminalEffectsWithoutWorker } from "./workerless-outcome.js";
import { removalWords, removeEnded, type RemovalRecords } from "./run-removal.js";

/** What a repair does (or, for a dry run, would do) to a run. */
export type RepairAction = "ended_failed" | "end_rewritten" | "records_rewritten" | "index_rewritten" | "removed";

/** What `repairRun` found and did. */
export interface RepairOutcome {
  readonly runId: string;
  /** The damaged records, each with what is wrong with it. */
  readonly damaged: readonly RunDamage[];
  /**
   * `ended_failed`: the active run ended failed (its step job removed, or
   * asked to stop when claimed); `end_rewritten`: the ended run's end record
   * now says failed; `records_rewritten`: the ended run's end is kept, its
   * damaged group member record rewritten from it and its damaged child
   * entries settled (see `childrenCancelled`); `index_rewritten`: only its
   * listing entry was rewritten, the run goes on; `removed` (with
   * `remove`): the run's records are gone (see `RepairRunOptions.remove`).
   */
  readonly action: RepairAction;
  /** With `remove`: the records removed (or, for a dry run, to be removed), in words. */
  readonly removed?: readonly string[];
  /** The step job the repair removes or stops, when the records name one. */
  readonly stepJobId?: string;
  /**
   * The children of an ended parent that the repair cancels: their entries
   * under it were damaged, so the parent's settlement of its children
   * stopped at them and they would run on unowned. Each is settled as that
   * settlement would have (cancelled unless the parent succeeded or the
   * child's run record keeps the policy `abandon`), by the repair and by a
   * job its commit enqueues (a crash after the commit leaves the job). For
   * an active parent, the entries are rewritten and its end's settlement
   * deals with them.
   */
  readonly childrenCancelled?: readonly string[];
  /** True when nothing was written (`dryRun`). */
  readonly dryRun: boolean;
  /**
   * A token of this plan: the action, the step job and children it names,
   * and the damaged records' bytes it was made from. Pass a dry run's as
   * `RepairRunOptions.plan` to have the repair refused when the run no
   * longer gives the same plan.
   */
  readonly plan: string;
}

/** Options of `repairRun`. */
export interface RepairRunOptions {
  /** Read and say what the repair would do, writing nothing. */
  readonly dryRun?: boolean;
  /**
   * Where neither the run record nor the end record holds the run's
   * submission time, which places its listing entry (records of earlier
   * versions, or the field lost to the damage), look for the entry through
   * the step queue's whole run listing: one listing read per 1,000 runs.
   * Without it, such a run whose other records read is refused
   * (`RunNotDamagedError`, reason `index_unchecked`); one whose run record
   * or end record is damaged has its entry looked for that way anyway.
   */
  readonly scanIndex?: boolean;
  /**
   * Remove the run's records instead of keeping it as an ended, failed run:
   * a damaged active run is ended first as the repair ends it, an ended
   * run's damaged records are mended first, then its children are settled
   * as its end settles them, its memo entries and result cleared, and its
   * end record, listing entries and history removed in one commit. Its
   * group member record stays, saying how it ended (the group's manifest
   * lists the member, and a member with no record would be submitted
   * again by the group's `resume`). An ended run is removed whether or not
   * it is damaged (so a removal cut short finishes); an active run whose
   * records read is refused unless `endActive`.
   */
  readonly remove?: boolean;
  /** With `remove`: end an active run whose records read (failed, removed by an operator) and remove it. */
  readonly endActive?: boolean;
  /**
   * The plan confirmed: a dry run's `RepairOutcome.plan`. The repair is
   * refused (`RepairPlanChangedError`, nothing written) when the records it
   * reads give another plan, also when they change between its read and
   * its commit (the commit compares the damaged bytes the plan names).
   * With `remove`, the plan of a dry run with `remove`: the removal is
   * refused the same way, before anything is written, when the run's
   * records (or what the removal would take: its history, its children)
   * are no longer those the plan was made from.
   */
  readonly plan?: string;
}

/** `repairRun`'s options, checked. */
export interface CheckedRepairOptions {
  readonly dryRun: boolean;
  readonly scanIndex: boolean;
  readonly remove: boolean;
  readonly endActive: boolean;
  readonly plan?: string;
}

const REPAIR_RUN_FIELDS = optionFields<RepairRunOptions>({ dryRun: true, scanIndex: true, remove: true, endActive: true, plan: true });
const REPAIR_SHAPE = "{ dryRun?: boolean, scanIndex?: boolean, remove?: boolean, endActive?: boolean, plan?: string }";
/** A plan token: 64 lower-case hex digits. */
const PLAN_TOKEN = /^[0-9a-f]{64}$/;

/** A boolean option's value; `ValidationError` for anything but true, false or undefined. */
function flag(name: string, value: unknown): boolean {
  if (value !== undefined && typeof value !== "boolean") throw new ValidationError(`repairRun's ${name} must be true or false, got ${describeValue(value)}`);
  return value === true;
}

/**
 * Checks `repairRun`'s options. `ValidationError` for anything else (also
 * in a client, before writing): a misspelt or mistyped dry run must never
 * repair the run for real.
 */
export function checkRepairOptions(opts: unknown): CheckedRepairOptions {
  if (opts === undefined) return { dryRun: false, scanIndex: false, remove: false, endActive: false };
  if (!isOptionObject(opts)) throw new ValidationError(`repairRun takes options ${REPAIR_SHAPE}, got ${describeValue(opts)}`);
  refuseUnknownFields(opts, REPAIR_RUN_FIELDS, "RepairRunOptions.", "RepairRunOptions");
  const given = readOptions(opts, REPAIR_RUN_FIELDS, "RepairRunOptions");
  const checked = {
    dryRun: flag("dryRun", given.dryRun),
    scanIndex: flag("scanIndex", given.scanIndex),
    remove: flag("remove", given.remove),
    endActive: flag("endActive", given.endActive),
  };
  if (checked.endActive && !checked.remove)
    throw new ValidationError("repairRun's endActive applies only to a removal: pass remove: true with it (--remove --end-active)");
  const plan = given.plan;
  if (plan === undefined) return checked;
  if (typeof plan !== "string" || !PLAN_TOKEN.test(plan))
    throw new ValidationError(`repairRun's plan must be the plan token a dry run answered (64 hex digits), got ${describeValue(plan)}`);
  return { ...checked, plan };
}

/** The options as a request carries them: only those set. */
export function setRepairOptions(o: CheckedRepairOptions): RepairRunOptions {
  return {
    ...(o.dryRun ? { dryRun: true } : {}),
    ...(o.scanIndex ? { scanIndex: true } : {}),
    ...(o.remove ? { remove: true } : {}),
    ...(o.endActive ? { endActive: true } : {}),
    ...(o.plan === undefined ? {} : { plan: o.plan }),
  };
}

/** The error a repaired run ends with, naming the records that were damaged (none: a removal ended it). */
export function repairedError(damaged: readonly RunDamage[]): string {
  if (damaged.length === 0) return "removed by an operator: ended to be removed";
  return `repaired by an operator: ${damaged.map((d) => `its ${RECORD_WORDS[d.record]} was damaged (${d.detail})`).join("; ")}`;
}

/** A run record's kind as words. */
export const RECORD_WORDS: Readonly<Record<RunDamage["record"], string>> = {
  run_record: "run record",
  step_pointer: "step pointer",
  end_record: "end record",
  index_entry: "listing entry",
  signal_wait: "signal wait",
  group_member: "group member record",
  child_entry: "child run entry",
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

/** What reading a run's records takes: its step queue's name and the queue's KV reads (an owner's queue, or a read-only view). */
export interface RecordReads {
  readonly queueName: string;
  kvGet(key: string): Promise<Uint8Array | null>;
  kvScan(prefix: string, opts: { limit: number; after?: string }): Promise<{ entries: readonly { key: string; value: Uint8Array }[]; nextCursor?: string }>;
}

const recordReadsOf = (core: RuntimeCore): RecordReads => ({
  queueName: core.queueName,
  kvGet: (key) => core.queue.kvGet(key),
  kvScan: (prefix, opts) => core.queue.kvScan(prefix, opts),
});

/** How many of a parent's child entries `findRunDamage` checks in one call (one read). */
export const CHILD_ENTRIES_PER_CHECK = 256;

/** What `findRunDamage` found, and how far it checked the run's children's entries. */
export interface RunDamageCheck {
  readonly damaged: readonly RunDamage[];
  /**
   * The children's entries checked: `count` of them, those after the
   * child run id `after` (from the first when absent); `next`, the last
   * one checked, when more follow (pass it as `childrenAfter` to check
   * the next ones). A repair checks them all.
   */
  readonly childEntries: { readonly after?: string; readonly count: number; readonly next?: string };
}

/**
 * The damaged records of run `runId` that a repair would find (its own,
 * its listing entry where a record places it, and those beside it), read
 * without writing: for a page that shows a run whose own records read.
 * Of its children's entries, one read's worth (`CHILD_ENTRIES_PER_CHECK`)
 * after the child `childrenAfter`: a parent of thousands of children
 * costs a page load one read, not one per 256 children.
 */
export async function findRunDamage(reads: RecordReads, runId: string, childrenAfter?: string): Promise<RunDamageCheck> {
  const found = await readRecords(reads, RunId.parse(runId), false, {
    limit: CHILD_ENTRIES_PER_CHECK,
    ...(childrenAfter === undefined ? {} : { after: childrenAfter }),
  });
  return { damaged: found.damaged, childEntries: found.childrenChecked };
}

/** A record of the run beside its own, as stored, and whether it reads. */
interface Beside {
  readonly key: string;
  readonly bytes: Uint8Array;
  readonly damaged: boolean;
}

/** The records of run `runId` as stored, each decoded or its damage. */
interface Found {
  runBytes: Uint8Array | null;
  pointerBytes: Uint8Array | null;
  endBytes: Uint8Array | null;
  indexKey: string | undefined;
  indexBytes: Uint8Array | null;
  /** The submission time: as the run or end record holds it, else from the listing entry's key when a scan found the entry. */
  submittedAtMs?: number;
  /** No record named the submission time, and no scan looked for the entry: it was not checked. */
  indexUnchecked: boolean;
  /** The signal wait its step waits on, its group member record, its entry under its parent. */
  wait?: Beside;
  member?: Beside & { readonly memberKey: string };
  asChild?: Beside;
  /** Its children's damaged entries, with the child's run id. */
  childEntries: (Beside & { readonly childRunId: string })[];
  /** How far its children's entries were checked (all of them, unless a bound was given). */
  childrenChecked: RunDamageCheck["childEntries"];
  damaged: RunDamage[];
}

/** The record at `key` and its damage (`words` name it in the detail); undefined when absent or when it names another run. */
async function besideRecord(
  reads: RecordReads,
  key: string,
  runId: string | undefined,
  record: RunDamage["record"],
  decode: (b: Uint8Array) => unknown,
  words = "",
): Promise<{ beside: Beside; damage?: RunDamage } | undefined> {
  const bytes = await reads.kvGet(key);
  if (bytes === null) return undefined;
  const named = fieldsOf(bytes)["runId"];
  // A record that still names another run is that run's to mend.
  if (runId !== undefined && typeof named === "string" && named !== runId) return undefined;
  const damage = damageOf(bytes, record, decode);
  return { beside: { key, bytes, damaged: damage !== undefined }, ...(damage === undefined ? {} : { damage: { record, detail: `${words}${damage.detail}` } }) };
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const mapOf = (v: unknown): Record<string, unknown> => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

/** A bound on the child entries read: `limit` of them (one read), after child run id `after`. */
interface ChildBound {
  readonly limit: number;
  readonly after?: string;
}

/**
 * The child entries of parent `runId` that do not read: all of them (one
 * read per 256: one parent's children), or those within `bound`; and how
 * far the check went.
 */
async function damagedChildEntries(
  reads: RecordReads,
  runId: string,
  bound: ChildBound | undefined,
): Promise<{ damaged: (Beside & { readonly childRunId: string; readonly detail: string })[]; checked: RunDamageCheck["childEntries"] }> {
  const prefix = childrenPrefix(reads.queueName, runId);
  const damaged: (Beside & { readonly childRunId: string; readonly detail: string })[] = [];
  let count = 0;
  let last: string | undefined;
  for (let after = bound?.after === undefined ? undefined : prefix + bound.after; ; ) {
    const page = await reads.kvScan(prefix, { limit: bound?.limit ?? 256, ...(after === undefined ? {} : { after }) });
    for (const e of page.entries) {
      const damage = damageOf(e.value, "child_entry", (b) => decodeChildEntry(b, e.key));
      const childRunId = e.key.slice(prefix.length);
      last = childRunId;
      if (damage !== undefined)
        damaged.push({ key: e.key, bytes: e.value, damaged: true, childRunId, detail: `child run ${JSON.stringify(childRunId)}: ${damage.detail}` });
    }
    count += page.entries.length;
    const from = bound?.after === undefined ? {} : { after: bound.after };
    if (page.nextCursor === undefined) return { damaged, checked: { ...from, count } };
    // A short page may still have more after it: the next check starts where this one stopped.
    if (bound !== undefined) return { damaged, checked: { ...from, count, next: last ?? page.nextCursor.slice(prefix.length) } };
    after = page.nextCursor;
  }
}

/** Run `runId`'s listing entry, found by reading the step queue's whole run listing (see `RepairRunOptions.scanIndex`). */
async function scannedIndexEntry(reads: RecordReads, runId: string): Promise<{ key: string; bytes: Uint8Array; at: number } | undefined> {
  const prefix = runIndexPrefix(reads.queueName);
  for (let after: string | undefined; ; ) {
    const page = await reads.kvScan(prefix, { limit: 1000, ...(after === undefined ? {} : { after }) });
    for (const e of page.entries) {
      const parsed = parseSuffix(e.key.slice(prefix.length));
      if (parsed?.runId === runId) return { key: e.key, bytes: e.value, at: parsed.submittedAtMs };
    }
    if (page.nextCursor === undefined) return undefined;
    after = page.nextCursor;
  }
}

async function readRecords(reads: RecordReads, runId: string, scanIndex: boolean, children?: ChildBound): Promise<Found> {
  const q = reads.queueName;
  const [runBytes, pointerBytes, endBytes] = await Promise.all([
    reads.kvGet(runKey(q, runId)),
    reads.kvGet(stepPointerKey(q, runId)),
    reads.kvGet(terminalRecordKey(q, runId)),
  ]);
  const damaged = [
    damageOf(runBytes, "run_record", (b) => decodeRunRecord(b, runKey(q, runId))),
    damageOf(pointerBytes, "step_pointer", (b) => decodeStepPointer(b, stepPointerKey(q, runId))),
    // An end record beside a run record is one a re-opened run keeps no longer reading.
    runBytes === null ? damageOf(endBytes, "end_record", (b) => decodeTerminalRecord(b, terminalRecordKey(q, runId))) : undefined,
  ].filter((d): d is RunDamage => d !== undefined);
  // The listing entry's key holds the submission time, which the run or end record names.
  const at = [fieldsOf(runBytes)["submittedAtMs"], fieldsOf(endBytes)["submittedAtMs"]].find(isStoredTime);
  let indexKey = at === undefined ? undefined : runIndexKey(q, at, runId);
  let indexBytes = indexKey === undefined ? null : await reads.kvGet(indexKey);
  let indexAt: number | undefined;
  // Where no record names it, the entry is found by a pass over the listing: when asked, or when the run's own records
  // are damaged (they are repaired anyway, and a run ended under another time would be listed nowhere).
  const scanned = at === undefined && (scanIndex || damaged.length > 0);
  if (scanned) {
    const entry = await scannedIndexEntry(reads, runId);
    if (entry !== undefined) [indexKey, indexBytes, indexAt] = [entry.key, entry.bytes, entry.at];
  }
  const indexDamage = damageOf(indexBytes, "index_entry", (b) => decodeIndexEntry(b, indexKey!));
  if (indexDamage !== undefined) damaged.push(indexDamage);
  const submittedAtMs = at ?? indexAt;
  const found: Found = {
    runBytes,
    pointerBytes,
    endBytes,
    indexKey,
    indexBytes,
    ...(submittedAtMs === undefined ? {} : { submittedAtMs }),
    indexUnchecked: at === undefined && !scanned,
    childEntries: [],
    childrenChecked: { count: 0 },
    damaged,
  };
  const active = runBytes !== null || pointerBytes !== null;
  const rawRun = fieldsOf(runBytes);

  // The records beside the run's own that name it, found from what still reads of its own.
  const waitOn = active ? str(fieldsOf(pointerBytes)["signalWait"]) : undefined;
  if (waitOn !== undefined) {
    const key = signalWaitKey(q, waitOn);
    const r = await besideRecord(reads, key, runId, "signal_wait", (b) => decodeSignalWait(b, key), `the wait for signal ${JSON.stringify(waitOn)}: `);
    if (r !== undefined) {
      found.wait = r.beside;
      if (r.damage !== undefined) damaged.push(r.damage);
    }
  }
  // The group's storage tag: the run record's group names it, a listing entry names it beside the group's id.
  const runGroup = mapOf(rawRun["group"]);
  const entryGroup = mapOf(fieldsOf(indexBytes)["group"]);
  const tag = str(runGroup["id"]) ?? str(entryGroup["tag"]);
  const memberKey = str(runGroup["key"]) ?? str(entryGroup["key"]);
  if (tag !== undefined && memberKey !== undefined) {
    const key = groupMemberKey(q, tag, memberKey);
    const r = await besideRecord(reads, key, runId, "group_member", (b) => decodeGroupMember(b, key), `member ${JSON.stringify(memberKey)}: `);
    if (r !== undefined) {
      found.member = { ...r.beside, memberKey };
      if (r.damage !== undefined) damaged.push(r.damage);
    }
  }
  const parent = active ? str(mapOf(rawRun["parent"])["runId"]) : undefined;
  if (parent !== undefined) {
    const key = childEntryKey(q, parent, runId);
    const r = await besideRecord(
      reads,
      key,
      undefined,
      "child_entry",
      (b) => decodeChildEntry(b, key),
      `its entry under parent run ${JSON.stringify(parent)}: `,
    );
    if (r !== undefined) {
      found.asChild = r.beside;
      if (r.damage !== undefined) damaged.push(r.damage);
    }
  }
  const kids = await damagedChildEntries(reads, runId, children);
  found.childrenChecked = kids.checked;
  for (const c of kids.damaged) {
    found.childEntries.push(c);
    damaged.push({ record: "child_entry", detail: c.detail });
  }
  return found;
}

/**
 * The parent-close policy child `childRunId`'s own run record keeps, else
 * the default (`cancel`): a child whose policy is lost is cancelled with
 * its parent, never left running unowned.
 */
async function keptParentClose(core: RuntimeCore, childRunId: string): Promise<ParentClosePolicy> {
  const policy = mapOf(fieldsOf(await core.queue.kvGet(runKey(core.queueName, childRunId)))["parent"])["parentClose"];
  return isParentClosePolicy(policy) ? policy : "cancel";
}

/** The listing entry rewritten from what still reads of it (the run record's fields where it has none). */
function mendedIndex(found: Found, submittedAtMs: number, run: Partial<RunRecord>): Uint8Array | undefined {
  if (found.indexKey === undefined || !found.damaged.some((d) => d.record === "index_entry")) return undefined;
  const key = found.indexKey;
  const entry: IndexEntry = salvaged({ submittedAtMs, headers: run.headers ?? {} }, fieldsOf(found.indexBytes), INDEX_FIELDS, (b) => decodeIndexEntry(b, key));
  return encodeIndexEntry(entry);
}

/**
 * @internal Repairs run `runIdIn` (see the module documentation), or with
 * `remove` removes it (see `RepairRunOptions.remove`); `mark` commits with
 * the repair (a removal's last commit). Throws `RunNotFoundError` for a run
 * with no records and `RunNotDamagedError` for one whose records read.
 */
export async function repairRun(
  core: RuntimeCore,
  runIdIn: RunId | string,
  opts: RepairRunOptions = {},
  mark?: AppliedMark<RepairOutcome>,
): Promise<RepairOutcome> {
  const runId = RunId.parse(runIdIn);
  const options = checkRepairOptions(opts);
  return options.remove ? removeRun(core, runId, options, mark) : mendRun(core, runId, options, mark, false);
}

/**
 * Removes run `runId`: ends or mends it first where it is active or
 * damaged (a commit without the mark, so a crash after it leaves an ended
 * run that the request, applied again, removes from there), then removes
 * the ended run's records with the mark.
 */
async function removeRun(core: RuntimeCore, runId: RunId, o: CheckedRepairOptions, mark?: AppliedMark<RepairOutcome>): Promise<RepairOutcome> {
  let first: RepairOutcome | undefined;
  // Whether this removal committed a change (its end, its mended records): the plan confirmed is checked until then.
  let changed = false;
  for (let round = 0; ; round++) {
    const found = await readRecords(recordReadsOf(core), runId, o.scanIndex);
    const { runBytes, pointerBytes, endBytes, damaged } = found;
    if (runBytes === null && pointerBytes === null && endBytes === null && found.indexBytes === null) throw new RunNotFoundError(runId);
    const active = runBytes !== null || pointerBytes !== null;
    // A listing entry alone does not keep a run from moving on: such a run is as healthy as one with none.
    if (active && !o.endActive && !damaged.some((d) => d.record !== "index_entry")) throw new RunNotDamagedError(runId, "active_kept");
    // What the removal found first (the damage, the records) is what it answers, also after the rounds that mended it.
    if (first === undefined || (o.plan !== undefined && !changed)) {
      const plan = { runId, damaged, action: "removed" as const, removed: await removalWords(core, runId, removalRecordsOf(found)), dryRun: o.dryRun };
      const token = planToken(plan, found);
      // Refused before anything is written when the records read give another plan than the one confirmed.
      if (o.plan !== undefined && o.plan !== token) throw new RepairPlanChangedError(runId);
      first ??= { ...plan, plan: token };
    }
    if (o.dryRun) return first;
    if (active || damaged.length > 0) {
      try {
        // With a plan confirmed, the end or mending commits only over the records the plan was made from.
        const mend = { dryRun: false, scanIndex: o.scanIndex, remove: false, endActive: false };
        await mendRun(core, runId, mend, undefined, true, o.plan !== undefined && !changed ? found : undefined);
        changed = true;
      } catch (e) {
        if (!(e instanceof RunNotDamagedError) || round >= 3) throw e;
      }
    } else if (await removeEnded(core, runId, removalRecordsOf(found), mark === undefined ? undefined : (effects) => markEffects(mark, first!, effects))) {
      return first;
    }
    if (round >= 3) throw new RunNotDamagedError(runId, "changing");
  }
}

/** Whether two reads of a run's records found the same bytes in each (its own and those beside it). */
function sameRecords(a: Found, b: Found): boolean {
  const same = (x: Uint8Array | null | undefined, y: Uint8Array | null | undefined) => {
    const [u, v] = [x ?? null, y ?? null];
    return u === null || v === null ? u === v : bytesEqual(u, v);
  };
  if (!same(a.runBytes, b.runBytes) || !same(a.pointerBytes, b.pointerBytes) || !same(a.endBytes, b.endBytes)) return false;
  if (a.indexKey !== b.indexKey || !same(a.indexBytes, b.indexBytes)) return false;
  if (!same(a.wait?.bytes, b.wait?.bytes) || !same(a.member?.bytes, b.member?.bytes) || !same(a.asChild?.bytes, b.asChild?.bytes)) return false;
  return (
    a.childEntries.length === b.childEntries.length &&
    a.childEntries.every((c, i) => c.key === b.childEntries[i]!.key && same(c.bytes, b.childEntries[i]!.bytes))
  );
}

/** What a removal needs of the records as the repair read them. */
function removalRecordsOf(found: Found): RemovalRecords {
  return {
    runBytes: found.runBytes,
    pointerBytes: found.pointerBytes,
    endBytes: found.endBytes,
    indexKey: found.indexKey,
    indexBytes: found.indexBytes,
    submittedAtMs: found.submittedAtMs,
    workflow: str(fieldsOf(found.indexBytes)["workflow"]),
    signalWait: found.wait !== undefined,
  };
}

/**
 * Mends run `runId`'s records (see the module documentation). With
 * `endHealthy`, an active run whose records read is ended too (a removal's
 * first commit), saying it was removed.
 */
async function mendRun(
  core: RuntimeCore,
  runId: RunId,
  o: CheckedRepairOptions,
  mark: AppliedMark<RepairOutcome> | undefined,
  endHealthy: boolean,
  /** A removal's confirmed plan was made from these records: any other read is `RepairPlanChangedError`, nothing written. */
  confirmed?: Found,
): Promise<RepairOutcome> {
  const { dryRun, scanIndex } = o;
  const q = core.queueName;
  // Twice at most: a step transition may rewrite the records between the read and the commit.
  for (let round = 0; ; round++) {
    const found = await readRecords(recordReadsOf(core), runId, scanIndex);
    if (confirmed !== undefined && !sameRecords(confirmed, found)) throw new RepairPlanChangedError(runId);
    const { runBytes, pointerBytes, endBytes, damaged } = found;
    const active = runBytes !== null || pointerBytes !== null;
    if (runBytes === null && pointerBytes === null && endBytes === null && found.indexBytes === null) throw new RunNotFoundError(runId);
    if (damaged.length === 0 && !(endHealthy && active))
      throw new RunNotDamagedError(runId, found.indexUnchecked ? "index_unchecked" : runBytes === null ? "ended" : "active");
    const now = core.clock.now();
    const rawRun = fieldsOf(runBytes);
    // The submission time, from the records or else from the listing entry's key: the run stays listed under it.
    const knownAt = found.submittedAtMs;
    const submittedAtMs = knownAt ?? now;
    const healthyRun = !damaged.some((d) => d.record !== "index_entry") && !(endHealthy && active);
    // The plan of this read, with its token: refused when it is not the one confirmed (`o.plan`), before anything is written.
    const planned = (action: RepairAction, stepJobId?: string, childrenCancelled: readonly string[] = []): RepairOutcome => {
      const plan = {
        runId,
        damaged,
        action,
        ...(stepJobId === undefined ? {} : { stepJobId }),
        ...(childrenCancelled.length === 0 ? {} : { childrenCancelled }),
        dryRun,
      };
      const token = planToken(plan, found);
      if (o.plan !== undefined && o.plan !== token) throw new RepairPlanChangedError(runId);
      return { ...plan, plan: token };
    };

    if (healthyRun) {
      // Only the listing entry: rewritten, the run goes on.
      const run = runBytes === null ? {} : decodeRunRecord(runBytes, runKey(q, runId));
      const entry = mendedIndex(found, submittedAtMs, run)!;
      const out = planned("index_rewritten");
      if (dryRun) return out;
      const effects = new SettlementEffects().kvPut(found.indexKey!, entry);
      if (
        await core.queue.kvCompareAndApply([{ key: found.indexKey!, value: found.indexBytes }], mark === undefined ? effects : markEffects(mark, out, effects))
      )
        return out;
    } else if (!active) {
      // An ended run: a new end record saying failed, repaired, where it does not read; its member and child entries mended beside it.
      const key = terminalRecordKey(q, runId);
      const endDamaged = damaged.some((d) => d.record === "end_record");
      const rec: TerminalRecord = endDamaged ? rewrittenEnd(found, runId, damaged, now, key, knownAt) : decodeTerminalRecord(endBytes!, key);
      // The ended parent's own settlement of its children stopped at these entries: they are rewritten with the policy each
      // child's run record keeps (else cancel), and a job settling the children as that settlement would have goes in the same
      // commit, so an owner killed after it leaves the job, one killed before it the damage. The commit compares the damaged
      // bytes: of two repairs at once, only one writes, and the other reads again and finds nothing damaged.
      const policies = new Map<string, ParentClosePolicy>();
      for (const c of found.childEntries) policies.set(c.key, await keptParentClose(core, c.childRunId));
      const cancelled = found.childEntries.flatMap((c) =>
        rec.status !== "succeeded" && policies.get(c.key) === "cancel" && RunId.isValid(c.childRunId) ? [c.childRunId] : [],
      );
      const out = planned(endDamaged ? "end_rewritten" : "records_rewritten", undefined, cancelled);
      if (dryRun) return out;
      // A child whose own records are damaged cannot be cancelled: refused here (naming its record), before anything is written.
      for (const child of cancelled) await core.view.records(child);
      const effects = new SettlementEffects();
      const expected: { key: string; value: Uint8Array | null }[] = [];
      if (endDamaged) {
        effects.kvPut(key, encodeTerminalRecord(rec));
        expected.push({ key, value: endBytes });
        if (knownAt !== undefined) {
          // The run now lists by its new status: its entry under the old one (whichever it was) goes.
          for (const s of ["succeeded", "cancelled"] as const) effects.kvDelete(runEndedKey(q, s, knownAt, runId));
          effects.kvPut(runEndedKey(q, "failed", knownAt, runId), EMPTY_VALUE);
        }
      }
      if (found.member?.damaged === true) {
        const m = found.member;
        effects.kvPut(m.key, encodeGroupMember(memberOfEnd(rec, m.memberKey, runId)));
        expected.push({ key: m.key, value: m.bytes });
      }
      for (const c of found.childEntries) {
        effects.kvPut(c.key, encodeChildEntry({ parentClose: policies.get(c.key)! }));
        expected.push({ key: c.key, value: c.bytes });
      }
      if (found.childEntries.length > 0) effects.enqueue(q, encodeValue(rec.status), childSettlementJob(runId, rec, now));
      const entry = mendedIndex(found, submittedAtMs, {});
      if (entry !== undefined) {
        effects.kvPut(found.indexKey!, entry);
        expected.push({ key: found.indexKey!, value: found.indexBytes });
      }
      if (await applyIfUnchanged(core, expected, mark === undefined ? effects : markEffects(mark, out, effects))) {
        // Settled now, so the answer's children are cancelled when it returns (the job finds them settled).
        if (found.childEntries.length > 0) await settleEndedParent(core, core.view, runId, rec.submission, rec.status);
        return out;
      }
    } else {
      const pointerKey = stepPointerKey(q, runId);
      const pointer: Partial<StepPointer> = salvagedPointer(fieldsOf(pointerBytes), pointerKey);
      const hasChildren = (await core.queue.kvScan(childrenPrefix(q, runId), { limit: 1 })).entries.length > 0;
      const run = salvagedRun(runId, rawRun, submittedAtMs, pointer.jobId ?? `repaired-${now}`, runKey(q, runId));
      const jobId = pointer.jobId;
      const job = jobId === undefined ? null : await core.queue.view().job(jobId);
      const out = planned("ended_failed", job === null ? undefined : jobId);
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
          // A damaged wait goes as a released one does.
          signalWait: job?.state === "scheduled" || found.wait?.damaged === true ? pointer.signalWait : undefined,
        },
        now,
        core.memos.prefix,
        job,
      );
      const effects = await terminalEffectsWithoutWorker(core, t);
      const entry = mendedIndex(found, submittedAtMs, run);
      if (entry !== undefined) effects.kvPut(found.indexKey!, entry);
      // The end's effects rewrite the member, drop the wait and the entry under the parent that the salvaged records name; these are the rest.
      if (found.wait?.damaged === true && t.signalWait === undefined) effects.kvDelete(found.wait.key);
      if (found.member?.damaged === true && t.group === undefined)
        effects.kvPut(
          found.member.key,
          encodeGroupMember(memberOfEnd({ ...t, status: "failed", terminatedAtMs: now, error: repairedError(damaged) }, found.member.memberKey, runId)),
        );
      if (found.asChild?.damaged === true && t.parent === undefined) effects.kvDelete(found.asChild.key);
      // Its children's entries read again, so the end's settlement of its children deals with each by its policy.
      for (const c of found.childEntries) effects.kvPut(c.key, encodeChildEntry({ parentClose: await keptParentClose(core, c.childRunId) }));
      const marked = mark === undefined ? effects : markEffects(mark, out, effects);
      let committed = false;
      if (job !== null && (job.state === "pending" || job.state === "scheduled")) {
        // The step job goes with the end, in one commit.
        committed = (await core.queue.cancelJob(jobId!, marked)) === "removed";
      }
      if (!committed) {
        committed = await applyIfUnchanged(
          core,
          [
            { key: runKey(q, runId), value: runBytes },
            { key: pointerKey, value: pointerBytes },
            // A damaged listing entry too: every damaged record the plan names holds the bytes it was made from.
            ...(entry === undefined ? [] : [{ key: found.indexKey!, value: found.indexBytes }]),
            ...[found.wait, found.member, found.asChild, ...found.childEntries].flatMap((b) => (b?.damaged === true ? [{ key: b.key, value: b.bytes }] : [])),
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

/**
 * The token of a plan: the run it is for, its action, the step job and
 * children it names, what a removal removes, and the bytes of each damaged
 * record it was made from (the bytes each repair's commit compares). A
 * removal's also holds the bytes of the run's run record and end record:
 * what it takes in words may read the same for another run, or for a run
 * submitted under the id after the one planned for was removed, whose
 * records are healthy and so named by no damage.
 */
function planToken(plan: Omit<RepairOutcome, "plan" | "dryRun" | "damaged">, found: Found): string {
  const kinds = new Set(found.damaged.map((d) => d.record));
  const parts: unknown[] = [plan.runId, plan.action, plan.stepJobId ?? null, plan.childrenCancelled ?? [], plan.removed ?? []];
  if (plan.action === "removed") parts.push("records", found.runBytes, found.endBytes);
  if (kinds.has("run_record")) parts.push("run", found.runBytes);
  if (kinds.has("step_pointer")) parts.push("pointer", found.pointerBytes);
  if (kinds.has("end_record")) parts.push("end", found.endBytes);
  if (kinds.has("index_entry")) parts.push(found.indexKey ?? null, found.indexBytes);
  for (const b of [found.wait, found.member, found.asChild, ...found.childEntries]) if (b?.damaged === true) parts.push(b.key, b.bytes);
  return sha256Hex(encodeValue(parts));
}

/**
 * Commits `effects` while every `expected` key holds the value read:
 * false, writing nothing, when one changed. An end's effects may enqueue
 * the terminal hook's notification, which a KV-only compare refuses: that
 * job then carries the commit, and a dedup hit on it (the same end
 * committed already) counts as a change.
 */
async function applyIfUnchanged(core: RuntimeCore, expected: readonly KvExpectation[], effects: SettlementEffects): Promise<boolean> {
  const [carrier, ...rest] = effects.enqueues;
  if (carrier === undefined) return core.queue.kvCompareAndApply(expected, effects);
  const others = new SettlementEffects();
  others.kvOps.push(...effects.kvOps);
  others.enqueues.push(...rest);
  const r = await core.queue.enqueueIfUnchanged(carrier.queueName, carrier.payload, carrier.opts ?? {}, others, expected);
  return r !== "raced" && r.outcome.newlyEnqueued;
}

/**
 * The job that settles the children of ended parent `runId` (as its end's
 * job does: `processParentEnded`), named by the repair's time so that the
 * end's own job, long done, does not hold its name.
 */
function childSettlementJob(runId: string, rec: TerminalRecord, now: number): { dedupKey: string; headers: Record<string, string> } {
  return {
    dedupKey: `run:${runId}:parent-ended:repaired-${now}`,
    headers: {
      [HEADER_PARENT_ENDED]: runId,
      ...(rec.submission === undefined ? {} : { [HEADER_PARENT_SUBMISSION]: rec.submission, [HEADER_PARENT_STATUS]: rec.status }),
    },
  };
}

/** A new end record of ended run `runId` saying failed, repaired, keeping what still reads of the old one. */
function rewrittenEnd(found: Found, runId: string, damaged: readonly RunDamage[], now: number, key: string, submittedAtMs: number | undefined): TerminalRecord {
  const raw = fieldsOf(found.endBytes);
  return salvaged(
    {
      runId,
      status: "failed",
      errorKind: "permanent",
      error: repairedError(damaged),
      finalStep: typeof raw["finalStep"] === "number" && Number.isSafeInteger(raw["finalStep"]) && raw["finalStep"] >= 0 ? raw["finalStep"] : 0,
      terminatedAtMs: isStoredTime(raw["terminatedAtMs"]) ? raw["terminatedAtMs"] : now,
      ...(submittedAtMs === undefined ? {} : { submittedAtMs }),
      incarnation: `repaired-${now}`,
      token: `repaired:${now}`,
      // The outcome is this record's, whatever result record the old one named.
      inline: { headers: {} },
    },
    raw,
    END_FIELDS,
    (b) => decodeTerminalRecord(b, key),
  );
}

/** The group member record `memberKey` of an ended run, told from its end record. */
function memberOfEnd(
  rec: Pick<TerminalRecord, "incarnation" | "status" | "terminatedAtMs" | "error" | "errorKind">,
  memberKey: string,
  runId: string,
): GroupMemberRecord {
  return {
    key: memberKey,
    runId,
    incarnation: rec.incarnation,
    state: rec.status,
    terminatedAtMs: rec.terminatedAtMs,
    ...(rec.error === undefined ? {} : { error: rec.error }),
    ...(rec.errorKind === undefined ? {} : { errorKind: rec.errorKind }),
  };
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
