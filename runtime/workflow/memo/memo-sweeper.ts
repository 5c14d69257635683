/**
 * @module Memo retention: removes the memo entries, replay records,
 * terminal record and marker of every run whose retention marker expired.
 *
 * Markers are keyed by expiry time, so a pass reads the expired ones from
 * the start of the range and stops at the first unexpired marker. The
 * sweeper remembers the earliest expiry it knows of; a pass before then
 * reads nothing.
 *
 * A sweep must not hold up other work: it clears {@link RUNS_AT_ONCE} runs
 * at a time (each with bounded concurrent deletes), one pass at a time per
 * sweeper (a second caller joins the pass in progress), and it stops
 * between runs when its worker shuts down, so a shutdown waits for at most
 * the runs being cleared, not for a whole backlog.
 *
 * A child run is kept while its parent is known (active, or ended and not
 * yet swept): a parent re-opened by `retryRun` starts its children again and
 * must find each ended one there, with its recorded end, instead of running
 * it a second time. Its marker is moved one retention window on, and the
 * child goes at the first pass after its parent went. A later run under the
 * parent's id (submitted again after the end) never reads the child, so it
 * does not keep it.
 *
 * The marker of a run whose id was submitted again after it ended is stale
 * (the run under the id is another), but the memo set of the ended run is
 * removed with it: no later run reads that set, and without this a run id
 * submitted again and again would keep every earlier run's entries.
 *
 * A damaged marker (or the damaged terminal record it points at) does not
 * stop the sweep: it is reported once (logged with its run id, counted in
 * `taquba.retention.unreadable`), left in place with the run's memo, and
 * the pass goes on past it.
 */
import { decodeMarkerValue, type MarkerValue } from "../runs/terminal.js";
import { runKey, terminalRecordKey } from "../records/kv-keys.js";
import { decodeRunRecord, decodeTerminalRecord, type TerminalRecord } from "../records/records.js";
import { decodeIndexEntry, runIndexKey } from "../runs/run-index.js";
import { RunId } from "../runs/run-id.js";
import type { RuntimeCore } from "../runtime-core.js";
import { forEachBounded } from "../bounded.js";
import { SettlementEffects } from "../../queue/effects.js";
import { stageForgotten } from "../runs/index-effects.js";
import { StoreCorruptedError } from "../../errors.js";
import type { ExpiryEntry } from "../../queue/expiry-index.js";
import { instruments } from "../../telemetry/metrics.js";

/** Markers read per page. */
const PAGE = 256;
/** Runs cleared at once by a pass. */
export const RUNS_AT_ONCE = 4;
/** How far a child's marker moves while its parent is known, for a runtime that has no retention window of its own. */
const CHILD_RECHECK_MS = 3_600_000;
/** Damaged markers remembered as reported, so each is logged once per sweeper (beyond this, again). */
const REPORTED_MAX = 1024;

/** What one sweep pass did with the expired retention markers it read. */
export interface MemoSweepCounts {
  /** Runs whose memo entries and records the pass cleared (with their markers). */
  swept: number;
  /**
   * Markers of an earlier end of a run that was re-opened (or submitted again) since: removed, the run
   * and its memo kept, but for the memo set of an ended run whose id was submitted again since.
   */
  stale: number;
  /** Markers of child runs whose parent is still known, moved one retention window on. */
  deferred: number;
}

/** One runtime's memo-retention sweeper (see the module comment). */
export class MemoSweeper {
  readonly #core: RuntimeCore;
  /** Earliest expiry of a marker not yet swept; `undefined` when unknown (read the index). */
  #nextDue: number | undefined;
  /** The pass in progress, which a concurrent caller joins. */
  #running: Promise<MemoSweepCounts> | undefined;
  /** Whether the pass in progress reads the markers whatever the note says (see `sweepAll`). */
  #runningReadsAll = false;
  /** Keys of damaged markers already reported. */
  readonly #reported = new Set<string>();
  #unreadable = 0;

