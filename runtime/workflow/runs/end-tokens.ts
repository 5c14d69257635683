/**
 * @module The tokens that name a run's ends, and telling a termination no
 * worker performed (an external cancel of a waiting step, dead-step
 * reconciliation, a debounce replacing a run) from a worker's.
 *
 * A worker's token is its delivery (`<job id>:<attempt>`), and a worker
 * records an outcome with it. The other ends record none of their own:
 * the outcome of such a run is its termination (see `inline-outcome`). The
 * prefixes have been the same in every version, so a terminal record
 * written before outcomes were built from them is recognised too.
 *
 * Every end has its own token. A redrive requeues a dead step job with its
 * attempts reset, so the job's next end would repeat an earlier one's
 * token; the job's lasting count of requeues (`ClaimedJob.requeues`) is
 * appended once it is above zero (`:r<n>`). The token is built from the
 * job's stored state only, never a clock: a crash and a lease's expiry,
 * or a put-back, deliver the same job again under the same count, and an
 * end committed and then replayed (a second reconciliation of one dead
 * job) carries the token it had, so its notification and its child's or
 * parent's wake-up are deduplicated. Job ids hold no `:` (letters,
 * digits, `_` and `-`), so the parts stay apart.
 *
 * A step job's id is drawn by the runtime's queue: the queue's own ids are
 * ULIDs (digits and capitals), never a prefix's lower-case word, so a
 * delivery token never starts like a worker-less one. A caller's own
 * `WorkflowQueue` may draw any id ("dead", "3"); the end's kind then tells
 * the forms apart (see {@link jobIdOfEnd}). Two ends of one run would
 * share a token there (a worker's end of job "dead" at attempt 3, a
 * reconciliation of the run's later job "3"), and be taken for one end
 * (its notification, its memo's retention): a worker-less end of a job
 * whose id is all digits writes its requeue count with a leading zero
 * (`dead:3:r0`), a form no delivery token has. Every other token keeps
 * the form of every version, and an earlier version reads the job each
 * one names.
 *
 * Pure: no IO.
 */
import type { JobInfo } from "../../queue/types.js";
import { ownHeader } from "../../option-values.js";
import { HEADER_RUN_ID } from "../records/reserved.js";
import type { RunErrorKind } from "./run-types.js";

/**
 * What names one end of a run in the dedup keys of the jobs the end
 * enqueues (its notification, its parent's and its children's wake-ups):
 * its token, and its pass's drawn incarnation where the run has a drawn
 * submission. A caller's `WorkflowQueue` may hand a later submission (or a
 * `retryRun` pass) the job ids an earlier one had, so its end may repeat
 * the earlier end's token while the earlier end's job is still queued; the
 * incarnation is drawn for every submission and pass, never reused. A run
 * without a submission (a record written before submissions were drawn)
 * keeps the token alone: its incarnation was a job id, no better, and the
 * key stays the one its earlier ends were enqueued under.
 */
export function endDedupName(t: { readonly token: string; readonly incarnation: string; readonly submission?: string | undefined }): string {
  return t.submission === undefined ? t.token : `${t.token}@${t.incarnation}`;
}

/** The kinds of end no worker performs, each with its token's prefix. */
const PREFIX_OF = { cancelled: "cancel:", dead_lettered: "dead:", superseded: "superseded:" } as const;

/** The kinds of end no worker performs. */
export type EndWithoutWorker = keyof typeof PREFIX_OF;

/** What tells the ends of one job apart after its `n`-th requeue from the dead letters; nothing before one. */
function requeueSuffix(requeues: number | undefined): string {
  return requeues === undefined || requeues <= 0 ? "" : `:r${requeues}`;
}

/** The token of the end a worker's delivery `attempt` of job `jobId`, requeued `requeues` times, performs. */
export function deliveryToken(jobId: string, attempt: number, requeues: number | undefined): string {
  return `${jobId}:${attempt}${requeueSuffix(requeues)}`;
}

/** The token of the end `kind` of the run whose current step is the job `jobId`, requeued `requeues` times. */
export function tokenWithoutWorker(kind: EndWithoutWorker, jobId: string, requeues?: number): string {
  // An id of digits reads as an attempt: `cancel:1` is also a worker's end of a job named "cancel" at attempt 1.
  // Its count gets a leading zero (`:r0`, `:r03`), which no delivery token's has.
  const suffix = DIGITS.test(jobId) ? `:r0${requeues === undefined || requeues <= 0 ? "" : requeues}` : requeueSuffix(requeues);
  return `${PREFIX_OF[kind]}${jobId}${suffix}`;
}

const DIGITS = /^[0-9]+$/;

/**
 * The job id the token of an end of kind `errorKind` names: the job whose
 * settlement (or removal) ended the run. A caller's `WorkflowQueue` may
 * draw a prefix's word as a step job's id ("dead"), whose delivery token
 * (`dead:3`) then starts as a worker-less one naming another job ("3"):
 * a prefix counts only on an end of its own kind, which no worker records
 * (see {@link endedWithoutWorker}). One ambiguity stays, since a worker
 * also cancels: the token `cancel:<n>` of a cancelled run names job
 * `<n>`, and a worker's cancel of a job named "cancel" reads as that; a
 * reader checks that the job it finds is a step of the run.
 */
export function jobIdOfEnd(end: { readonly token: string; readonly errorKind?: RunErrorKind | null | undefined }): string | undefined {
  const { token, errorKind } = end;
  const without = workerlessPrefix(token, errorKind) ?? "";
  const rest = token.slice(without.length);
  const colon = rest.indexOf(":");
  if (without !== "") return colon < 0 ? rest : rest.slice(0, colon);
  return colon > 0 ? rest.slice(0, colon) : undefined;
}

/**
 * Whether the termination with `token` and `errorKind` was performed
 * without a worker. Both must agree: a worker also ends runs as
 * `cancelled` (a cancel of a running step), with its delivery's token.
 */
export function endedWithoutWorker(token: string, errorKind: RunErrorKind | null | undefined): boolean {
  return workerlessPrefix(token, errorKind) !== undefined;
}

/** The worker-less prefix `token` starts with when it is that of `errorKind`'s ends. */
function workerlessPrefix(token: string, errorKind: RunErrorKind | null | undefined): string | undefined {
  if (errorKind !== "cancelled" && errorKind !== "dead_lettered" && errorKind !== "superseded") return undefined;
  const prefix = PREFIX_OF[errorKind];
  return token.startsWith(prefix) ? prefix : undefined;
}

/** Whether `job`, found by the id a run's end names, is a dead step job of run `runId` on the step queue `queueName`. */
export function isDeadStepOf(job: JobInfo, queueName: string, runId: string): boolean {
  return job.state === "dead" && job.queueName === queueName && ownHeader(job.headers, HEADER_RUN_ID) === runId;
}

/**
 * The step job that represents the ended run `t` (its `SubmitOutcome.jobId`):
 * the job its end names, else the incarnation of a record written when the
 * incarnation was step 0's job id (a token naming no job is one of those).
 */
export function jobIdOfTermination(t: { readonly token: string; readonly errorKind?: RunErrorKind | null | undefined; readonly incarnation: string }): string {
  return jobIdOfEnd(t) ?? t.incarnation;
}
