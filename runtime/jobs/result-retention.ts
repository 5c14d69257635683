/**
 * @module Job result retention: removes a job's result record and dedup
 * record a window after the job ended.
 *
 * The job's terminating settlement stages a marker in `jobs/expiry/{q}/` (an
 * expiry index of step queue `q`, suffixed with the run id, holding the
 * run's incarnation) beside the result record, so the marker exists exactly
 * when the record does. A runner sweeps only its own step queue's markers
 * and records. The workflow's memo retention, set to the same window, removes the
 * run's terminal record and memo entries. A keyed job that ended without a
 * result record (attempts exhausted, dead-lettered, cancelled) keeps its
 * small dedup record; `JobRunner.submit` treats a dedup record whose run has
 * no records left as expired.
 */
import { ExpiryIndex } from "../queue/expiry-index.js";
import { fromUtf8, utf8 } from "../workflow/records/codec.js";
import type { KeyedLock } from "../workflow/runs/run-events.js";
import type { WorkflowQueue } from "../workflow/queue-port.js";
import type { WorkflowView } from "../workflow/runs/workflow-view.js";
import { decodeJobResult, jobDedupKey, jobResultKey } from "./job-codec.js";

/** Result-retention markers of the jobs of step queue `q`. */
export const jobExpiryIndex = (q: string): ExpiryIndex => new ExpiryIndex(`jobs/expiry/${q}/`);

/** Stages the marker of a result record of step queue `q` on the delivery's effects, beside the record. */
export function addResultMarker(
  effects: { put(key: string, value: Uint8Array): void },
  q: string,
  runId: string,
  incarnation: string,
  expiresAt: number,
): void {
  effects.put(jobExpiryIndex(q).key(expiresAt, runId), utf8(incarnation));
}

const PAGE = 256;

/**
 * One pass over the step queue `view` reads: for every expired marker, the
 * result record it belongs to (same incarnation) and, unless a later run
 * under the id is active, the dedup record. Runs under `lock` per run id so
 * it never races a submission.
 */
export async function sweepJobResults(queue: WorkflowQueue, view: WorkflowView, lock: KeyedLock, now: number): Promise<number> {
  const q = view.queueName;
  const index = jobExpiryIndex(q);
  let swept = 0;
  for (;;) {
    const expired = await index.scanExpired(queue, now, PAGE);
    for (const m of expired) {
      const runId = m.suffix;
      await lock.run(runId, async () => {
        const key = jobResultKey(q, runId);
        const bytes = await queue.kvGet(key);
        if (bytes !== null && decodeJobResult(bytes, key).incarnation === fromUtf8(m.value)) await queue.kvCompareAndDelete(key, bytes);
        if ((await view.records(runId)).kind !== "active") await queue.kvDelete(jobDedupKey(q, runId));
        await queue.kvCompareAndDelete(m.key, m.value);
      });
      swept++;
    }
    if (expired.length < PAGE) return swept;
  }
}
