/**
 * @module The engine's options: what `Engine.open` and `Engine.commit` take,
 * the counters it reports, and the check and defaults applied once at open.
 */
import { MAX_TIMEOUT_MS, SystemClock, timedClock, type Clock, type TimedClock } from "../clock.js";
import { ValidationError } from "../errors.js";
import { callGuarded, checkKnownFields, describeValue, errorText, isOptionArray, isOptionObject, optionFields, readFields } from "../option-values.js";
import { MAX_STORE_ATTEMPTS } from "../store/request-retry.js";
import { KeyHeads, keyHeadsProblems, readKeyHeads } from "./key-heads.js";
import { WAL_FENCE_JUMP, checkPrefix } from "./layout.js";
import type { RetryPolicy } from "./retry.js";
import { MAX_WAL_COHORTS } from "./wal-cohorts.js";

/** `walCohorts` when not given (bench/RESULTS.md, "Cohorts at 50 in flight"). */
const DEFAULT_WAL_COHORTS = 1;
/** The bounds of `memtableKeys` (when not given, the engine chooses: memtable-size.ts). */
export const MIN_MEMTABLE_KEYS = 1_024;
export const MAX_MEMTABLE_KEYS = 4_194_304;

/** Options of `Engine.open`; every field is optional. */
export interface EngineOptions {
  /**
   * How long a commit may wait for others to share its WAL object (at most
   * 2^31 - 1, a timer's longest wait). Against a store whose puts take 4 ms
   * or more, while many commits wait in flight, a small object may gather
   * longer: up to a quarter of the measured put latency (at most 50 ms), so
   * that objects hold two release groups or more. Default: 2 ms.
   */
  flushIntervalMs?: number;
  /** Most bytes per WAL object before it is flushed early (at most 1 GiB). Default: 4 MiB. */
  maxWalBytes?: number;
  /**
   * Most WAL puts in flight at once: at most 63, one less than the WAL
   * sequence numbers a new writer skips when it fences the old one (a
   * fenced writer's late puts must land in that gap). Default: 16.
   */
  maxInflightWalPuts?: number;
  /**
   * How many cohorts the commits of writers released together are split
   * into. 1: the open WAL object is sealed at the end of the turn, so
   * writers that share an object keep moving together (a cycle is their CPU,
   * then the put, one after the other). 2 or more: while fewer than
   * `walCohorts - 1` WAL puts are on their way, the open object is sealed as
   * soon as it holds that share of the last wave (at least 16 commits), so
   * its put runs while the rest of the wave still works; it pays off when
   * the put runs beside the main thread on a spare core (a local disk's put
   * thread), and costs a put per cohort where CPU is short. A whole number
   * from 1 to 16. Default: 1.
   */
  walCohorts?: number;
  /** Key prefix of every object the engine writes: "" or ending in "/". Default: "". */
  prefix?: string;
  /**
   * Keys the writer keeps in its memtable (an ordered map holding each
   * key's string) before it freezes them into a compact key run (about 10 B
   * per key). A write to a key that lives in a run first finds it there, so
   * a working set of keys rewritten over and over that outgrows the memtable
   * pays a run search per write, and its runs churn. When not given, the
   * engine chooses at each freeze between 32,768 and 262,144 keys: it grows
   * them eightfold while the writes kill entries of the runs recent freezes made (a
   * rewritten working set), and halves them while they do not (keys written
   * once, as a queue's); see docs/engine.md, "A memtable that sizes itself". Given,
   * the memtable always freezes at this many. Either way it also freezes
   * when its entries hold about 64 MiB. Nothing stored depends on it. A
   * whole number from 1,024 to 4,194,304. Default: chosen by the engine.
   */
  memtableKeys?: number;
  /** Checkpoint automatically after this many WAL objects; 0 disables. Default: 1000. */
  checkpointWalObjects?: number;
  /** Checkpoint automatically after this many WAL bytes (counted with every key whole, however few the objects store); 0 disables. Default: 64 MiB. */
  checkpointWalBytes?: number;
  /**
   * How far the WAL may run ahead of checkpoints, as a multiple of
   * `checkpointWalBytes` and `checkpointWalObjects`: once the WAL stored
   * since the last checkpoint reaches this many times either of them,
   * commits are acknowledged only when the running checkpoint has
   * published (and paged out what it stored) with it back under; the
   * deletes of what it replaced are not waited for (each commit is applied
   * and stored at once as usual; only its promise waits). This bounds the memory of values not yet
   * checkpointed and the WAL a reopen replays when writers outrun
   * checkpoints. A checkpoint that fails releases the commits waiting for
   * it, and while automatic checkpoints pause after a failure commits are
   * not held: a failing checkpoint never blocks commits. 0 disables;
   * otherwise at least 1. Default: 2.
   */
  checkpointBacklog?: number;
  /**
   * Most segment runs a manifest may list: checkpoints add one run of the
   * keys changed since the previous checkpoint; when the runs reach this
   * number, the next checkpoint rewrites the whole state as one run (a
   * compaction), or with `foldRunsByTier` folds the newest runs into its
   * own. 1 makes every checkpoint a full one. Default: 8.
   */
  maxSegmentRuns?: number;
  /**
   * At `maxSegmentRuns` runs, fold the newest runs of similar size into the
   * checkpoint's own run instead of compacting; compact only when the newer
   * runs together outgrow the oldest or the entries the runs list are three
   * times the live keys (docs/engine.md, "Compaction by tiers"). A checkpoint then
   * writes a fraction of the state when most of it did not change, at the
   * cost of a fold holding the incremental checkpoint slot while it runs
   * (the WAL not yet checkpointed, and memory, grow meanwhile). Default: false.
   */
  foldRunsByTier?: boolean;
  /**
   * Largest segment a checkpoint writes before starting another. A segment
   * is finished and handed to the store in one synchronous step, so this
   * also bounds the longest pause a checkpoint causes. At most 1 GiB (the
   * buffer is allocated whole). Default: 4 MiB.
   */
  maxSegmentBytes?: number;
  /** Target size of a segment block (at most 1 GiB). Default: 64 KiB. */
  segmentBlockBytes?: number;
  /** Retries of transient store failures. */
  retry?: RetryPolicy;
  /**
   * Lets checkpointed values leave memory: see `PageValuesOptions`.
   * Default: off (every value stays in memory).
   */
  pageValues?: PageValuesOptions;
  /**
   * Key prefixes the caller uses heavily, each given a tree of its own in
   * the memtable's ordered map, so a search for one of its keys descends
   * that family's keys instead of every key sharing its first character
   * (see docs/engine.md, "The memtable"). In memory only: an engine opened
   * with other prefixes, or none, over the same store reads the same. At
   * most 32 distinct ASCII strings of 1 to 256 characters, in any order.
   * Default: none.
   */
  keyHeads?: readonly string[];
  /**
   * Called with errors of background work (automatic checkpoints). Default: `console.warn`.
   * A handler that throws, or returns a promise that rejects, is warned about with the error it was given.
   */
  onBackgroundError?: (err: unknown) => void;
  /**
   * Reads the time for the pause of automatic checkpoints after one failed
   * (1 s, doubling up to 60 s). Default: the system clock. The flush window
   * and store retries always use real timers.
   */
  clock?: Clock;
}

