/**
 * @module A queue's stats record counted again from its state indexes
 * (`Queue.recountStats`, `taquba queue recount`): the mend of a stats
 * record every move refuses (`StoreCorruptedError` naming `n/<queue>`),
 * and of counts that drifted from the jobs.
 *
 * Each job in a current state has one index entry (keys.ts): pending
 * (`p/<queue>/`), scheduled (`s/<runAt>/<queue>/`, in global due order, so
 * every scheduled entry is read), claimed (`c/<queue>/`) and dead
 * (`d/<queue>/`) are counted as they are. The done count is cumulative and
 * a done job leaves no entry unless done retention keeps one
 * (`o/<queue>/`); the record holds the done jobs its queue's claimed
 * entries do not carry (queue-stats.ts), so the recount keeps the
 * record's done count where it still reads as a whole number (also in a
 * record whose other counts are damaged), raised to the retained done jobs
 * less those the claimed entries carry when that is more; where it does
 * not read, it is that figure alone. A claimed entry that does not read
 * counts as carrying none (`readableCarriedDone`).
 *
 * `recountFrom` reads it all in one synchronous turn (the mend at open);
 * `Queue.recountStats` counts a snapshot's entries in slices and adds the
 * record's change since at its commit (`recountSince`,
 * stats-recount-turns.ts), so the owner is held only for the claimed
 * entries and the write. A plan (a dry run's token) names
 * the stored bytes and the counts, and a recount given one is refused
 * (`StatsPlanChangedError`, nothing written) when either changed since.
 * This is the one module that knows how the indexes add up to the stats:
 * a change of what the claimed entries carry changes `recountFrom`.
 */
import { createHash } from "node:crypto";
import { StoreCorruptedError, ValidationError } from "../errors.js";
import { describeValue, isOptionObject, optionFields, readExactOptions } from "../option-values.js";
import * as K from "./keys.js";
import { decodeCarriedDone, decodeStats, doneOfDamagedStats, encodeStats, type QueueStats } from "./record.js";
import type { ReadSource } from "./txn.js";

/** What `recountStats` found and did (or, for a dry run, would do). */
export interface StatsRecount {
  readonly queueName: string;
  /** What is wrong with the stored stats record; absent when it reads (or there is none). */
  readonly damage?: string;
  /** The counts the stored record holds, when it reads; absent when it is damaged or there is none. */
  readonly stored?: QueueStats;
  /**
   * The counts the recount writes to the stats record: pending, scheduled,
   * claimed and dead as the indexes hold them; done as the module says
   * (the record's own where it reads, at least the retained done jobs the
   * claimed entries do not carry).
   */
  readonly recounted: QueueStats;
  /** The done jobs the queue's claimed entries carry: reads of the stats add them to the record's done count. */
  readonly carriedDone: number;
  /** Whether the record differs from the recount (a recount that changes nothing writes nothing). */
  readonly changed: boolean;
  /** True when nothing was written because it was asked not to be (`dryRun`). */
  readonly dryRun: boolean;
  /**
   * A token of this plan: the stored record's bytes and the recounted
   * counts. Pass a dry run's as `RecountStatsOptions.plan` to have the
   * recount refused when the queue no longer gives the same plan.
   */
  readonly plan: string;
}

/** Options of `recountStats`. */
export interface RecountStatsOptions {
  /** Read and say what the recount would write, writing nothing. */
  readonly dryRun?: boolean;
  /**
   * The plan confirmed: a dry run's `StatsRecount.plan`. The recount is
   * refused (`StatsPlanChangedError`, nothing written) when the stored
   * record or the counts of the indexes are no longer those it was made
   * from (a job moved since).
   */
  readonly plan?: string;
}

/** A plan token: 64 lower-case hex digits. */
export const STATS_PLAN_TOKEN = /^[0-9a-f]{64}$/;

/** `recountStats`'s options, checked. */
export interface CheckedRecountOptions {
  readonly dryRun: boolean;
  readonly plan?: string;
}

const RECOUNT_FIELDS = optionFields<RecountStatsOptions>({ dryRun: true, plan: true });

/**
 * Checks `recountStats`'s options. `ValidationError` for anything else (also
 * in a client, before writing): a misspelt or mistyped dry run must never
 * write.
 */
export function checkRecountOptions(opts: unknown): CheckedRecountOptions {
  if (opts === undefined) return { dryRun: false };
  if (!isOptionObject(opts)) throw new ValidationError(`recountStats takes options { dryRun?: boolean, plan?: string }, got ${describeValue(opts)}`);
  const given = readExactOptions(opts, RECOUNT_FIELDS, "RecountStatsOptions");
  const { dryRun, plan } = given;
  if (dryRun !== undefined && typeof dryRun !== "boolean")
    throw new ValidationError(`recountStats's dryRun must be true or false, got ${describeValue(dryRun)}`);
  if (plan === undefined) return { dryRun: dryRun === true };
  if (typeof plan !== "string" || !STATS_PLAN_TOKEN.test(plan))
    throw new ValidationError(`recountStats's plan must be the plan token a dry run answered (64 hex digits), got ${describeValue(plan)}`);
  return { dryRun: dryRun === true, plan };
}

