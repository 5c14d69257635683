/**
 * @module The last part of removing a run (`taquba runs repair --remove`):
 * an ended run whose records read goes, as the memo retention sweep would
 * take it, but now.
 *
 * Its children are settled first as its end settles them (the job its end
 * enqueued may not have run yet), then its memo entries and result are
 * cleared, then one commit removes its end record, listing entries,
 * history and redrives, while the end record is still the one read and no
 * run was submitted under its id since; then its memo is cleared once more
 * (a step still running writes after the first clear: see `memoOwnerOf`). Each step before that commit is
 * harmless to repeat, so a crash anywhere leaves a run that a second
 * removal finishes; the commit carries the request's applied mark, and a
 * record that the last clear is owed, which that clear deletes and the next
 * worker start pays when a crash came between them (see `memo-owed`).
 */
import { SettlementEffects } from "../../queue/effects.js";
import { bytesEqual } from "../../store/bytes-equal.js";
import { settleEndedParent } from "../children/child-runs.js";
import { childrenPrefix, runKey, stepPointerKey, terminalRecordKey } from "../records/kv-keys.js";
import { decodeTerminalRecord } from "../records/records.js";
import type { RuntimeCore } from "../runtime-core.js";
import { redrivesKey, runHistoryPrefix } from "./history-records.js";
import { stageForgotten } from "./index-effects.js";
import { runEndedKey, runNameKey } from "./run-index.js";
import { memoOwedKey, stageMemoOwed } from "../memo/memo-owed.js";

/** What a removal reads of a run's records (the repair's reading of them). */
export interface RemovalRecords {
  readonly runBytes: Uint8Array | null;
  readonly pointerBytes: Uint8Array | null;
  readonly endBytes: Uint8Array | null;
  readonly indexKey: string | undefined;
  readonly indexBytes: Uint8Array | null;
  /** The submission time that places the listing entries, where a record or the entry's key names it. */
  readonly submittedAtMs: number | undefined;
  /** The workflow name the listing entry still names (its name entry goes too). */
  readonly workflow: string | undefined;
  readonly signalWait: boolean;
}

/** The history entries of run `runId`, counted a page at a time. */
async function historyCount(core: RuntimeCore, runId: string): Promise<number> {
  let n = 0;
  for (let after: string | undefined; ; ) {
    const page = await core.queue.kvScan(runHistoryPrefix(core.queueName, runId), { limit: 256, ...(after === undefined ? {} : { after }) });
    n += page.entries.length;
    if (page.nextCursor === undefined) return n;
    after = page.nextCursor;
  }
}

/** What a removal of the run takes, in words (a dry run's answer). */
export async function removalWords(core: RuntimeCore, runId: string, r: RemovalRecords): Promise<string[]> {
  const words: string[] = [];
  if (r.runBytes !== null || r.pointerBytes !== null) words.push("its run record and step pointer (the run is ended failed first, its step job removed)");
  if (r.signalWait) words.push("the signal wait its step holds");
  words.push(r.endBytes !== null ? "its end record" : "the end record its ending writes");
  if (r.indexBytes !== null) words.push("its listing entries");
  const history = await historyCount(core, runId);
  if (history > 0) words.push(`${history} history ${history === 1 ? "entry" : "entries"}`);
  words.push("its memo entries and result");
  if ((await core.queue.kvScan(childrenPrefix(core.queueName, runId), { limit: 1 })).entries.length > 0)
    words.push("its children's entries (each child settled by its parent-close policy)");
  return words;
}

/**
 * Removes the ended run `runId` read as `r` (its end record reads, or is
 * gone); `marked` adds the request's mark to the last commit. False when
 * the records changed since they were read (read them again).
 */
