/**
 * @module Memo retention: removes the memo entries, replay records,
 * terminal record and marker of every run whose retention marker expired.
 *
 * Markers are keyed by expiry time, so a pass reads the expired ones from
 * the start of the range and stops at the first unexpired marker. The
 * sweeper remembers the earliest expiry it knows of; a pass before then
 * reads nothing.
 */
import { fromUtf8 } from "./codec.js";
import { terminalRecordKey } from "./kv-keys.js";
import { decodeTerminalRecord } from "./records.js";
import type { RuntimeCore } from "./runtime-core.js";

/** Markers read per page. */
const PAGE = 256;

export class MemoSweeper {
  readonly #core: RuntimeCore;
  /** Earliest expiry of a marker not yet swept; `undefined` when unknown (read the index). */
  #nextDue: number | undefined;

  constructor(core: RuntimeCore) {
    this.#core = core;
  }

  /** A terminating commit wrote a marker expiring at `expiresAtMs`. */
  noteMarker(expiresAtMs: number): void {
    if (this.#nextDue !== undefined) this.#nextDue = Math.min(this.#nextDue, expiresAtMs);
  }

  /** One pass; returns how many runs it swept. */
  async sweep(): Promise<number> {
    const core = this.#core;
    const now = core.clock.now();
    if (this.#nextDue !== undefined && now < this.#nextDue) return 0;
    let swept = 0;
    for (;;) {
      const expired = await core.terminal.markers.scanExpired(core.queue, now, PAGE);
      for (const m of expired) {
        await core.memos.clearMemosForRun(m.suffix);
        // The terminal record goes only if it still describes the termination this marker
        // belongs to: a later run under the same id has its own record.
        const tk = terminalRecordKey(core.queueName, m.suffix);
        const t = await core.queue.kvGet(tk);
        if (t !== null && decodeTerminalRecord(t, tk).token === fromUtf8(m.value)) await core.queue.kvCompareAndDelete(tk, t);
        await core.queue.kvCompareAndDelete(m.key, m.value);
        swept++;
      }
      if (expired.length < PAGE) break;
    }
    const first = (await core.queue.kvScan(core.terminal.markers.prefix, { limit: 1 })).entries[0];
    const parsed = first === undefined ? undefined : core.terminal.markers.parse(first.key);
    this.#nextDue = parsed === undefined ? Number.POSITIVE_INFINITY : parsed.expiresAt;
    return swept;
  }
}

const sweepers = new WeakMap<object, Map<string, MemoSweeper>>();

/**
 * The sweeper of `core`'s queue, step queue and memo prefix, shared by
 * every runtime with all three, so a marker any of them writes lowers the
 * one "next due" hint.
 */
export function memoSweeperFor(core: RuntimeCore): MemoSweeper {
  let byPrefix = sweepers.get(core.queue);
  if (byPrefix === undefined) {
    byPrefix = new Map();
    sweepers.set(core.queue, byPrefix);
  }
  const id = `${core.queueName}/${core.memos.prefix}`;
  let s = byPrefix.get(id);
  if (s === undefined) {
    s = new MemoSweeper(core);
    byPrefix.set(id, s);
  }
  return s;
}