/** What the indexes and the stored record of `queue` give, before anything is written. */
export interface RecountRead {
  readonly recount: Omit<StatsRecount, "dryRun">;
  /** The bytes of the recounted record, to put when `changed`. */
  readonly bytes: Uint8Array;
}

/** The pending, scheduled, claimed, retained done and dead index entries of `queue`, counted. */
export function countIndexes(src: Pick<ReadSource, "scan">, queue: string): QueueStats {
  const infix = scheduledInfix(queue);
  let scheduled = 0;
  for (const [key] of src.scan({ prefix: K.SCHEDULED })) if (isScheduledOf(key, infix)) scheduled++;
  return {
    pending: countPrefix(src, K.pendingPrefix(queue)),
    scheduled,
    claimed: countPrefix(src, K.claimedPrefix(queue)),
    done: countPrefix(src, K.donePrefix(queue)),
    dead: countPrefix(src, K.deadPrefix(queue)),
  };
}

/** What follows the due time in a scheduled index key of `queue`. */
const scheduledInfix = (queue: string) => `/${queue}/`;

/** Whether the scheduled index key `key` is of the queue `infix` names: scheduled entries are ordered by due time across queues, the queue is the field after the time. */
const isScheduledOf = (key: string, infix: string) => key.startsWith(infix, K.SCHEDULED.length + K.TIME_WIDTH);

/** The stored stats of `queue` (read or damaged) and the recount from its indexes, in one synchronous read. */
export function recountFrom(src: Pick<ReadSource, "get" | "scan">, queue: string): RecountRead {
  const storedBytes = src.get(K.statsKey(queue));
  return answerOf(queue, storedBytes, countIndexes(src, queue), readableCarriedDone(src, queue));
}

/**
 * What a recount read at one moment (its snapshot), to be brought up to a
 * later one by `recountSince`: the stored record's bytes and the done jobs
 * the claimed entries carried then, and the entries of the other states
 * counted from a snapshot of the keys taken then.
 */
export interface SnapshotCount {
  readonly storedBytes: Uint8Array | undefined;
  readonly carried: number;
  readonly pending: number;
  readonly scheduled: number;
  readonly dead: number;
  /** Retained done entries (`o/<queue>/`). */
  readonly done: number;
}

/** The keys a recount counts from a snapshot: its bounds, and whether a key in them is the queue's. */
export interface KeysSource {
  keys(opts: { prefix: string }): Iterable<string>;
}

/**
 * Counts the pending, scheduled, dead and retained done entries of `queue`
 * in `keys` (a snapshot), yielding after every `slice` entries read so the
 * caller can let other work run between slices; returns the counts.
 */
export function* countSnapshotSlices(keys: KeysSource, queue: string, slice: number): Generator<void, Omit<SnapshotCount, "storedBytes" | "carried">> {
  let read = 0;
  const counts = { pending: 0, scheduled: 0, dead: 0, done: 0 };
  const own: [keyof typeof counts, string][] = [
    ["pending", K.pendingPrefix(queue)],
    ["dead", K.deadPrefix(queue)],
    ["done", K.donePrefix(queue)],
  ];
  for (const [field, prefix] of own) {
    for (const _ of keys.keys({ prefix })) {
      counts[field]++;
      if (++read % slice === 0) yield;
    }
  }
  const infix = scheduledInfix(queue);
  for (const key of keys.keys({ prefix: K.SCHEDULED })) {
    if (isScheduledOf(key, infix)) counts.scheduled++;
    if (++read % slice === 0) yield;
  }
  return counts;
}

/**
 * The recount of `queue` now, from `base` (counted at an earlier moment)
 * and what every move since did to the stats record, in one synchronous
 * read: undefined when that cannot be told (the record was damaged at one
 * moment and not the same bytes at the other: only a recount or the mend
 * at open writes such a record), and the caller counts it all now.
 *
 * Every move writes the record by exactly what it changes of the indexes
 * (txn.ts: the record is only written as the stored counts plus the
 * transaction's moves), and a damaged record refuses every move, so the
 * pending, scheduled and dead entries now are those counted then plus the
 * record's change since. Claimed entries (and the done jobs they carry)
 * are counted now: they are as many as the jobs in flight. The done count
 * is the record's where it is at least every retained done job that could
 * be there now (those counted then, plus the done jobs counted since, less
 * those the claimed entries carry); else the retained entries are counted
 * now too.
 */
