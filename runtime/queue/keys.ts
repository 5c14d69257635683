/**
 * @module The queue's keyspace inside its engine: pure key builders and
 * parsers.
 *
 * Layout (every internal key starts with one letter and '/'; queue names
 * and job ids never contain '/', so each prefix below is prefix-free):
 *
 * | key | value | what |
 * |---|---|---|
 * | `j/<id>` | job record | the one copy of a job, whatever its state |
 * | `p/<queue>/<priority:10>/<seq>` | id | pending, claim order: priority, then FIFO |
 * | `s/<runAt:16>/<queue>/<id>` | empty | scheduled, in global due order for the scheduler |
 * | `c/<queue>/<id>` | empty, or a done count | claimed; recovery on open requeues these. A job inserted claimed by an ack (`ackClaimingNext`) carries the queue's done jobs not yet in `n/` (queue-stats.ts) |
 * | `o/<queue>/<completedAt:16>/<id>` | empty | done (only with done retention) |
 * | `d/<queue>/<id>` | empty | dead letters |
 * | `r/<dueAt:16>/<id>` | empty | retention sweep order for done and dead records |
 * | `k/<queue>/<dedupKey>` | id | dedup keys, held while pending or scheduled |
 * | `b/<queue>/<debounceKey>` | id | debounce windows: the job a later enqueue with the key supersedes while its window is open |
 * | `v/<id>` | superseded mark | a job a debounced enqueue superseded: by which job, until when the mark is kept |
 * | `n/<queue>` | stats | per-queue counters; `done` plus what the queue's `c/` entries carry |
 * | `h/<id>` | attempt history | |
 * | `y/<ref>` | id | offloaded payload objects still referenced (the orphan sweep reads it) |
 * | `w/<queue>/q<key>`, `w/<queue>/r<JSON [rule, key]>` | rate window | a rate-limited key's recent claims and next allowed claim (rate-records.ts) |
 * | `l/<queue>` | rate limit | the queue's own rate limit, for readers (rate-records.ts) |
 * | `m/seq` | ULID | a bound at or above every `seq` handed out (seq-high-water.ts), so FIFO order survives a restart within one millisecond or a clock that went back |
 * | `u/<caller key>` | caller value | caller KV; callers cannot address anything else |
 *
 * Numbers are zero-padded decimals so that byte order is numeric order.
 * `seq` is a ULID taken at enqueue; it equals the id for generated ids and
 * keeps FIFO order for caller-chosen ids, which need not sort by time.
 */

import { ValidationError } from "../errors.js";
import { isStoredTime } from "../value-ranges.js";
import { describeValue } from "../option-values.js";
import { KeptStrings } from "./kept-strings.js";

/** Digits of a padded time: 2^53 has 16. */
export const TIME_WIDTH = 16;
const PRIORITY_WIDTH = 10; // 2^32 has 10 digits

/**
 * A time as 16 zero-padded digits. Anything but a finite number from 0 to
 * `Number.MAX_SAFE_INTEGER` (16 digits at most) throws: printed as text
 * ("NaN", "1e+30") it would sort before every real time. The APIs accept
 * less (see time-bounds.ts); this is the encoding's own limit.
 */
export function padTime(ms: number): string {
  // Most calls of one commit pad the same time (its `now`): the last answer is kept.
  if (ms === lastPadded) return lastPaddedText;
  if (!isStoredTime(ms)) {
    throw new ValidationError(`an index time must be a number of ms from 0 to ${Number.MAX_SAFE_INTEGER}, got ${describeValue(ms)}`);
  }
  const text = Math.floor(ms).toString().padStart(TIME_WIDTH, "0");
  lastPadded = ms;
  lastPaddedText = text;
  return text;
}

let lastPadded = Number.NaN;
let lastPaddedText = "";

export function padPriority(p: number): string {
  return p.toString().padStart(PRIORITY_WIDTH, "0");
}

export const JOB = "j/";
export const PENDING = "p/";
export const SCHEDULED = "s/";
export const CLAIMED = "c/";
export const DONE = "o/";
export const DEAD = "d/";
export const RETENTION = "r/";
export const DEDUP = "k/";
export const DEBOUNCE = "b/";
export const SUPERSEDED = "v/";
export const STATS = "n/";
export const HISTORY = "h/";
export const USER = "u/";
export const SEQ_HIGH_WATER = "m/seq";
export const PAYLOAD_REF = "y/";
export const payloadRefKey = (ref: string) => join2(PAYLOAD_REF, ref);

