/**
 * @module Dead-step reconciliation: terminates runs whose current step the
 * queue dead-lettered outside any settlement the runtime performed (the
 * reaper after a lease expired past the attempt limit, recovery when the
 * queue was opened). Such a run is terminated as failed with the job's last
 * error, and its notification enqueued in the same commit.
 */
import { SettlementEffects } from "../queue/effects.js";
import { runKey, stepPointerKey } from "./kv-keys.js";
import { HEADER_RUN_ID, HEADER_TERMINAL } from "./reserved.js";
import { RunId } from "./run-id.js";
import type { RuntimeCore } from "./runtime-core.js";
import { addTerminalEffects, type TerminationInput } from "./terminal.js";
import type { WorkflowView } from "./workflow-view.js";

/** Terminates the run whose current step is the dead job `jobId`, if any. `true` when it did. */
export async function reconcileDeadJob(core: RuntimeCore, view: WorkflowView, jobId: string): Promise<boolean> {
  const info = await core.queue.view().job(jobId);
  if (info === null || info.state !== "dead" || info.queueName !== core.queueName) return false;
  if (info.headers[HEADER_TERMINAL] !== undefined) return false;
  const runId = info.headers[HEADER_RUN_ID];
  if (!RunId.isValid(runId)) return false;
  const r = await view.records(runId);
  if (r.kind !== "active" || r.pointer.jobId !== jobId) return false;
  const now = core.clock.now();
  const t: TerminationInput = {
    runId,
    incarnation: r.run.incarnation,
    status: "failed",
    errorKind: "dead_lettered",
    error: info.lastError ?? "the step was dead-lettered by the queue",
    finalStep: r.pointer.step,
    headers: r.run.headers,
    token: `dead:${jobId}`,
    nowMs: now,
    priority: info.priority,
    maxAttempts: info.maxAttempts,
    group: r.run.group,
  };
  const effects = addTerminalEffects(core.terminal, t);
  const [notification, ...rest] = effects.enqueues;
  if (notification !== undefined) {
    // The notification is the commit's own enqueue, so termination and notification are one transaction.
    const kvOnly = new SettlementEffects();
    for (const op of effects.kvOps) {
      if (op.kind === "put") kvOnly.kvPut(op.key, op.value);
      else kvOnly.kvDelete(op.key);
    }
    for (const e of rest) kvOnly.enqueue(e.queueName, e.payload, e.opts);
    const { outcome } = await core.queue.enqueueWithEffects(notification.queueName, notification.payload, notification.opts ?? {}, kvOnly);
    if (!outcome.newlyEnqueued) return false;
  } else {
    // No notification to carry the commit: write the terminal state first and
    // remove the run record last, so a crash in between leaves the run active
    // and the next start reconciles it again.
    for (const op of effects.kvOps) {
      if (op.kind === "put") await core.queue.kvPut(op.key, op.value);
      else if (op.key !== runKey(runId) && op.key !== stepPointerKey(runId)) await core.queue.kvDelete(op.key);
    }
    if (!(await core.queue.kvCompareAndDelete(runKey(runId), r.runBytes))) return false;
    await core.queue.kvDelete(stepPointerKey(runId));
  }
  core.noteTerminated(runId, now);
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