  constructor(core: RuntimeCore) {
    this.#core = core;
  }

  /** Damaged retention markers (or terminal records) this sweeper met and skipped, each counted once. */
  get unreadable(): number {
    return this.#unreadable;
  }

  /** A terminating commit wrote a marker expiring at `expiresAtMs`. */
  noteMarker(expiresAtMs: number): void {
    if (this.#nextDue !== undefined) this.#nextDue = Math.min(this.#nextDue, expiresAtMs);
  }

  /**
   * One pass; returns how many runs it swept (their memo and records
   * cleared). When `signal` aborts, the pass stops after the runs being
   * cleared; the rest waits for the next pass.
   */
  async sweep(signal?: AbortSignal): Promise<number> {
    return (await this.sweepCounts(signal)).swept;
  }

  /** {@link MemoSweeper.sweep}, with what the pass did with each expired marker (see {@link MemoSweepCounts}). */
  sweepCounts(signal?: AbortSignal): Promise<MemoSweepCounts> {
    return this.#running ?? this.#start(signal, false);
  }

  /**
   * A pass that reads the markers whatever earliest expiry was noted: it
   * sweeps every run whose end committed before the call and whose
   * retention ran out. A terminating settlement notes its marker when its
   * call returns, which a `wait` on the run can beat by some turns, so a
   * caller's sweep after that `wait` would otherwise find a note from
   * before the end and read nothing. It joins a pass of its kind in
   * progress; a pass on the poll interval in progress (those keep to the
   * note: they come again) it waits for, counting what that pass swept.
   */
  async sweepAll(): Promise<number> {
    let swept = 0;
    while (this.#running !== undefined && !this.#runningReadsAll) swept += (await this.#running.catch(() => undefined))?.swept ?? 0;
    return swept + (await (this.#running ?? this.#start(undefined, true))).swept;
  }

  #start(signal: AbortSignal | undefined, readAll: boolean): Promise<MemoSweepCounts> {
    const pass = this.#pass(signal, readAll).finally(() => {
      this.#running = undefined;
    });
    this.#running = pass;
    this.#runningReadsAll = readAll;
    return pass;
  }

  async #pass(signal: AbortSignal | undefined, readAll: boolean): Promise<MemoSweepCounts> {
    const core = this.#core;
    const stopped = (): boolean => signal?.aborted === true;
    const now = core.clock.now();
    const counts = { swept: 0, stale: 0, deferred: 0 };
    if (!readAll && this.#nextDue !== undefined && now < this.#nextDue) return counts;
    // Past the damaged markers skipped so far in this pass (the swept ones are deleted).
    let after: string | undefined;
    for (;;) {
      if (stopped()) return counts;
      const expired = await this.#expired(now, after);
      const skipped: string[] = [];
      await forEachBounded(expired, RUNS_AT_ONCE, async (m) => {
        if (stopped()) return;
        try {
          counts[await this.#sweepRun(m, now)]++;
        } catch (e) {
          if (!(e instanceof StoreCorruptedError)) throw e;
          skipped.push(m.key);
          this.#report(m, e);
        }
      });
      if (stopped()) return counts;
      if (expired.length < PAGE) break;
      if (skipped.length > 0) after = skipped.sort().at(-1);
    }
    const { entries } = await core.queue.kvScan(core.terminal.markers.prefix, { limit: 1 });
    // By the length: an empty list's [0] is whatever a prototype holds there.
    const parsed = entries.length === 0 ? undefined : core.terminal.markers.parse(entries[0]!.key);
    this.#nextDue = parsed === undefined ? Number.POSITIVE_INFINITY : parsed.expiresAt;
    return counts;
  }

  /** Up to a page of expired markers, after `after` when given. */
  async #expired(now: number, after: string | undefined): Promise<ExpiryEntry[]> {
    const markers = this.#core.terminal.markers;
    if (after === undefined) return markers.scanExpired(this.#core.queue, now, PAGE);
    const page = await this.#core.queue.kvScan(markers.prefix, { after, limit: PAGE });
    const out: ExpiryEntry[] = [];
    for (const { key, value } of page.entries) {
      const p = markers.parse(key);
      if (p === undefined) continue;
      if (p.expiresAt > now) break;
      out.push({ key, expiresAt: p.expiresAt, suffix: p.suffix, value });
    }
    return out;
  }

  /**
   * Clears the run of the expired marker `m` and removes the marker
   * (`swept`), moves the marker on for a child whose parent is known
   * (`deferred`), or removes a marker whose run was re-opened since
   * (`stale`: nothing of the run is cleared). `StoreCorruptedError` when
   * either record is damaged.
   */
  async #sweepRun(m: ExpiryEntry, now: number): Promise<keyof MemoSweepCounts> {
    const core = this.#core;
    // A key naming no run (say "a/0") would point the clearing into another run's folder.
    if (!RunId.isValid(m.suffix)) throw new StoreCorruptedError(m.key, "retention record names no run id");
    const marker = decodeMarkerValue(m.value, m.key);
    // Taking turns with submissions and redrives of the run: a run re-opened under this id
    // keeps its memo, so the memo goes only while the terminal record is still the
    // termination this marker belongs to (or is gone: a pass that stopped half way).
    const done = await core.submitLock.run(m.suffix, async (): Promise<keyof MemoSweepCounts> => {
      const tk = terminalRecordKey(core.queueName, m.suffix);
      const t = await core.queue.kvGet(tk);
      const terminal = t === null ? null : decodeTerminalRecord(t, tk);
      const rb = t === null ? await core.queue.kvGet(runKey(core.queueName, m.suffix)) : null;
      if ((terminal !== null && !endsAlike(terminal, marker)) || rb !== null) {
        await this.#clearReplacedSet(m.suffix, marker, terminal, rb);
        return "stale";
      }
      if (t !== null && terminal !== null && (await this.#parentKnown(terminal))) {
        // Moved in one commit with the terminal record unchanged, so a re-opening in between wins.
        const effects = core.terminal.markers.add(
          new SettlementEffects().kvDelete(m.key),
          now + (core.terminal.memoRetentionMs ?? CHILD_RECHECK_MS),
          m.suffix,
          m.value,
        );
        await core.queue.kvCompareAndApply(
          [
            { key: tk, value: t },
            { key: m.key, value: m.value },
          ],
          effects,
        );
        return "deferred";
      }
      await core.memos.withPrefix(marker.memoPrefix).clearMemosForRun(m.suffix);
      if (t !== null && terminal !== null) {
        // With its index entries and history, in one commit: a listing never shows a half-swept run.
        const effects = new SettlementEffects().kvDelete(tk);
        await stageForgotten(core.queue, core.queueName, terminal, effects);
        await core.queue.kvCompareAndApply([{ key: tk, value: t }], effects);
      }
      return "swept";
    });
    if (done !== "deferred") await core.queue.kvCompareAndDelete(m.key, m.value);
    return done;
  }

  /**
   * Removes the memo set of the ended run a stale marker belongs to, when the
   * run under its id now (`terminal` ended, or `run` active) is of another
   * set: a later submission, which a set it replaced never comes back to. A
   * redrive keeps the set (the entries stay); a run whose set cannot be
   * read keeps it too, until the run under the id is swept.
   */
  async #clearReplacedSet(runId: string, marker: MarkerValue, terminal: TerminalRecord | null, run: Uint8Array | null): Promise<void> {
    if (marker.memoSet === undefined) return;
    const q = this.#core.queueName;
    let now: string | undefined;
    try {
      if (run !== null) now = decodeRunRecord(run, runKey(q, runId)).memoSet;
      else if (terminal?.submittedAtMs !== undefined) {
        const key = runIndexKey(q, terminal.submittedAtMs, runId);
        const bytes = await this.#core.queue.kvGet(key);
        now = bytes === null ? undefined : decodeIndexEntry(bytes, key).memoSet;
      }
    } catch {
      // A damaged record names no set: nothing is cleared (its own reader reports it).
      return;
    }
    if (now === undefined || now === marker.memoSet) return;
    await this.#core.memos.withPrefix(marker.memoPrefix).clearMemoSet(runId, marker.memoSet);
  }

  /** Whether the run that ended as `terminal` is a child whose parent still has records (see the module comment). */
  async #parentKnown(terminal: TerminalRecord): Promise<boolean> {
    const q = this.#core.queueName;
    if (terminal.submittedAtMs === undefined) return false;
    const key = runIndexKey(q, terminal.submittedAtMs, terminal.runId);
    const bytes = await this.#core.queue.kvGet(key);
    if (bytes === null) return false;
    let ref: { runId: string; submission?: string } | undefined;
    try {
      ref = decodeIndexEntry(bytes, key).parent;
    } catch {
      // A damaged entry names no parent: the run is swept as any other (its removal drops the entry).
      return false;
    }
    if (ref === undefined) return false;
    const rk = runKey(q, ref.runId);
    const tk = terminalRecordKey(q, ref.runId);
    const run = await this.#core.queue.kvGet(rk);
    const ended = run === null ? await this.#core.queue.kvGet(tk) : null;
    if (run === null && ended === null) return false;
    let parent: { submittedAtMs?: number | undefined; submission?: string | undefined };
    try {
      parent = run !== null ? decodeRunRecord(run, rk) : decodeTerminalRecord(ended!, tk);
    } catch {
      // The parent's record is damaged (its own reader reports it): the child is kept with it.
      return true;
    }
    // Is the run under the parent's id now the one that started the child? A child names it when
    // both were written by this version; else a child submitted before that run was is an earlier run's.
    if (ref.submission !== undefined && parent.submission !== undefined) return ref.submission === parent.submission;
    return parent.submittedAtMs === undefined || terminal.submittedAtMs >= parent.submittedAtMs;
  }