/**
 * Which values the writer may drop from memory once a checkpoint stored
 * them, and how much memory reads of them may use. Keys always stay in
 * memory. A paged value is read synchronously only after `Engine.warm`
 * loaded it (see the engine's module documentation).
 */
export interface PageValuesOptions {
  /** Only values of keys starting with one of these prefixes. */
  keyPrefixes: readonly string[];
  /** Only values of at least this many bytes. Default: 64. */
  minBytes?: number;
  /** Budget of the cache of decoded segment blocks that paged reads go through. Default: 32 MiB. */
  cacheBytes?: number;
  /**
   * Most bytes one store read fetches when cache misses walk a segment in
   * key order (an ordered drain): the missed block and the blocks after it.
   * Capped at a quarter of `cacheBytes`; 0 reads one block per miss.
   * Default: 1 MiB.
   */
  readaheadBytes?: number;
}

/** Options of `Engine.commit`. */
export interface CommitOptions {
  /**
   * `false`: the caller does not wait for durability (the promise still
   * settles). Use only for writes that are safe to lose in a crash because
   * redoing them is idempotent (claims, sweeps, recovery requeues).
   */
  durable?: boolean;
}

/** Counters for benchmarks and operators. */
export interface EngineStats {
  /** This writer's epoch. */
  epoch: number;
  /** WAL objects sealed since open; each is one put. */
  walPuts: number;
  /** Bytes of those WAL objects, counted with every key whole as the checkpoint trigger counts them (the store holds fewer where keys share bytes). */
  walBytes: number;
  /** Non-empty commits those WAL objects carry. */
  walBatches: number;
  /** Every WAL object up to this sequence number is stored. */
  durableSeq: number;
  /** Checkpoints completed since open. */
  checkpoints: number;
  /** Those checkpoints that rewrote the whole state (compactions); the others were incremental. */
  compactions: number;
  /** Incremental checkpoints cut while a compaction was writing, published (before or after it; see docs/engine.md). */
  checkpointsBesideCompaction: number;
  /** Of those, the ones that folded the newest runs beside the compaction into their own (the runs beside it reached `maxSegmentRuns`). */
  runsFoldedBesideCompaction: number;
  /** Checkpoints cut with no compaction running that met `maxSegmentRuns` runs and folded the newest of them into their own instead of compacting (docs/engine.md, "Compaction by tiers"). */
  runsFoldedByTier: number;
  /** Segment runs the current manifest lists (1 after a compaction, plus one per incremental checkpoint). */
  segmentRuns: number;
  /** Bytes of segments those checkpoints wrote. */
  checkpointBytes: number;
  /** Number of the newest manifest this writer published. */
  manifestId: number;
  /** Paged-value reads served by the block cache (0 without `pageValues`). */
  cacheHits: number;
  /** Segment blocks a warm-up had to fetch because they were not cached. */
  cacheMisses: number;
  /** Bytes the block cache is charged now. */
  cacheBytes: number;
  /**
   * Store reads made to read paged values: block ranges (a read-ahead
   * fetches several blocks in one), segment indexes, and whole segments
   * for compactions.
   */
  segmentFetches: number;
  /** WAL objects written since the last checkpoint (the ones a reopen would replay). */
  walObjectsSinceCheckpoint: number;
  /** Bytes of those WAL objects; commits are acknowledged late once it reaches `checkpointBacklog` times `checkpointWalBytes`. */
  walBytesSinceCheckpoint: number;
  /** Commits whose acknowledgement waited for a checkpoint (see `checkpointBacklog`). */
  backlogWaits: number;
  /** Immutable key runs the in-memory state is layered in now (besides its memtable; see docs/engine.md, "Stage 2b"). */
  keyRuns: number;
  /** Times the memtable froze into a new key run since open. */
  memtableFreezes: number;
  /** Keys at which the memtable freezes now: `memtableKeys`, or the size the engine chose last. */
  memtableKeys: number;
  /** Times since open the engine grew and halved the memtable's keys (none when `memtableKeys` is given). */
  memtableGrows: number;
  memtableShrinks: number;
  /** Key-run merges started since open: of two runs or more, and rewrites of one run that was mostly dead. */
  runMerges: number;
  /** Writes that had to finish merges synchronously because runs piled up past their bound. */
  runCatchUps: number;
  /** Entries those merges wrote (each a copy of a live key, and its value or page reference). */
  mergedEntries: number;
  /**
   * Grows of the memtable since open that took its young key runs back into
   * it (a rewritten working set; see docs/engine.md, "A grown memtable takes
   * its young runs back").
   */
  takeBacks: number;
  /** Run entries those take-backs moved into the memtable. */
  takenBack: number;
  /** Merges in progress dropped because a take-back emptied every run they were merging. */
  takeBackDroppedMerges: number;
}

