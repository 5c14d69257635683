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
import { terminalRecordKey, TERMINALS_PREFIX } from "./kv-keys.js";
import { decodeTerminalRecord } from "./records.js";
import type { RuntimeCore } from "./runtime-core.js";
import { TERMINAL_MARKERS } from "./terminal.js";

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
      const expired = await TERMINAL_MARKERS.scanExpired(core.queue, now, PAGE);
      for (const m of expired) {
        await core.memos.clearMemosForRun(m.suffix);
        // The terminal record goes only if it still describes the termination this marker
        // belongs to: a later run under the same id has its own record.
        const tk = terminalRecordKey(m.suffix);
        const t = await core.queue.kvGet(tk);
        if (t !== null && decodeTerminalRecord(t, tk).token === fromUtf8(m.value)) await core.queue.kvCompareAndDelete(tk, t);
        await core.queue.kvCompareAndDelete(m.key, m.value);
        swept++;
      }
      if (expired.length < PAGE) break;
    }
    const first = (await core.queue.kvScan(TERMINALS_PREFIX, { limit: 1 })).entries[0];
    const parsed = first === undefined ? undefined : TERMINAL_MARKERS.parse(first.key);
    this.#nextDue = parsed === undefined ? Number.POSITIVE_INFINITY : parsed.expiresAt;
    return swept;
  }
}
