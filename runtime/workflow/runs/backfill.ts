/**
 * @module Run index backfill: runs submitted before the store kept a run
 * index have no index entries, so `listRuns` did not show them. A worker
 * adds their entries once, at start, in the background: a page of runs at
 * a time, each in its own small commit, stopping between pages when the
 * worker shuts down (the next start goes on). A marker records that the
 * step queue was backfilled, so later starts read one key.
 *
 * - An active run (a run record) gets the entries its submission would
 *   have written, without its input (its step 0 may be gone).
 * - An ended run whose terminal record lacks a submission time (all of
 *   them, before the index) is listed at its end time, which its terminal
 *   record now also records as its submission time, with its ended entry.
 *   Its input and headers were not kept: it cannot be redriven.
 */
import { SettlementEffects } from "../../queue/effects.js";
import { StoreCorruptedError } from "../../errors.js";
import { OUTCOMES_PREFIX, RUNS_PREFIX } from "../records/kv-keys.js";
import { RESERVED_KV_PREFIX } from "../records/reserved.js";
import { decodeRunRecord, decodeTerminalRecord, encodeTerminalRecord } from "../records/records.js";
import type { RuntimeCore } from "../runtime-core.js";
import { stageEnded, stageSubmission } from "./index-effects.js";
import { encodeIndexEntry, runIndexKey } from "./run-index.js";

/** Runs read per page. */
const PAGE = 128;

const doneKey = (q: string): string => `${RESERVED_KV_PREFIX}run-index-backfilled/${q}`;

/** What one backfill did: runs given entries, and records skipped as damaged. */
export interface BackfillCount {
  indexed: number;
  damaged: number;
}

/** Backfills the run index of `core`'s step queue (see the module comment); stops between pages when `signal` aborts. */
export async function backfillRunIndex(core: RuntimeCore, signal: AbortSignal): Promise<BackfillCount> {
  const q = core.queueName;
  const count: BackfillCount = { indexed: 0, damaged: 0 };
  if ((await core.queue.kvGet(doneKey(q))) !== null) return count;
  const damaged = (key: string, e: unknown): void => {
    if (!(e instanceof StoreCorruptedError)) throw e;
    count.damaged++;
    core.log.error({ err: e, runId: key.slice(key.lastIndexOf("/") + 1) }, "run index backfill skipped a damaged run record; the run is not listed");
  };
  for (const prefix of [`${RUNS_PREFIX}${q}/`, `${OUTCOMES_PREFIX}${q}/`]) {
    let after: string | undefined;
    for (;;) {
      if (signal.aborted) return count;
      const page = await core.queue.kvScan(prefix, after === undefined ? { limit: PAGE } : { after, limit: PAGE });
      for (const { key, value } of page.entries) {
        try {
          if (await backfillOne(core, prefix.startsWith(RUNS_PREFIX) ? "active" : "ended", key, value)) count.indexed++;
        } catch (e) {
          damaged(key, e);
        }
      }
      if (page.nextCursor === undefined) break;
      after = page.nextCursor;
    }
  }
  await core.queue.kvPut(doneKey(q), new Uint8Array([1]));
  if (count.indexed > 0 || count.damaged > 0) core.log.info({ queue: q, ...count }, "run index backfilled with the runs submitted before it existed");
  return count;
}

/** Adds the index entries of one run when it has none; `true` when it did. Takes turns with submissions and redrives of the run. */
async function backfillOne(core: RuntimeCore, kind: "active" | "ended", key: string, value: Uint8Array): Promise<boolean> {
  const q = core.queueName;
  if (kind === "active") {
    const run = decodeRunRecord(value, key);
    return core.submitLock.run(run.runId, async () => {
      if ((await core.queue.kvGet(runIndexKey(q, run.submittedAtMs, run.runId))) !== null) return false;
      const effects = new SettlementEffects();
      // No input: step 0's payload may be gone, and a listing shows the run without it.
      stageSubmission(q, run, undefined, undefined, effects);
      return core.queue.kvCompareAndApply([{ key, value }], effects);
    });
  }
  const t = decodeTerminalRecord(value, key);
  if (t.submittedAtMs !== undefined) return false;
  return core.submitLock.run(t.runId, async () => {
    const at = t.terminatedAtMs;
    const effects = new SettlementEffects();
    effects.kvPut(key, encodeTerminalRecord({ ...t, submittedAtMs: at }));
    effects.kvPut(runIndexKey(q, at, t.runId), encodeIndexEntry({ submittedAtMs: at, headers: {} }));
    stageEnded(q, t.runId, at, t.status, effects);
    return core.queue.kvCompareAndApply([{ key, value }], effects);
  });
}