/** `EngineOptions` checked, with every default filled in; made once at open. */
export interface ResolvedEngineOptions {
  flushIntervalMs: number;
  maxWalBytes: number;
  maxInflightWalPuts: number;
  walCohorts: number;
  prefix: string;
  /** Undefined: the engine chooses. */
  memtableKeys: number | undefined;
  checkpointWalObjects: number;
  checkpointWalBytes: number;
  checkpointBacklog: number;
  maxSegmentRuns: number;
  foldRunsByTier: boolean;
  maxSegmentBytes: number;
  segmentBlockBytes: number;
  retry: RetryPolicy;
  pageValues: { keyPrefixes: readonly string[]; minBytes: number; cacheBytes: number; readaheadBytes: number } | undefined;
  keyHeads: KeyHeads;
  onBackgroundError: (err: unknown) => void;
  clock: TimedClock;
}

/**
 * Checks `opts` and fills in the defaults documented on `EngineOptions`.
 * Throws `ValidationError` listing every bad value, before any IO.
 */
export function resolveEngineOptions(given: EngineOptions): ResolvedEngineOptions {
  const opts = validateEngineOptions(given);
  return {
    flushIntervalMs: opts.flushIntervalMs ?? 2,
    maxWalBytes: opts.maxWalBytes ?? 4 * 1024 * 1024,
    maxInflightWalPuts: opts.maxInflightWalPuts ?? 16,
    walCohorts: opts.walCohorts ?? DEFAULT_WAL_COHORTS,
    prefix: checkPrefix(opts.prefix ?? ""),
    memtableKeys: opts.memtableKeys,
    checkpointWalObjects: opts.checkpointWalObjects ?? 1000,
    checkpointWalBytes: opts.checkpointWalBytes ?? 64 * 1024 * 1024,
    checkpointBacklog: opts.checkpointBacklog ?? 2,
    maxSegmentRuns: opts.maxSegmentRuns ?? 8,
    foldRunsByTier: opts.foldRunsByTier ?? false,
    maxSegmentBytes: opts.maxSegmentBytes ?? 4 * 1024 * 1024,
    segmentBlockBytes: opts.segmentBlockBytes ?? 64 * 1024,
    retry: opts.retry ?? {},
    pageValues:
      opts.pageValues === undefined
        ? undefined
        : {
            keyPrefixes: opts.pageValues.keyPrefixes,
            minBytes: opts.pageValues.minBytes ?? 64,
            cacheBytes: opts.pageValues.cacheBytes ?? 32 * 1024 * 1024,
            readaheadBytes: opts.pageValues.readaheadBytes ?? 1024 * 1024,
          },
    keyHeads: KeyHeads.of(opts.keyHeads ?? []),
    onBackgroundError: opts.onBackgroundError === undefined ? warnBackgroundError : guardedHandler(opts.onBackgroundError),
    clock: opts.clock === undefined ? SystemClock : timedClock(opts.clock),
  };
}