export function recountSince(src: Pick<ReadSource, "get" | "scan">, queue: string, base: SnapshotCount): RecountRead | undefined {
  const key = K.statsKey(queue);
  const storedBytes = src.get(key);
  let claimed = 0;
  let carried = 0;
  for (const [k, v] of src.scan({ prefix: K.claimedPrefix(queue) })) {
    claimed++;
    carried += readableDoneOf(k, v);
  }
  let moved: QueueStats = ZERO;
  if (!sameBytes(storedBytes, base.storedBytes)) {
    const before = statsOrDamaged(key, base.storedBytes);
    const now = statsOrDamaged(key, storedBytes);
    if (before === undefined || now === undefined) return undefined;
    moved = {
      pending: now.pending - before.pending,
      scheduled: now.scheduled - before.scheduled,
      claimed: 0,
      done: now.done - before.done,
      dead: now.dead - before.dead,
    };
  }
  const kept = keptDone(key, storedBytes);
  const doneSince = moved.done + carried - base.carried;
  const retainedAtMost = base.done + Math.max(0, doneSince) - carried;
  const retainedDone = kept !== undefined && kept >= retainedAtMost ? 0 : countPrefix(src, K.donePrefix(queue));
  const indexed: QueueStats = {
    pending: base.pending + moved.pending,
    scheduled: base.scheduled + moved.scheduled,
    claimed,
    // Read only when the record's done count may be below the retained jobs: else the record's count stands.
    done: retainedDone,
    dead: base.dead + moved.dead,
  };
  return answerOf(queue, storedBytes, indexed, carried);
}

function countPrefix(src: Pick<ReadSource, "scan">, prefix: string): number {
  let n = 0;
  for (const _ of src.scan({ prefix })) n++;
  return n;
}

/** The decoded record (empty counts for none), or undefined where it does not read. */
function statsOrDamaged(key: string, bytes: Uint8Array | undefined): QueueStats | undefined {
  try {
    return decodeStats(key, bytes);
  } catch (err) {
    if (!(err instanceof StoreCorruptedError)) throw err;
    return undefined;
  }
}

/** The record's done count where it still reads as a whole number (also in a damaged record). */
function keptDone(key: string, bytes: Uint8Array | undefined): number | undefined {
  if (bytes === undefined) return undefined;
  return statsOrDamaged(key, bytes)?.done ?? doneOfDamagedStats(key, bytes);
}

const sameBytes = (a: Uint8Array | undefined, b: Uint8Array | undefined) =>
  a === undefined || b === undefined ? a === b : a.length === b.length && Buffer.compare(a, b) === 0;

/** The answer and bytes of a recount: the stored record as it reads, and `indexed` (done: the retained entries) with the kept done count. */
function answerOf(queue: string, storedBytes: Uint8Array | undefined, indexed: QueueStats, carried: number): RecountRead {
  const key = K.statsKey(queue);
  let stored: QueueStats | undefined;
  let damage: string | undefined;
  try {
    stored = storedBytes === undefined ? undefined : decodeStats(key, storedBytes);
  } catch (err) {
    if (!(err instanceof StoreCorruptedError)) throw err;
    damage = err.detail;
  }
  // The record's done count where it reads: no index holds the done jobs retention did not keep.
  const retained = Math.max(0, indexed.done - carried);
  const kept = stored?.done ?? (storedBytes === undefined ? undefined : doneOfDamagedStats(key, storedBytes));
  const recounted: QueueStats = { ...indexed, done: kept === undefined ? retained : Math.max(kept, retained) };
  const bytes = encodeStats(recounted);
  // No record and no job: nothing to write (a recount makes no record for a queue that has none).
  const changed = storedBytes === undefined ? !sameCounts(recounted, ZERO) : stored === undefined || !sameCounts(stored, recounted);
  const plan = planToken(queue, storedBytes, recounted);
  return {
    recount: {
      queueName: queue,
      ...(damage === undefined ? {} : { damage }),
      ...(stored === undefined ? {} : { stored }),
      recounted,
      carriedDone: carried,
      changed,
      plan,
    },
    bytes,
  };
}

/**
 * The done jobs `queue`'s claimed entries carry, an entry that does not
 * read counting none: a claim taken from pending carries none, so neither
 * its settlement nor the recovery at open reads its entry, and one such
 * damaged entry failed the mend at open and so every open of the store.
 * Counting none never lowers the done count the recount writes.
 */
export function readableCarriedDone(src: Pick<ReadSource, "scan">, queue: string): number {
  let done = 0;
  for (const [key, value] of src.scan({ prefix: K.claimedPrefix(queue) })) done += readableDoneOf(key, value);
  return done;
}

/** The done jobs one claimed entry carries, none where it does not read (see `readableCarriedDone`). */
function readableDoneOf(key: string, value: Uint8Array): number {
  try {
    return decodeCarriedDone(key, value);
  } catch (err) {
    if (!(err instanceof StoreCorruptedError)) throw err;
    return 0;
  }
}

const ZERO: QueueStats = { pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 0 };

const sameCounts = (a: QueueStats, b: QueueStats) =>
  a.pending === b.pending && a.scheduled === b.scheduled && a.claimed === b.claimed && a.done === b.done && a.dead === b.dead;

/** The token of a plan: the queue, the stored record's bytes (or none) and the counts written. */
function planToken(queue: string, stored: Uint8Array | undefined, recounted: QueueStats): string {
  const h = createHash("sha256");
  h.update(`stats-recount\0${queue}\0`);
  h.update(stored === undefined ? "absent" : `stored:${Buffer.from(stored).toString("hex")}`);
  const { pending, scheduled, claimed, done, dead } = recounted;
  h.update(`\0${pending},${scheduled},${claimed},${done},${dead}`);
  return h.digest("hex");
}
