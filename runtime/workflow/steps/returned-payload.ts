/**
 * @module A continuing step's payload taken as its runner returned it. The
 * runner may keep the array (and the outcome) and change them after it
 * returned, from a timer say; the next step's job, its history entry and
 * its replay record hold what was returned.
 *
 * Taken once, in the turn the runner's return is seen. A settlement that
 * builds its commit in that same turn (nothing awaited between the return
 * and the ack) and whose next step is read back from the stored job (a
 * delayed continue) reads a plain array there, whose bytes only the
 * runner's own code can change, without a copy, as the queue reads an
 * enqueue's payload (see queue/payload-at-call). Any other payload, a
 * settlement that awaits first (a child start landing, earlier attempts
 * read for the history, a signal wait's lock, a replay record's write, a
 * cancel check the queue answers later) and a next step the ack may claim
 * for this worker (handed the array itself) take one copy at the return,
 * with the outcome's trigger as it was checked. That copy is the only one:
 * a chained next step's job holds it as its payload (the queue is told it
 * owns it, `payloadCopiedAtReturn`, and copies it no more).
 *
 * A succeeding step's result is always copied at the return (see
 * `succeededAtReturn`). A fail or cancel reason is a string, which no one
 * can change, and needs nothing.
 */
import { copyOwned, uint8ArraySize } from "../../queue/owned-bytes.js";
import { fixedWithinTurn } from "../../queue/payload-at-call.js";
import { ValidationError } from "../../errors.js";
import { StepError } from "../workflow-errors.js";
import type { StepOutcome, Trigger } from "./step-outcome.js";

type Continue = Extract<StepOutcome, { kind: "continue" }>;
type Succeed = Extract<StepOutcome, { kind: "succeed" }>;

/**
 * `o` (checked by the step processor) with its payload as the runner
 * returned it: `o` itself when `settlesInTurn` (the settlement commits in
 * this turn) and the payload is a plain array; else a new outcome holding a
 * copy. Throws a permanent `StepError` when the payload's bytes are gone (a
 * view of a detached or shrunk buffer), naming the run's step.
 */
export function continuedAtReturn(o: Continue, settlesInTurn: boolean, runId: string, step: number): Continue {
  const payload = o.payload;
  if (settlesInTurn && fixedWithinTurn(payload)) {
    // A view of a detached buffer reads as empty: only an empty one can be such a view.
    if (uint8ArraySize(payload) === 0 && copyOwned(payload) === undefined) throw bytesGone("payload", runId, step);
    return o;
  }
  // An exact copy, not a view of a shared chunk: the chained hand-out takes this very array (a view was copied
  // again there). One of 64 B or less keeps its bytes in V8's heap; nothing on the step's path reads its
  // `buffer` (which would move them out, about 250 ns): the hand-out is told instead (`payloadCopiedAtReturn`).
  const copy = copyOwned(payload);
  if (copy === undefined) throw bytesGone("payload", runId, step);
  return new CopiedContinue(copy, triggerAsChecked(o.when));
}

/**
 * A continue outcome whose payload `continuedAtReturn` copied: an exact
 * array that only this outcome holds, which no runner or caller can reach
 * and nothing changes. The next step's job is built from it without
 * another copy (see `payloadCopiedAtReturn`).
 */
class CopiedContinue {
  readonly kind = "continue";
  constructor(
    readonly payload: Uint8Array,
    readonly when: Trigger,
  ) {}
}

/** Whether `o`'s payload is a copy `continuedAtReturn` made, held by nothing else: the chained hand-out may take it as it is. */
export function payloadCopiedAtReturn(o: Continue): boolean {
  return o instanceof CopiedContinue;
}

/**
 * `o` (checked by the step processor) holding a copy of the result the
 * runner returned. Always copied: the run's end is recorded after awaits
 * (a run result record's write, earlier attempts read for the history, a
 * replay record, a cancel check), and the result is read again after them
 * for the terminal hook's job, a parent's child end and an inline outcome.
 * A run ends once, so this is one copy per run, not per step. Throws a
 * permanent `StepError` when the result's bytes are gone, naming the
 * run's step.
 */
export function succeededAtReturn(o: Succeed, runId: string, step: number): Succeed {
  const copy = copyOwned(o.result);
  if (copy === undefined) throw bytesGone("result", runId, step);
  return { kind: "succeed", result: copy };
}

/** `when` as the checks read it: a trigger of its own, which a later change to the runner's object does not reach. */
function triggerAsChecked(when: Trigger): Trigger {
  if (when.kind === "after") return { kind: "after", delayMs: when.delayMs };
  if (when.kind === "onSignal") return { kind: "onSignal", correlationKey: when.correlationKey, timeoutMs: when.timeoutMs };
  return { kind: "immediate" };
}

/** A permanent failure of step `step` of run `runId` whose returned payload (a continue's) or result (a succeed's) is a view of bytes that are gone. */
function bytesGone(what: "payload" | "result", runId: string, step: number): StepError {
  const verb = what === "payload" ? "continues" : "succeeds";
  return StepError.permanent(
    new ValidationError(
      `the ${what} step ${step} of run ${JSON.stringify(runId)} ${verb} with is a view of a detached or shrunk ArrayBuffer, whose bytes are gone; return a view of live bytes`,
    ),
  );
}