/*
 * Keys the engine keeps in its memtable until a freeze or a checkpoint (a
 * job's record and index entries) are joined into one flat string. A
 * template literal of 13 characters or more is a tree of concatenation
 * nodes (32 B each); the engine's first look at its characters flattens it
 * into a new string the top node then points to, so each such key lived as
 * the node and the flat copy, and both moved to the old generation with
 * the memtable entry. A key only looked up (a dedup key's miss) or kept
 * (the queue's counters) is joined too: the map compares it on every
 * level of its search, and a pair of strings is flattened through the
 * engine's runtime at the first comparison and read through its top node
 * at every later one (engine/flat-string.ts).
 *
 * The parts are joined from one array per count of parts, refilled per
 * key: an array literal per key cost about 64 B of the heap (the array and
 * its elements), two or three keys a step. `join` reads strings only, so
 * no key is built while another is being joined; the variable parts are
 * cleared after, so no key's parts stay held.
 */
const parts2 = ["", ""];
const parts4 = ["", "", "", ""];
const parts6 = ["", "", "", "", "", ""];

function join2(a: string, b: string): string {
  const p = parts2;
  p[0] = a;
  p[1] = b;
  const key = p.join("");
  p[1] = "";
  return key;
}

function join4(a: string, b: string, c: string, d: string): string {
  const p = parts4;
  p[0] = a;
  p[1] = b;
  p[2] = c;
  p[3] = d;
  const key = p.join("");
  p[1] = p[3] = "";
  return key;
}

function join6(a: string, b: string, c: string, d: string, e: string, f: string): string {
  const p = parts6;
  p[0] = a;
  p[1] = b;
  p[2] = c;
  p[3] = d;
  p[4] = e;
  p[5] = f;
  const key = p.join("");
  p[1] = p[3] = p[5] = "";
  return key;
}

export const jobKey = (id: string) => join2(JOB, id);
export const pendingPrefix = (queue: string) => `${PENDING}${queue}/`;
export const pendingKey = (queue: string, priority: number, seq: string) => join6(PENDING, queue, "/", padPriority(priority), "/", seq);
export const scheduledKey = (runAt: number, queue: string, id: string) => join6(SCHEDULED, padTime(runAt), "/", queue, "/", id);
export const claimedPrefix = (queue: string) => `${CLAIMED}${queue}/`;
export const claimedKey = (queue: string, id: string) => join4(CLAIMED, queue, "/", id);
/** The queue a claimed index key (`claimedKey`) belongs to: job ids hold no '/'. */
export const queueOfClaimedKey = (key: string) => key.slice(CLAIMED.length, key.lastIndexOf("/"));
export const donePrefix = (queue: string) => `${DONE}${queue}/`;
export const doneKey = (queue: string, completedAt: number, id: string) => join6(DONE, queue, "/", padTime(completedAt), "/", id);
export const deadPrefix = (queue: string) => `${DEAD}${queue}/`;
export const deadKey = (queue: string, id: string) => join4(DEAD, queue, "/", id);
export const retentionKey = (dueAt: number, id: string) => join4(RETENTION, padTime(dueAt), "/", id);
export const dedupKey = (queue: string, key: string) => join4(DEDUP, queue, "/", key);
export const debounceKey = (queue: string, key: string) => join4(DEBOUNCE, queue, "/", key);
export const supersededKey = (id: string) => join2(SUPERSEDED, id);
/**
 * `n/<queue>`: one string per queue, kept (every settlement reads and writes
 * it, and a key built afresh is flattened by the engine on its first
 * comparison). Bounded, since queue names come from callers. The last
 * queue's key is answered first, by a comparison of the name (most calls
 * name the queue of the call before), without hashing it for a look-up.
 */
export function statsKey(queue: string): string {
  if (queue === lastStatsQueue) return lastStatsKey;
  const key = statsKeys.get(queue) ?? statsKeys.keep(queue, join2(STATS, queue));
  lastStatsQueue = queue;
  lastStatsKey = key;
  return key;
}

/** At most 1,024 queues' keys held (two generations of 512). */
const statsKeys = new KeptStrings(512);
/** The queue `statsKey` was last asked for, and its key. */
let lastStatsQueue: string | undefined;
let lastStatsKey = "";
export const historyKey = (id: string) => join2(HISTORY, id);
export const userKey = (key: string) => join2(USER, key);

/** The last '/'-separated field of a key (ids are always last). */
export function lastField(key: string): string {
  return key.slice(key.lastIndexOf("/") + 1);
}

/** `s/<runAt>/<queue>/<id>` → its parts. */
export function parseScheduledKey(key: string): { runAt: number; queue: string; id: string } {
  const rest = key.slice(SCHEDULED.length);
  const a = rest.indexOf("/");
  const b = rest.lastIndexOf("/");
  return { runAt: Number(rest.slice(0, a)), queue: rest.slice(a + 1, b), id: rest.slice(b + 1) };
}

/** `r/<dueAt>/<id>` → its parts. */
export function parseRetentionKey(key: string): { dueAt: number; id: string } {
  const rest = key.slice(RETENTION.length);
  const a = rest.indexOf("/");
  return { dueAt: Number(rest.slice(0, a)), id: rest.slice(a + 1) };
}

/** The time field of a key whose time comes right after the tag (`s/`, `r/`). */
export function leadingTime(key: string): number {
  return Number(key.slice(2, 2 + TIME_WIDTH));
}
