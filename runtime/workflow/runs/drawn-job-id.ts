/**
 * @module The job ids the runtime draws itself (`nextJobId`) for a run's
 * first step or a redriven step: the run's records name the id before the
 * enqueue commits, so a caller's job that takes it in between (ids drawn
 * within one millisecond count up by one) fails that enqueue. The runtime
 * then draws another id and builds the records again; a caller's own
 * `jobId` is never replaced. A continuing step's settlement does the same
 * for its next step's job (its pointer, history entry and any signal wait
 * name the id). Each of these jobs is enqueued as one named with a drawn id
 * (`RebuiltEnqueueOptions.jobIdDrawn`, `drawnIdOptions`), so the queue looks
 * the id up only when a caller's id named since the draw may equal it, or
 * when it did not hand the id out itself (a `WorkflowQueue` that draws from
 * one queue and commits on another gets the look-up).
 */
import { DuplicateJobIdError } from "../../queue/errors.js";

/** Whether `e` is the queue's refusal of `jobId`, an id the runtime drew, because a caller's job took it since. */
export function drawnIdTaken(e: unknown, jobId: string): boolean {
  return e instanceof DuplicateJobIdError && e.jobId === jobId;
}

/**
 * Whether `e` refuses a continuing step's settlement because a caller's job
 * took its next step's id since the draw: that job is the only enqueue such
 * a settlement makes (the step's own effects are KV writes), so a taken id
 * there is always one the runtime drew.
 */
export function nextStepIdTaken(e: unknown): boolean {
  return e instanceof DuplicateJobIdError;
}