  /** Logs and counts a damaged marker once. */
  #report(m: ExpiryEntry, e: StoreCorruptedError): void {
    if (this.#reported.has(m.key)) return;
    if (this.#reported.size >= REPORTED_MAX) this.#reported.clear();
    this.#reported.add(m.key);
    this.#unreadable++;
    instruments()?.retentionUnreadable.add(1, { "taquba.queue": this.#core.queueName });
    this.#core.log.error(
      { runId: m.suffix, err: e },
      `memo retention skipped run "${m.suffix}": its retention record is damaged (${e.message}), so its memo entries and records are kept; ` +
        "the sweep goes on with the other runs. Inspect the run (inspectRun), and clear its memo with memoStore.clearMemosForRun if it is no longer needed",
    );
  }
}

const sweepers = new WeakMap<object, Map<string, MemoSweeper>>();

/**
 * The sweeper of `core`'s queue and step queue, shared by every runtime
 * with both, so a marker any of them writes lowers the one "next due" hint.
 * Each marker names the memo prefix of its run, so one sweeper clears runs
 * of any prefix (in the runtime's object store).
 */
export function memoSweeperFor(core: RuntimeCore): MemoSweeper {
  let byPrefix = sweepers.get(core.queue);
  if (byPrefix === undefined) {
    byPrefix = new Map();
    sweepers.set(core.queue, byPrefix);
  }
  const id = core.queueName;
  let s = byPrefix.get(id);
  if (s === undefined) {
    s = new MemoSweeper(core);
    byPrefix.set(id, s);
  }
  return s;
}

/**
 * Whether the terminal record `t` is the end the retention marker `m` was
 * written with: the same token, and the same incarnation when the marker
 * holds one (a later run under the id may repeat the token, see `MarkerValue`).
 */
function endsAlike(t: TerminalRecord, m: MarkerValue): boolean {
  return t.token === m.token && (m.incarnation === undefined || m.incarnation === t.incarnation);
}
