/**
 * @module Debounced submissions (`RunOptions.debounce`): the run waiting in
 * the open window of a key is replaced by the next submission with the key,
 * and ends, in the same commit, cancelled with `errorKind: "superseded"`.
 *
 * The queue decides which job a debounced enqueue supersedes inside its
 * commit; the run's end is read before it. So the submission states the job
 * it expects to supersede, and the queue refuses the commit ("raced") when
 * the window changed in between (another submission, the window's end, a
 * cancel); the submission then reads the window again. Every race follows
 * a real change of the window, so the loop ends.
 */
import { SettlementEffects } from "../../queue/effects.js";
import { validateDebouncePeriod } from "../../queue/admission.js";
import { validateDebounceKey } from "../../queue/validate-enqueue.js";
import { ValidationError } from "../../errors.js";
import { HEADER_RUN_ID, HEADER_STEP } from "../records/reserved.js";
import type { RuntimeCore } from "../runtime-core.js";
import { RunId } from "./run-id.js";
import type { RunDebounce, RunOptions } from "./run-types.js";
import { terminationOfActive } from "./terminal.js";
import { ownHeader } from "../../option-values.js";
import { tokenWithoutWorker } from "./end-tokens.js";
import { terminalEffectsWithoutWorker } from "./workerless-outcome.js";

/** Checks `RunOptions.debounce`; throws `ValidationError` naming the option. */
export function checkRunDebounce(o: RunOptions, path = "RunOptions"): void {
  const d = o.debounce;
  if (d === undefined) return;
  if (d === null || typeof d !== "object") throw new ValidationError(`${path}.debounce must be an object { key, periodMs }`);
  try {
    validateDebounceKey(d.key);
  } catch (e) {
    if (e instanceof ValidationError) throw new ValidationError(`${path}.debounce.key: ${e.message}`);
    throw e;
  }
  validateDebouncePeriod(`${path}.debounce.periodMs`, d.periodMs);
  if (o.runAt !== undefined) throw new ValidationError(`${path}.debounce cannot be combined with runAt: a debounced run starts when its window ends`);
}

/** The run a debounced submission would replace now, and what ending it commits. */
export interface Supersession {
  /** The step-0 job waiting in the window (undefined: the window is not open). */
  jobId: string | undefined;
  effects: SettlementEffects;
  /** The run it ends, when the job is a run's first step. */
  ended?: { runId: RunId; atMs: number };
}

/** Reads the open window of `d.key` and builds the end of the run waiting in it, replaced by run `by`. */
export async function supersessionOf(core: RuntimeCore, d: RunDebounce, by: RunId): Promise<Supersession> {
  const holder = core.queue.debounceHolder?.(core.queueName, d.key);
  if (holder === undefined) return { jobId: undefined, effects: new SettlementEffects() };
  const runId = ownHeader(holder.headers, HEADER_RUN_ID);
  // Only a run's first step carries a debounce; anything else in the window is replaced as a plain job.
  if (runId === undefined || !RunId.isValid(runId) || ownHeader(holder.headers, HEADER_STEP) !== "0")
    return { jobId: holder.jobId, effects: new SettlementEffects() };
  const r = await core.view.records(runId);
  if (r.kind !== "active" || r.pointer.jobId !== holder.jobId) return { jobId: holder.jobId, effects: new SettlementEffects() };
  const now = core.clock.now();
  const t = terminationOfActive(
    runId,
    r.run,
    {
      status: "cancelled",
      errorKind: "superseded",
      error: `superseded by run ${by}: a later submission with debounce key ${JSON.stringify(d.key)} replaced it before it started`,
      supersededBy: by,
      finalStep: 0,
      token: tokenWithoutWorker("superseded", holder.jobId),
    },
    now,
    core.memos.prefix,
  );
  return { jobId: holder.jobId, effects: await terminalEffectsWithoutWorker(core, t), ended: { runId, atMs: now } };
}