/**
 * Largest piece the engine builds in memory at once: a WAL object, a
 * segment (allocated whole when a checkpoint starts) or a block of one.
 */
const MAX_PIECE_BYTES = 2 ** 30;

/** Most `pageValues.keyPrefixes`: each value committed is checked against them. */
export const MAX_PAGE_KEY_PREFIXES = 1024;

const TOP_KEYS = optionFields<EngineOptions>({
  flushIntervalMs: true,
  maxWalBytes: true,
  maxInflightWalPuts: true,
  walCohorts: true,
  prefix: true,
  memtableKeys: true,
  checkpointWalObjects: true,
  checkpointWalBytes: true,
  checkpointBacklog: true,
  maxSegmentRuns: true,
  foldRunsByTier: true,
  maxSegmentBytes: true,
  segmentBlockBytes: true,
  retry: true,
  pageValues: true,
  keyHeads: true,
  onBackgroundError: true,
  clock: true,
});
const RETRY_KEYS = optionFields<RetryPolicy>({ attempts: true, baseDelayMs: true, maxDelayMs: true });
const PAGE_KEYS = optionFields<PageValuesOptions>({ keyPrefixes: true, minBytes: true, cacheBytes: true, readaheadBytes: true });

function warnBackgroundError(err: unknown): void {
  warnOf("taquba engine: background work failed:", err);
}

/** `console.warn` of `value`, or of its text when inspecting it throws (an inspect hook or a stack getter that throws). */
function warnOf(what: string, value: unknown): void {
  try {
    console.warn(what, value);
  } catch {
    console.warn(what, errorText(value));
  }
}

/**
 * The caller's `onBackgroundError`, made safe to call from background work:
 * a throw, or an async handler's rejection (left unhandled, it would end
 * the process), is warned about with the error it was given, never thrown
 * into the engine.
 */
function guardedHandler(handler: (err: unknown) => void): (err: unknown) => void {
  const failed = (err: unknown, own: unknown) => {
    warnBackgroundError(err);
    warnOf("taquba engine: onBackgroundError failed on it:", own);
  };
  return (err) =>
    callGuarded(
      () => handler(err),
      (own) => failed(err, own),
    );
}