export async function removeEnded(
  core: RuntimeCore,
  runId: string,
  r: RemovalRecords,
  marked: ((effects: SettlementEffects) => SettlementEffects) | undefined,
): Promise<boolean> {
  const q = core.queueName;
  const tk = terminalRecordKey(q, runId);
  const end = r.endBytes === null ? undefined : decodeTerminalRecord(r.endBytes, tk);
  if (end !== undefined) await settleEndedParent(core, core.view, runId, end.submission, end.status);
  // Taking turns with submissions under the id, as the retention sweep does: a run submitted since keeps its memo.
  return core.submitLock.run(runId, async () => {
    // Read again in the lock before the memo goes: a submission or retry of the id since the records were read
    // (each takes this lock) keeps its memo, and the removal reads the records again.
    if (!(await unchanged(core, runId, r))) return false;
    const memos = end === undefined ? undefined : end.memoPrefix === undefined ? core.memos : core.memos.withPrefix(end.memoPrefix);
    await memos?.clearMemosForRun(runId);
    const effects = new SettlementEffects().kvDelete(tk);
    if (end !== undefined) await stageForgotten(core.queue, q, end, effects);
    const at = r.submittedAtMs;
    if (at !== undefined) {
      // A repaired end may have been listed under another status before.
      for (const s of ["succeeded", "failed", "cancelled"] as const) effects.kvDelete(runEndedKey(q, s, at, runId));
      if (r.workflow !== undefined) effects.kvDelete(runNameKey(q, r.workflow, at, runId));
    }
    if (r.indexKey !== undefined && r.indexBytes !== null) effects.kvDelete(r.indexKey);
    if (end === undefined) await stageHistory(core, runId, effects);
    // The clear after this commit is owed from it on: should the process die before that clear, the next
    // worker start pays it (see `memo-owed`). A run's memo set is its submission (see `submitRun`).
    const owed =
      memos === undefined
        ? undefined
        : stageMemoOwed(core, runId, { memoPrefix: memos.prefix, ...(end?.submission === undefined ? {} : { memoSet: end.submission }) }, effects);
    const removed = await core.queue.kvCompareAndApply(
      [
        { key: tk, value: r.endBytes },
        { key: runKey(q, runId), value: null },
        { key: stepPointerKey(q, runId), value: null },
        ...(r.indexKey === undefined ? [] : [{ key: r.indexKey, value: r.indexBytes }]),
      ],
      marked === undefined ? effects : marked(effects),
    );
    // Cleared once more, still in turn with submissions: a step of the run still running (asked to stop) may have written
    // since the first clear, and asked before this commit whether the run keeps it, it was told yes (see `memoOwnerOf`).
    if (removed && memos !== undefined) {
      await memos.clearMemosForRun(runId);
      await core.queue.kvCompareAndDelete(memoOwedKey(q, runId), owed!);
    }
    return removed;
  });
}

/** Whether run `runId` is still ended as `r` read it: no run record or step pointer, the same end record. */
async function unchanged(core: RuntimeCore, runId: string, r: RemovalRecords): Promise<boolean> {
  const q = core.queueName;
  if ((await core.queue.kvGet(runKey(q, runId))) !== null || (await core.queue.kvGet(stepPointerKey(q, runId))) !== null) return false;
  const end = await core.queue.kvGet(terminalRecordKey(q, runId));
  return end === null || r.endBytes === null ? end === r.endBytes : bytesEqual(end, r.endBytes);
}

/** Stages the removal of run `runId`'s history entries (where no end record let `stageForgotten` do it). */
async function stageHistory(core: RuntimeCore, runId: string, effects: SettlementEffects): Promise<void> {
  effects.kvDelete(redrivesKey(core.queueName, runId));
  for (let after: string | undefined; ; ) {
    const page = await core.queue.kvScan(runHistoryPrefix(core.queueName, runId), { limit: 256, ...(after === undefined ? {} : { after }) });
    for (const e of page.entries) effects.kvDelete(e.key);
    if (page.nextCursor === undefined) return;
    after = page.nextCursor;
  }
}
