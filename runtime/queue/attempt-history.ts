/**
 * @module The bound on a job's attempt history (`h/<id>`): each claim's end
 * adds an entry, and a job requeued from the dead letters again and again
 * (or given a high attempt limit) would add them for ever, each a few KiB
 * with its error and stack, all decoded and written again at every failed
 * attempt. The history keeps the last {@link JOB_ATTEMPT_HISTORY_LIMIT}
 * entries; the oldest entry kept says how many before it were dropped
 * (`earlierDropped`), so the count survives every later trim.
 *
 * The stored form stays a list of entries: a history written before the
 * bound (longer, no count) reads as it is and is trimmed at its next entry,
 * and an earlier version reads a trimmed one as a list whose first entry
 * has a field it does not know.
 */
import type { JobAttempt } from "./record.js";

/** The most entries a job's attempt history keeps: the latest ones. */
export const JOB_ATTEMPT_HISTORY_LIMIT = 32;

/**
 * `list` (oldest first, an entry just added last) cut to its last
 * {@link JOB_ATTEMPT_HISTORY_LIMIT} entries, the first of them counting
 * every entry dropped so far; `list` itself when within the bound.
 */
export function boundedHistory(list: readonly JobAttempt[]): readonly JobAttempt[] {
  const cut = list.length - JOB_ATTEMPT_HISTORY_LIMIT;
  const first: unknown = list[0];
  if (cut <= 0) return hasDamagedCount(first) ? [withoutCount(first), ...list.slice(1)] : list;
  // Only the first entry carries a count; a count on a later one (a damaged record) is not added.
  // Held at the greatest exact integer: past it the next trim would take the count as damaged and start again from 0.
  const count = Math.min(countOf(first) + cut, Number.MAX_SAFE_INTEGER);
  const kept = list.slice(cut);
  kept[0] = { ...kept[0]!, earlierDropped: count };
  return kept;
}

/**
 * `list` (as stored) as a reader is given it. An entry that is no attempt
 * (not an object; its attempt not a whole number from 0, its time not a
 * finite number, its outcome not text) is left out, and so is an optional
 * field of another kind than its own (a time that is no finite number, an
 * error that is no text). The count of dropped entries is kept only on
 * the first entry and only when it is one ({@link droppedBefore} reads it
 * so), as the next write keeps it: one that is none (text, NaN, below 1,
 * fractional, past 2^53 - 1), or one on a later entry, which no count is
 * read from, is left out. `list` itself when nothing is left out.
 */
export function readableHistory(list: readonly unknown[]): JobAttempt[] {
  let out: JobAttempt[] | undefined;
  for (let i = 0; i < list.length; i++) {
    const entry = list[i];
    const readable = readableEntry(entry, i === 0);
    if (readable === entry && out === undefined) continue;
    out ??= list.slice(0, i) as JobAttempt[];
    if (readable !== undefined) out.push(readable);
  }
  return out ?? (list as JobAttempt[]);
}

/** `entry` as a reader is given it (itself when whole), or undefined when it is no attempt. */
function readableEntry(entry: unknown, first: boolean): JobAttempt | undefined {
  if (entry === null || typeof entry !== "object" || Array.isArray(entry)) return undefined;
  const a = entry as Record<string, unknown>;
  if (!(Number.isSafeInteger(a.attempt) && (a.attempt as number) >= 0) || !isFiniteNumber(a.recordedAt) || typeof a.outcome !== "string") return undefined;
  // Checked without allocating: every read of a retried step's history goes through here.
  let kept: Record<string, unknown> | undefined;
  for (const [name, holds] of OPTIONAL_FIELDS) {
    const v = a[name];
    if (v === undefined || holds(v) || !Object.hasOwn(a, name)) continue;
    kept ??= { ...a };
    delete kept[name];
  }
  if (a.earlierDropped !== undefined && (!first || countOf(a) === 0)) {
    kept ??= { ...a };
    delete kept.earlierDropped;
  }
  return (kept ?? entry) as JobAttempt;
}

const isFiniteNumber = (v: unknown): boolean => typeof v === "number" && Number.isFinite(v);
const isText = (v: unknown): boolean => typeof v === "string";

/** The optional fields of an entry other than its count, each with what it holds. */
const OPTIONAL_FIELDS: ReadonlyArray<readonly [string, (v: unknown) => boolean]> = [
  ["claimedAt", isFiniteNumber],
  ["error", isText],
  ["errorName", isText],
  ["errorStack", isText],
];

/** How many entries before `first` (the oldest kept) the history dropped. */
export function droppedBefore(list: readonly JobAttempt[]): number {
  return list.length === 0 ? 0 : countOf(list[0]);
}

function countOf(first: unknown): number {
  // A store's bytes: the entry may be no object at all (null, a number), and the count anything.
  if (first === null || typeof first !== "object") return 0;
  const n = (first as JobAttempt).earlierDropped;
  // Anything but a count is taken as none rather than carried into the next trim.
  return typeof n === "number" && Number.isSafeInteger(n) && n > 0 ? n : 0;
}

/** Whether `first` is an entry holding a count that is none (text, NaN, below 1): written again without it. */
function hasDamagedCount(first: unknown): first is JobAttempt {
  return first !== null && typeof first === "object" && Object.hasOwn(first, "earlierDropped") && countOf(first) === 0;
}

function withoutCount(first: JobAttempt): JobAttempt {
  const { earlierDropped: _damaged, ...rest } = first;
  return rest;
}
