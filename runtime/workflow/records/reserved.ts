/**
 * @module Names the runtime reserves: step-job headers, the KV prefix and
 * the run-memo key of the run result record.
 */
import { RUN_TRACEPARENT } from "../../telemetry/tracing.js";

/** User headers may not start with this; step jobs carry the runtime's own. */
export const RESERVED_HEADER_PREFIX = "workflow.";
/** The run a step job belongs to. */
export const HEADER_RUN_ID = "workflow.run_id";
/** Zero-based step number of a step job. */
export const HEADER_STEP = "workflow.step";
/** Marks the notification job that runs the terminal hook. */
export const HEADER_TERMINAL = "workflow.terminal";
/**
 * Marks a job that carries no work: it exists so a termination with no
 * notification (dead-step reconciliation) still commits in one enqueue
 * transaction. The worker acknowledges it.
 */
export const HEADER_NOOP = "workflow.noop";
/** The correlation key a step waits on (set on a step continued on a signal). */
export const HEADER_SIGNAL_WAIT = "workflow.signal_wait";
/** The W3C traceparent of the span that submitted the run; every step attempt span is its child. */
export const HEADER_TRACEPARENT = RUN_TRACEPARENT;
/** Set on a step enqueued with a signal consumed from the buffer at registration. */
export const HEADER_SIGNAL_DELIVERED = "workflow.signal_delivered";

/**
 * Marks the job a child run's termination enqueues: it wakes the parent's
 * step waiting on the child (the header holds the completion key). The
 * payload is the parent's run id.
 */
export const HEADER_CHILD_ENDED = "workflow.child_ended";
/**
 * Marks the job the termination of a run with children enqueues: it
 * cancels the running children the parent-close policy says to and drops
 * the parent's child bookkeeping. The header holds the parent's run id.
 */
export const HEADER_PARENT_ENDED = "workflow.parent_ended";
/**
 * On a parent-ended job: the submission of the run that ended, so the job
 * settles that run's children only, not those of a later run under the
 * same id. Jobs of earlier versions lack it.
 */
export const HEADER_PARENT_SUBMISSION = "workflow.parent_submission";
/**
 * On a parent-ended job with a submission: how that run ended (as its
 * payload says), for the reconciliation of the job when the queue
 * dead-letters it, which reads headers only and may find a later run.
 */
export const HEADER_PARENT_STATUS = "workflow.parent_status";

/** Caller KV keys under this prefix belong to the runtime; effects may not touch them. */
export const RESERVED_KV_PREFIX = "workflow/";
/** Run-memo key of the run result record, written before every terminating settlement. */
export const RUN_OUTCOME_MEMO_KEY = "workflow.outcome";
