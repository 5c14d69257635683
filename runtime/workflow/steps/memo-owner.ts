/**
 * @module Whether a run still keeps the memo entries a step of it writes
 * (`MemoOwner`): a step still running when its run is removed may write
 * after the removal cleared the run's memo, and those entries would stay
 * with no run to ever clear them. One owner per runtime, shared by its
 * steps' memos.
 */
import { StoreCorruptedError } from "../../errors.js";
import type { MemoOwner } from "../memo/memo.js";
import { runKey, terminalRecordKey } from "../records/kv-keys.js";
import { decodeRunRecord } from "../records/records.js";
import type { RuntimeCore } from "../runtime-core.js";

const owners = new WeakMap<RuntimeCore, MemoOwner>();

/**
 * The memo owner of `core`: a run keeps its entries while its run record
 * holds the memo set written under (a retry keeps it; a run submitted
 * again under the id after a removal has another), or while its end
 * record stands (an ended run keeps its memo for a retry; a removal's
 * last commit deletes that record, and the removal clears the memo again
 * after it). A record that does not read keeps them: its repair decides.
 */
export function memoOwnerOf(core: RuntimeCore): MemoOwner {
  return owners.get(core) ?? newMemoOwner(core);
}

/**
 * Makes and keeps `core`'s owner, once per runtime. Its closure is made here,
 * not in `memoOwnerOf`: a function that makes a closure over a parameter
 * allocates a context for it on every call, the calls that make none included.
 */
function newMemoOwner(core: RuntimeCore): MemoOwner {
  const owner: MemoOwner = {
    async keeps(runId, memoSet) {
      const q = core.queueName;
      const key = runKey(q, runId);
      const run = await core.queue.kvGet(key);
      if (run !== null) {
        try {
          return decodeRunRecord(run, key).memoSet === memoSet;
        } catch (e) {
          if (e instanceof StoreCorruptedError) return true;
          throw e;
        }
      }
      return (await core.queue.kvGet(terminalRecordKey(q, runId))) !== null;
    },
  };
  owners.set(core, owner);
  return owner;
}