/** The fields of `opts` the engine uses, each read once, as plain objects and arrays of their own. */
function snapshot(opts: unknown, problems: string[]): EngineOptions {
  if (opts === undefined) return {};
  if (!isOptionObject(opts)) {
    problems.push(`the engine options must be an object, got ${describeValue(opts)}`);
    return {};
  }
  // A misspelt option is refused rather than left to its default.
  checkKnownFields(opts, TOP_KEYS, "", problems);
  const top = readFields(opts, TOP_KEYS, "", problems) as Record<string, unknown>;
  const retry = top.retry;
  if (isOptionObject(retry)) {
    checkKnownFields(retry, RETRY_KEYS, "retry.", problems);
    top.retry = readFields(retry, RETRY_KEYS, "retry.", problems);
  }
  const pv = top.pageValues;
  if (isOptionObject(pv)) {
    checkKnownFields(pv, PAGE_KEYS, "pageValues.", problems);
    const fields = readFields(pv, PAGE_KEYS, "pageValues.", problems);
    const prefixes = fields.keyPrefixes;
    if (isOptionArray(prefixes)) {
      try {
        // The length first: a sparse array (or a Proxy) can claim billions of entries.
        const n = prefixes.length;
        // Refused below, and never walked.
        fields.keyPrefixes = [];
        if (!(n <= MAX_PAGE_KEY_PREFIXES)) problems.push(`pageValues.keyPrefixes may hold at most ${MAX_PAGE_KEY_PREFIXES} prefixes, got ${describeValue(n)}`);
        else fields.keyPrefixes = Array.from({ length: n }, (_, i) => prefixes[i] as unknown);
      } catch (err) {
        problems.push(`reading pageValues.keyPrefixes threw: ${errorText(err)}`);
      }
    }
    top.pageValues = fields;
  }
  const heads = top.keyHeads;
  if (isOptionArray(heads)) {
    // Read as `Engine.declareKeyHeads` reads its list: the length first, each entry once.
    const read = readKeyHeads(heads, "keyHeads");
    top.keyHeads = read.list;
    if (read.problem !== undefined) problems.push(read.problem);
  }
  return top as EngineOptions;
}

/**
 * Rejects option values that would make the engine misbehave: throws
 * `ValidationError` listing every bad value. Pure, so a caller that does IO
 * before opening the engine (the queue) checks them first. Returns the
 * options read once (see `readFields`): use these, not `given`, so a getter
 * answering differently on a second read cannot slip past the check.
 */
