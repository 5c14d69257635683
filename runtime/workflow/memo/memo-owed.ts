/**
 * @module The memo clear a removal still owes. A removal clears the removed
 * run's memo once more after its last commit (a step of the run still
 * running may have written after the first clear, told by the end record
 * then standing that the run keeps it). A process killed between that
 * commit and that clear would leave those entries with no run to clear them
 * again, so the commit also writes `workflow/memo-owed/{q}/{runId}`, naming
 * the memo set; the clear after it deletes the record, and the next worker
 * start finishes any record left (`finishOwedMemoClears`).
 */
import { StoreCorruptedError } from "../../errors.js";
import type { SettlementEffects } from "../../queue/effects.js";
import { decodeValue, encodeValue } from "../records/codec.js";
import { MEMO_OWED_PREFIX, runKey, terminalRecordKey } from "../records/kv-keys.js";
import { decodeRunRecord, decodeTerminalRecord } from "../records/records.js";
import { RunId } from "../runs/run-id.js";
import type { RuntimeCore } from "../runtime-core.js";

/** What a removal owes: the removed run's memo prefix and set (absent for a run of a version without sets). */
export interface MemoOwed {
  readonly memoPrefix: string;
  readonly memoSet?: string;
}

/** Records read per page when finishing. */
const PAGE = 256;

/** The record of the memo clear owed for run `runId` of step queue `q`. */
export const memoOwedKey = (q: string, runId: string): string => `${MEMO_OWED_PREFIX}${q}/${runId}`;

/** Stages the record that the clear `owed` of run `runId` is owed; returns its bytes (the clear deletes the record while it holds them). */
export function stageMemoOwed(core: RuntimeCore, runId: string, owed: MemoOwed, effects: SettlementEffects): Uint8Array {
  const bytes = encodeValue(owed.memoSet === undefined ? { memoPrefix: owed.memoPrefix } : { memoPrefix: owed.memoPrefix, memoSet: owed.memoSet });
  effects.kvPut(memoOwedKey(core.queueName, runId), bytes);
  return bytes;
}

function decodeMemoOwed(bytes: Uint8Array, key: string): MemoOwed {
  let v: unknown;
  try {
    v = decodeValue(bytes);
  } catch {
    v = undefined;
  }
  const m = v as Partial<MemoOwed> | null | undefined;
  if (m === null || typeof m !== "object" || typeof m.memoPrefix !== "string") throw new StoreCorruptedError(key, "owed memo clear lacks its memo prefix");
  // Read own: a `memoSet` on Object.prototype must not name a set to clear.
  const memoSet = Object.hasOwn(m, "memoSet") ? m.memoSet : undefined;
  if (memoSet !== undefined && typeof memoSet !== "string") throw new StoreCorruptedError(key, "owed memo clear has a malformed memo set");
  return memoSet === undefined ? { memoPrefix: m.memoPrefix } : { memoPrefix: m.memoPrefix, memoSet };
}

/**
 * Clears what record `bytes` says is owed for run `runId`, then deletes the
 * record (while it still holds `bytes`). In turn with submissions of the id:
 * with no run or end record holding the id, everything under it goes; a run
 * submitted under it since keeps its own memo set, and the removed run's
 * entries go (no run comes back to them): its set, or with no set named
 * (a run of a version before memo sets) the entries outside every set.
 */
export async function payMemoOwed(core: RuntimeCore, runId: string, bytes: Uint8Array): Promise<void> {
  const q = core.queueName;
  const key = memoOwedKey(q, runId);
  const owed = decodeMemoOwed(bytes, key);
  await core.submitLock.run(runId, async () => {
    const memos = core.memos.withPrefix(owed.memoPrefix);
    const rk = runKey(q, runId);
    const tk = terminalRecordKey(q, runId);
    const run = await core.queue.kvGet(rk);
    const end = run === null ? await core.queue.kvGet(tk) : null;
    if (run === null && end === null) await memos.clearMemosForRun(runId);
    else if (owed.memoSet === undefined) {
      // Left, a run submitted since as an earlier version does (no set either) would read them as its own. Its own
      // entries there go too, as they cannot be told apart: a memo is a cache, so it computes them again. Its result
      // record, which that version wrote there, stays.
      await memos.clearUnsetMemos(runId, end === null ? undefined : decodeTerminalRecord(end, tk).token);
    } else {
      // The run under the id now is another submission (its set is its submission): the removed run's set goes.
      const now = run !== null ? decodeRunRecord(run, rk).memoSet : decodeTerminalRecord(end!, tk).submission;
      if (now !== owed.memoSet) await memos.clearMemoSet(runId, owed.memoSet);
    }
    await core.queue.kvCompareAndDelete(key, bytes);
  });
}

/**
 * Pays every memo clear a removal left owed (its process killed between its
 * last commit and its last clear), a page at a time; `signal` stops it
 * between runs. A record naming no run id, or one that does not read, is
 * logged and left.
 */
export async function finishOwedMemoClears(core: RuntimeCore, signal: AbortSignal): Promise<number> {
  const prefix = `${MEMO_OWED_PREFIX}${core.queueName}/`;
  let paid = 0;
  for (let after: string | undefined; ; ) {
    const page = await core.queue.kvScan(prefix, { limit: PAGE, ...(after === undefined ? {} : { after }) });
    for (const e of page.entries) {
      if (signal.aborted) return paid;
      const runId = e.key.slice(prefix.length);
      try {
        if (!RunId.isValid(runId)) throw new StoreCorruptedError(e.key, "owed memo clear names no run id");
        await payMemoOwed(core, runId, e.value);
        paid++;
      } catch (err) {
        if (!(err instanceof StoreCorruptedError)) throw err;
        core.log.error({ runId, err }, `the memo clear owed for removed run "${runId}" was skipped: ${err.message}; its memo entries may remain`);
      }
    }
    if (page.nextCursor === undefined) return paid;
    after = page.nextCursor;
  }
}
