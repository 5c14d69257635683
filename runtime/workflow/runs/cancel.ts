/**
 * @module Cancelling a run from outside the runner.
 *
 * The request is recorded on the run record first, so it survives a
 * restart and reaches whichever process claims the run's next step. Then
 * the current step job is cancelled: a pending or scheduled one is removed
 * with the terminal effects in one commit; a claimed one gets its cancel
 * signal and the worker settles the run when the step returns.
 */
import { SettlementEffects } from "../../queue/effects.js";
import { markEffects, type AppliedMark } from "../records/applied-mark.js";
import { runKey } from "../records/kv-keys.js";
import { encodeRunRecord } from "../records/records.js";
import { RunId } from "./run-id.js";
import type { RuntimeCore } from "../runtime-core.js";
import { terminationOfActive, type EndOfActiveRun } from "./terminal.js";
import { instruments } from "../../telemetry/metrics.js";
import type { WorkflowView } from "./workflow-view.js";
import { tokenWithoutWorker } from "./end-tokens.js";
import { terminalEffectsWithoutWorker } from "./workerless-outcome.js";

/** A bound on retries across concurrent step transitions; each retry follows a real state change. */
const MAX_ROUNDS = 32;

/**
 * `mark` (see `applied-mark`) commits with the flag on the run record, or
 * alone when the run was already flagged: from then on the answer is `true`.
 */
export async function cancelRun(core: RuntimeCore, view: WorkflowView, runIdIn: RunId | string, mark?: AppliedMark<boolean>): Promise<boolean> {
  const runId = RunId.parse(runIdIn);
  let marked = mark === undefined;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const r = await view.records(runId);
    if (r.kind !== "active") {
      // "Unknown or terminated" only once that state is durable, so a caller never gives up on a run a crash revives.
      await view.durable();
      return false;
    }
    const job = await core.queue.view().job(r.pointer.jobId);
    // A step the queue dead-lettered outside the worker: reconciliation terminates the run as failed.
    if (job?.state === "dead") return false;
    if (r.run.cancelRequested !== true) {
      const flagged = encodeRunRecord({ ...r.run, cancelRequested: true });
      const key = runKey(core.queueName, runId);
      if (mark === undefined || marked) {
        if (!(await core.queue.kvCompareAndPut(key, r.runBytes, flagged))) continue;
      } else {
        const effects = markEffects(mark, true, new SettlementEffects().kvPut(key, flagged));
        if (!(await core.queue.kvCompareAndApply([{ key, value: r.runBytes }], effects))) continue;
        marked = true;
      }
    } else if (!marked) {
      await core.queue.kvCompareAndApply([], markEffects(mark!, true));
      marked = true;
    }
    const now = core.clock.now();
    const end: EndOfActiveRun = {
      status: "cancelled",
      errorKind: "cancelled",
      finalStep: r.pointer.step,
      token: tokenWithoutWorker("cancelled", r.pointer.jobId),
      // Only a waiter still scheduled holds the index entry; a woken one released it already.
      signalWait: job?.state === "scheduled" ? r.pointer.signalWait : undefined,
    };
    const t = terminationOfActive(runId, r.run, end, now, core.memos.prefix, job);
    const effects = await terminalEffectsWithoutWorker(core, t);
    const out = await core.queue.cancelJob(r.pointer.jobId, effects);
    if (out === "removed") {
      core.noteTerminated(runId, now);
      instruments()?.runsTerminated.add(1, { "taquba.queue": core.queueName, "taquba.outcome": "cancelled" });
      return true;
    }
    if (out === "requested") return true;
    // not_found: the step settled meanwhile. If the run moved to a next step, cancel that one;
    // if it terminated, the request arrived too late and the committed outcome stands.
    const after = await view.records(runId);
    if (after.kind !== "active") return true;
    if (after.pointer.jobId === r.pointer.jobId) {
      // The step job is gone but the pointer still names it: its settlement is committing; look again.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
  return true;
}
