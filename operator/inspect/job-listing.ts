/**
 * @module Queue jobs as operators list them: dead letters over every
 * queue, and one queue's jobs in one state, each with the run it carries
 * (a step job's `workflow.run_id` header). Shared by the CLI and the
 * dashboard.
 */
import { ValidationError } from "../../runtime/errors.js";
import { validateJobId, validateQueueName } from "../../runtime/queue/names.js";
import type { QueueReader } from "../../runtime/queue/reader.js";
import type { JobInfo, JobState, WaitingReason } from "../../runtime/queue/types.js";
import { HEADER_RUN_ID, HEADER_STEP } from "../../runtime/workflow/records/reserved.js";
import { userHeaders } from "./run-detail.js";

/** A queue job, flattened for tables and JSON. */
export interface JobRow {
  readonly id: string;
  readonly queue: string;
  readonly state: JobState;
  readonly attempt: number;
  readonly maxAttempts: number;
  /** Times the job was requeued from the dead letters, each with fresh attempts (0 when never). */
  readonly requeues: number;
  readonly enqueuedAt: number;
  readonly failedAt?: number;
  readonly runAt?: number;
  readonly lastError?: string;
  /** Why flow control holds the job back (see `JobInfo.waiting`). */
  readonly waiting?: WaitingReason;
  /** The run a step job carries, and its step. */
  readonly runId?: string;
  readonly step?: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly payloadSize: number;
}

export function jobRow(j: JobInfo): JobRow {
  const runId = j.headers[HEADER_RUN_ID];
  const step = j.headers[HEADER_STEP];
  return {
    id: j.id,
    queue: j.queueName,
    state: j.state,
    attempt: j.attempt,
    maxAttempts: j.maxAttempts,
    requeues: j.requeues ?? 0,
    enqueuedAt: j.enqueuedAt,
    ...(j.failedAt === undefined ? {} : { failedAt: j.failedAt }),
    ...(j.runAt === undefined ? {} : { runAt: j.runAt }),
    ...(j.lastError === undefined ? {} : { lastError: j.lastError }),
    ...(j.waiting === undefined ? {} : { waiting: j.waiting }),
    ...(runId === undefined ? {} : { runId }),
    ...(step === undefined || !/^\d+$/.test(step) ? {} : { step: Number(step) }),
    headers: userHeaders(j.headers),
    payloadSize: j.payloadSize,
  };
}

export interface DeadLetterPage {
  readonly items: readonly JobRow[];
  /** Pass back as `after` for the next page (per queue: `queue/jobId`). */
  readonly next?: string;
}

/**
 * Dead letters of one queue, or of every queue in name order, at most
 * `limit`, after the position `after` (a previous page's `next`).
 */
export async function listDeadLetters(reader: QueueReader, opts: { queue?: string; after?: string; limit: number }): Promise<DeadLetterPage> {
  const queues = opts.queue === undefined ? (await reader.listQueues()).sort() : [opts.queue];
  const [afterQueue, afterId] = splitPosition(opts.after);
  const items: JobRow[] = [];
  for (const q of queues) {
    if (afterQueue !== undefined && q < afterQueue) continue;
    const after = q === afterQueue ? afterId : undefined;
    const jobs = await reader.deadJobs(q, { limit: opts.limit - items.length + 1, ...(after === undefined ? {} : { after }) });
    for (const j of jobs) {
      if (items.length === opts.limit) return { items, next: position(items[items.length - 1]!) };
      items.push(jobRow(j));
    }
  }
  return { items };
}

function position(r: JobRow): string {
  return `${r.queue}/${r.id}`;
}

/** A page's `next` split into its queue and job id; anything else would start the listing at a place no dead letter holds (none, or every one again). */
function splitPosition(p: string | undefined): [string | undefined, string | undefined] {
  if (p === undefined) return [undefined, undefined];
  const i = p.lastIndexOf("/");
  const [queue, id] = [p.slice(0, i), p.slice(i + 1)];
  try {
    if (i < 0) throw new Error("no queue");
    validateQueueName(queue);
    validateJobId(id);
  } catch {
    throw new ValidationError(
      `dead letter position ${JSON.stringify(p)} is not one a page printed (QUEUE/JOB_ID); pass the position printed at the end of the previous page`,
    );
  }
  return [queue, id];
}

/** One queue's jobs in one state (the queue's own order), one page. */
export async function listQueueJobs(
  reader: QueueReader,
  queue: string,
  state: JobState,
  opts: { cursor?: string; limit: number },
): Promise<{ items: JobRow[]; next?: string }> {
  const page = await reader.listJobs(queue, state, { limit: opts.limit, ...(opts.cursor === undefined ? {} : { cursor: opts.cursor }) });
  return { items: page.items.map(jobRow), ...(page.nextCursor === undefined ? {} : { next: page.nextCursor }) };
}
