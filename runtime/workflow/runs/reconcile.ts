/**
 * @module Dead-step reconciliation: terminates runs whose current step the
 * queue dead-lettered outside any settlement the runtime performed (the
 * reaper after a lease expired past the attempt limit, recovery when the
 * queue was opened). Such a run is terminated as failed with the job's last
 * error, and its notification enqueued in the same commit.
 *
 * A dead job that was to wake a parent for its child's end (see
 * `children/child-runs`) does that wake-up instead: the end is buffered,
 * and the parent's wait has no timeout. One that was to settle an ended
 * parent's children settles them.
 *
 * The queue has no KV-only transaction, so the commit rides on an enqueue:
 * the notification job, or a no-op job when the hook does not observe the
 * outcome.
 */
import { SettlementEffects } from "../../queue/effects.js";
import { terminalDedupKey } from "../records/kv-keys.js";
import {
  HEADER_CHILD_ENDED,
  HEADER_PARENT_ENDED,
  HEADER_PARENT_STATUS,
  HEADER_PARENT_SUBMISSION,
  HEADER_NOOP,
  HEADER_RUN_ID,
  HEADER_TERMINAL,
} from "../records/reserved.js";
import { parentOfCompletionKey, settleEndedParent, wakeParent } from "../children/child-runs.js";
import { RunId } from "./run-id.js";
import type { RuntimeCore } from "../runtime-core.js";
import { terminationOfActive } from "./terminal.js";
import { instruments } from "../../telemetry/metrics.js";
import type { WorkflowView } from "./workflow-view.js";
import { ownHeader } from "../../option-values.js";
import { endDedupName, tokenWithoutWorker } from "./end-tokens.js";
import { terminalEffectsWithoutWorker } from "./workerless-outcome.js";

/** Terminates the run whose current step is the dead job `jobId`, if any. `true` when it did. */
export async function reconcileDeadJob(core: RuntimeCore, view: WorkflowView, jobId: string): Promise<boolean> {
  const info = await core.queue.view().job(jobId);
  if (info === null || info.state !== "dead" || info.queueName !== core.queueName) return false;
  if (ownHeader(info.headers, HEADER_TERMINAL) !== undefined) return false;
  const childEnded = ownHeader(info.headers, HEADER_CHILD_ENDED);
  if (childEnded !== undefined) {
    const parent = parentOfCompletionKey(childEnded);
    if (parent !== undefined) await wakeParent(core, childEnded, parent);
    return false;
  }
  const parentEnded = ownHeader(info.headers, HEADER_PARENT_ENDED);
  if (parentEnded !== undefined) {
    await settleEndedParent(core, view, parentEnded, ownHeader(info.headers, HEADER_PARENT_SUBMISSION), ownHeader(info.headers, HEADER_PARENT_STATUS));
    return false;
  }
  const runId = ownHeader(info.headers, HEADER_RUN_ID);
  if (!RunId.isValid(runId)) return false;
  const r = await view.records(runId);
  if (r.kind !== "active" || r.pointer.jobId !== jobId) return false;
  // The record's count, as a worker's end reads it: a redriven step dead again ends the run under a token of its own.
  // (Not the attempt history's requeued entries: the history keeps only its last entries, and may be damaged.)
  const requeues = info.requeues ?? 0;
  const now = core.clock.now();
  const t = terminationOfActive(
    runId,
    r.run,
    {
      status: "failed",
      errorKind: "dead_lettered",
      error: info.lastError ?? "the step was dead-lettered by the queue",
      finalStep: r.pointer.step,
      token: tokenWithoutWorker("dead_lettered", jobId, requeues),
    },
    now,
    core.memos.prefix,
    info,
  );
  const effects = await terminalEffectsWithoutWorker(core, t);
  // The commit needs an enqueue of its own: the notification when the hook observes the
  // outcome, else a no-op job the worker acknowledges. Either way termination, notification
  // and the dedup key that stops a second reconciliation of the same job are one transaction.
  const [own, ...rest] = effects.enqueues;
  const carrier = own ?? {
    queueName: core.queueName,
    payload: new Uint8Array(0),
    opts: { dedupKey: terminalDedupKey(runId, endDedupName(t)), headers: { [HEADER_RUN_ID]: runId, [HEADER_NOOP]: "1" } },
  };
  const kvOnly = new SettlementEffects();
  for (const op of effects.kvOps) {
    if (op.kind === "put") kvOnly.kvPut(op.key, op.value);
    else kvOnly.kvDelete(op.key);
  }
  for (const e of rest) kvOnly.enqueue(e.queueName, e.payload, e.opts);
  const { outcome } = await core.queue.enqueueWithEffects(carrier.queueName, carrier.payload, carrier.opts ?? {}, kvOnly);
  if (!outcome.newlyEnqueued) return false;
  core.noteTerminated(runId, now);
  instruments()?.runsTerminated.add(1, { "taquba.queue": core.queueName, "taquba.outcome": "failed" });
  return true;
}

/** Reconciles every dead job of the step queue (at start: dead-letters of earlier processes). */
export async function reconcileAllDead(core: RuntimeCore, view: WorkflowView, signal: AbortSignal): Promise<number> {
  let after: string | undefined;
  let n = 0;
  for (;;) {
    if (signal.aborted) return n;
    const page = await core.queue.view().deadJobs(core.queueName, after === undefined ? { limit: 256 } : { after, limit: 256 });
    for (const j of page) if (await reconcileDeadJob(core, view, j.id)) n++;
    if (page.length < 256) return n;
    after = page[page.length - 1]!.id;
  }
}