export function validateEngineOptions(given: EngineOptions, what = "engine options"): EngineOptions {
  const problems: string[] = [];
  const opts = snapshot(given, problems);
  // Past MAX_SAFE_INTEGER counts and sums are inexact; a size or interval that large is a mistake.
  const check = (name: keyof EngineOptions, min: number, max = Number.MAX_SAFE_INTEGER) => checkNumber(name, opts[name], min, max, problems);
  // Sizes and counts are whole: half a byte or half a WAL object has no meaning, and a fraction would only be truncated somewhere.
  const checkWhole = (name: keyof EngineOptions, min: number, max = Number.MAX_SAFE_INTEGER) => checkWholeNumber(name, opts[name], min, max, problems);
  const prefix = opts.prefix;
  if (prefix !== undefined) {
    try {
      checkPrefix(prefix);
    } catch (err) {
      problems.push(errorText(err));
    }
  }
  // A longer timeout fires after 1 ms instead.
  check("flushIntervalMs", 0, MAX_TIMEOUT_MS);
  checkWhole("maxWalBytes", 1, MAX_PIECE_BYTES);
  // A fenced writer's late puts must land in the range the next writer skips (layout.ts).
  checkWhole("maxInflightWalPuts", 1, WAL_FENCE_JUMP - 1);
  checkWhole("walCohorts", 1, MAX_WAL_COHORTS);
  checkWhole("memtableKeys", MIN_MEMTABLE_KEYS, MAX_MEMTABLE_KEYS);
  checkWhole("checkpointWalObjects", 0);
  checkWhole("checkpointWalBytes", 0);
  const backlog = opts.checkpointBacklog;
  // Below 1, commits would wait before a checkpoint is due, and none would start.
  if (
    backlog !== undefined &&
    (typeof backlog !== "number" || !Number.isFinite(backlog) || (backlog !== 0 && !(backlog >= 1)) || backlog > Number.MAX_SAFE_INTEGER)
  ) {
    problems.push(`checkpointBacklog must be 0 (off) or a finite number >= 1 and <= ${Number.MAX_SAFE_INTEGER}, got ${describeValue(backlog)}`);
  }
  const clock = opts.clock;
  if (clock !== undefined) {
    // A clock that reads no time would fail later, in the background: refuse it now.
    try {
      if (typeof clock !== "object" || clock === null || typeof clock.now !== "function") problems.push("clock must be an object with a now() method");
      else timedClock(clock).now();
    } catch (err) {
      problems.push(`clock: ${errorText(err)}`);
    }
  }
  checkWhole("maxSegmentRuns", 1);
  if (opts.foldRunsByTier !== undefined && typeof opts.foldRunsByTier !== "boolean") {
    problems.push(`foldRunsByTier must be true or false, got ${describeValue(opts.foldRunsByTier)}`);
  }
  checkWhole("maxSegmentBytes", 1, MAX_PIECE_BYTES);
  checkWhole("segmentBlockBytes", 1, MAX_PIECE_BYTES);
  const onError = opts.onBackgroundError;
  if (onError !== undefined && typeof onError !== "function") problems.push("onBackgroundError must be a function");
  const pv = opts.pageValues;
  if (pv !== undefined) {
    // Read once into a plain object by `snapshot` when it is an object at all (a revoked Proxy is not).
    const fields = isOptionObject(pv) ? pv : undefined;
    if (fields === undefined || !isOptionArray(fields.keyPrefixes) || !fields.keyPrefixes.every((p) => typeof p === "string")) {
      problems.push("pageValues.keyPrefixes must be an array of strings");
    }
    if (fields !== undefined)
      checkCounts(
        "pageValues.",
        fields,
        [
          ["minBytes", 0],
          ["cacheBytes", 0],
          ["readaheadBytes", 0],
        ],
        problems,
        true,
      );
  }
  const heads = opts.keyHeads;
  if (heads !== undefined) {
    if (!isOptionArray(heads)) problems.push(`keyHeads must be an array of key prefixes (strings), got ${describeValue(heads)}`);
    else problems.push(...keyHeadsProblems(heads, "keyHeads"));
  }
  const r = opts.retry;
  if (r !== undefined && !isOptionObject(r)) problems.push(`retry must be an object { attempts?, baseDelayMs?, maxDelayMs? }, got ${describeValue(r)}`);
  else if (r !== undefined) {
    // Bounded as the stores' own request retries are: with a zero delay a huge count retries a down store about every millisecond for ever.
    checkWholeNumber("retry.attempts", (r as Record<string, unknown>).attempts, 1, MAX_STORE_ATTEMPTS, problems);
    checkCounts(
      "retry.",
      r,
      [
        ["baseDelayMs", 0],
        ["maxDelayMs", 0],
      ],
      problems,
    );
  }
  if (problems.length > 0) throw new ValidationError(`invalid ${what}; nothing was read or written`, problems);
  return opts;
}

/** Adds a problem naming `path` unless `v` is absent or a finite number in `min..max`. */
function checkNumber(path: string, v: unknown, min: number, max: number, problems: string[]): void {
  if (v !== undefined && (typeof v !== "number" || !Number.isFinite(v) || v < min || v > max))
    problems.push(`${path} must be a finite number >= ${min} and <= ${max}, got ${describeValue(v)}`);
}

/** Adds a problem naming `path` unless `v` is absent or an integer in `min..max` (-0 counts as 0). */
function checkWholeNumber(path: string, v: unknown, min: number, max: number, problems: string[]): void {
  if (v !== undefined && (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max))
    problems.push(`${path} must be a whole number >= ${min} and <= ${max}, got ${describeValue(v)}`);
}

/** `checkNumber` (or `checkWholeNumber`, when `whole`) for each of `fields` of `from`, each from its minimum to `MAX_SAFE_INTEGER`. */
function checkCounts(path: string, from: object, fields: readonly (readonly [string, number])[], problems: string[], whole = false): void {
  const check = whole ? checkWholeNumber : checkNumber;
  for (const [k, min] of fields) check(`${path}${k}`, (from as Record<string, unknown>)[k], min, Number.MAX_SAFE_INTEGER, problems);
}
