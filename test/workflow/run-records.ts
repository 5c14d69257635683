/**
 * @module Reading and damaging a run's workflow records straight in the
 * store, for the tests of the repair and removal of damaged runs: every key
 * that names a run, and a record rewritten with some fields changed.
 */
import { pack, unpack } from "msgpackr";
import { expect } from "vitest";
import type { Queue } from "../../runtime/index.js";
import { HISTORY_PREFIX } from "../../runtime/workflow/records/kv-keys.js";
import { parseSuffix, RUN_ENDED_PREFIX, RUN_INDEX_PREFIX, RUN_NAMES_PREFIX } from "../../runtime/workflow/runs/run-index.js";

/** Anything holding the queue whose key-value space keeps the workflow's records. */
export interface HoldsQueue {
  readonly queue: Pick<Queue, "kvScan" | "kvGet" | "kvPut">;
}

/** Every key of the workflow's records that names run `runId`. */
export async function keysOf(holder: HoldsQueue, runId: string): Promise<string[]> {
  const out: string[] = [];
  for (const prefix of ["workflow/runs/", "workflow/steps/", "workflow/outcomes/", RUN_INDEX_PREFIX, RUN_NAMES_PREFIX, RUN_ENDED_PREFIX, HISTORY_PREFIX]) {
    for (let after: string | undefined; ; ) {
      const page = await holder.queue.kvScan(prefix, { limit: 1000, ...(after === undefined ? {} : { after }) });
      for (const e of page.entries) {
        const segments = e.key.split("/");
        // A listing key ends in the submission time and the run id; the others name the run as a segment.
        if (segments.includes(runId) || parseSuffix(segments.at(-1)!)?.runId === runId) out.push(e.key);
      }
      if (page.nextCursor === undefined) break;
      after = page.nextCursor;
    }
  }
  return out;
}

/** Rewrites the record at `key` (which must exist) with the fields of `change` put over its own. */
export async function damage(holder: HoldsQueue, key: string, change: Record<string, unknown>): Promise<void> {
  const bytes = await holder.queue.kvGet(key);
  expect(bytes, key).not.toBeNull();
  await holder.queue.kvPut(key, new Uint8Array(pack({ ...(unpack(bytes!) as Record<string, unknown>), ...change })));
}
