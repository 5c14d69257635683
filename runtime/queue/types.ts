/**
 * @module Public shapes of the queue API: enqueue options and outcomes,
 * claimed jobs, leases, settlement and cancel outcomes, job views.
 */
import type { JobState } from "./record.js";

/** Options of one enqueue. */
export interface EnqueueOptions {
  /** Lower is claimed first; 0..2^32−1. Default: the queue's `defaultPriority` (1000). */
  priority?: number;
  /** Not claimable before this instant (epoch ms). At or before now: pending at once. */
  runAt?: number;
  /**
   * While a job with this key is pending or scheduled in the same queue, an
   * enqueue with the key returns that job (`newlyEnqueued: false`) and
   * writes nothing. Released when the job is claimed or cancelled.
   */
  dedupKey?: string;
  /** Overrides the queue's `maxAttempts`. */
  maxAttempts?: number;
  /** String headers carried with the job to every delivery. */
  headers?: Record<string, string>;
  /** Caller-chosen id: 1-128 of `[A-Za-z0-9_-]`, e.g. from `nextJobId()`. Default: a fresh ULID. */
  jobId?: string;
  /**
   * Debounce: the last enqueue with this `key` within `periodMs` wins. The
   * first enqueue of a key opens a window of `periodMs` and its job waits
   * (scheduled) until the window ends; each later enqueue with the key while
   * the window is open supersedes the job waiting in it, in the same commit,
   * and waits for the same end. A superseded job is removed and
   * `waitForCompletion` on it ends `{ kind: "superseded", by }`. Overrides
   * the queue's `QueueConfig.debounce`; cannot be combined with `runAt`.
   * See docs/flow-control.md.
   */
  debounce?: { key: string; periodMs: number };
}

/**
 * @internal Options whose `jobId` a queue's `nextJobId` drew (a workflow's
 * next step): the insert looks the id up only when this queue did not hand
 * it out or a caller's id noted since the draw may equal it (see
 * `CallerIdBound.mayHoldEarlierDraw`), as it does for an id drawn in the
 * commit. Set only by the queue's own
 * builder of such options (`rebuiltEnqueueItem`): a caller's options that
 * name the field are refused as unknown.
 */
export interface DrawnIdEnqueueOptions extends EnqueueOptions {
  readonly jobIdDrawn?: true;
}

/** What an enqueue did. */
export interface EnqueueOutcome {
  jobId: string;
  /** `false` when a dedup key matched an existing job; nothing was written then. */
  newlyEnqueued: boolean;
  /** The job this enqueue superseded (debounce): it was waiting in the same window and is removed. */
  superseded?: string;
}

/** One item of `enqueueBatch`. */
export interface EnqueueItem {
  queueName: string;
  payload: Uint8Array;
  opts?: EnqueueOptions;
}

/** Extends the lease of a claimed job. Cannot settle it. */
export interface LeaseHandle {
  /**
   * Makes the lease last at least `ms` more (plus a 5 s margin); never
   * shortens it. Fails with `ClaimLostError` once the claim ended, and with
   * `CancelRequestedError` once a cancellation was requested.
   */
  ensureAtLeast(ms: number): Promise<void>;
  /** Current lease expiry (epoch ms). */
  readonly expiresAt: number;
}

/** A job handed to a worker by `claim`; settle it with ack, nack or deadLetter. */
export interface ClaimedJob {
  readonly id: string;
  readonly queueName: string;
  readonly payload: Uint8Array;
  readonly headers: Readonly<Record<string, string>>;
  /** This delivery's attempt number, from 1. */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly priority: number;
  readonly enqueuedAt: number;
  readonly claimedAt: number;
  readonly lease: LeaseHandle;
  /** Bytes given to `wakeScheduled`; the same on every redelivery. */
  readonly attached?: Uint8Array;
  /** When `wakeScheduled` woke the job. */
  readonly wokenAt?: number;
  /** Aborted when a cancellation is requested (already aborted if requested before this claim). */
  readonly cancelSignal: AbortSignal;
  /** The error of the previous failed attempt, if any (its first 16,384 characters and a marker of the cut when longer). */
  readonly lastError?: string;
  /**
   * How many times the job was requeued from the dead letters
   * (`requeueDead`, a run's redrive), which resets `attempt`; absent when
   * never. With `id` and `attempt` it tells this delivery from those before
   * a requeue.
   */
  readonly requeues?: number;
  /** Whether a failure of this attempt dead-letters the job. */
  isLastAttempt(): boolean;
}

/** Options of `nack`. */
export interface NackOptions {
  /**
   * Retry no sooner than this many milliseconds from now (a server's
   * `Retry-After`, say). The queue's backoff still applies when it is longer.
   */
  retryAfterMs?: number;
  /**
   * `false` when the attempt never got to do the work (a store the worker
   * depends on was unreachable): the job goes back without the attempt
   * counting against `maxAttempts`, so it is never dead-lettered by this
   * nack, and retries after `retryAfterMs` (default 0) instead of the
   * backoff. Default `true`.
   */
  countAttempt?: boolean;
  /**
   * The thrown value behind the error text: its name and stack join the
   * message in the attempt history (each bounded, see `JobAttempt`).
   */
  cause?: unknown;
}

/** Options of `deadLetter`. */
export interface DeadLetterOptions {
  /** As `NackOptions.cause`. */
  cause?: unknown;
}

/** What `nack` did. */
export type NackOutcome = { kind: "retried"; runAt: number } | { kind: "dead"; enqueued: EnqueueOutcome[] };

/**
 * What `Queue.ackClaimingNext` needs: which of the settlement's
 * enqueues to hand to the settling worker already claimed, for how long, and
 * how to take the worker's capacity for it.
 */
export interface ClaimNext {
  /** Index into the effects' enqueues of the job to claim. */
  readonly index: number;
  /** The lease of the claim; the queue's `leaseMs` when absent. */
  readonly leaseMs?: number;
  /**
   * Called in the settlement's own turn, only when the queue would claim the
   * job: `true` takes the worker's capacity for it (the caller gives it back
   * when the settlement then hands out nothing), `false` leaves the job
   * pending for any worker. `waiting`: how many more jobs need the worker's
   * capacity first (claimed and not yet handed out, or pending ahead of
   * this one); answer `true` only with room for them as well. The queue may
   * ask again with fewer when the answer is `false`. Any other answer (1, a
   * string, a promise) is refused with `ValidationError`: the ack settles
   * nothing and the claim is still held.
   */
  reserve(waiting: number): boolean;
}

/** What `Queue.ackClaimingNext` did: the ack's enqueue outcomes, and the job claimed with it, if any. */
export interface AckedClaimingNext {
  enqueued: EnqueueOutcome[];
  /** The enqueued job at `ClaimNext.index`, claimed for the caller in the ack's commit; undefined when it was left pending. */
  next: ClaimedJob | undefined;
}

/** What `cancelJob` did. `requested`: the job is claimed, a cooperative request was recorded. */
export type CancelOutcome = "removed" | "requested" | "not_found";

/** What `wake` did. */
export type WakeOutcome = "woken" | "not_scheduled" | "not_found";

/** A job as the views show it. */
export interface JobInfo {
  id: string;
  queueName: string;
  state: JobState;
  priority: number;
  attempt: number;
  maxAttempts: number;
  /**
   * How many times the job was requeued from the dead letters
   * (`requeueDead`, a run's redrive), each of which reset `attempt`;
   * absent when never.
   */
  requeues?: number;
  headers: Record<string, string>;
  payloadSize: number;
  payloadOffloaded: boolean;
  enqueuedAt: number;
  claimedAt?: number;
  runAt?: number;
  wokenAt?: number;
  attached?: Uint8Array;
  completedAt?: number;
  failedAt?: number;
  /** The error of the last failed attempt: its first 16,384 characters, and a marker giving the original length when cut. */
  lastError?: string;
  dedupKey?: string;
  /** The debounce window the job waits in (while pending or scheduled). */
  debounceKey?: string;
  cancelRequested: boolean;
  /**
   * Why flow control holds the job back, when it does: a debounce window
   * (from the record, in any process), or, in the owning process's views,
   * a full concurrency key or a rate limit. See docs/flow-control.md.
   */
  waiting?: WaitingReason;
}

/** Why flow control holds a job back. */
export type WaitingReason =
  /** Waiting in a debounce window that ends at `until`; a later enqueue with `key` would supersede it. */
  | { reason: "debounced"; key: string; until: number }
  /** Its concurrency key `key` holds `held` of `limit` claims; `rule` names the flow rule whose limit it is, if not the queue's. */
  | { reason: "concurrency"; key: string; limit: number; held: number; rule?: string }
  /** Its rate limit key `key` admits no claim before `until`; `rule` as above. */
  | { reason: "rate_limit"; key: string; limit: number; periodMs: number; until: number; rule?: string };

export type { AttemptOutcome, JobAttempt, JobState, QueueStats } from "./record.js";

/** One page of a listing; the listing is finished when `nextCursor` is undefined. */
export interface Page<T> {
  items: T[];
  nextCursor?: string;
}

/** A caller KV entry. */
export interface KvEntry {
  key: string;
  value: Uint8Array;
}

/** How `waitForCompletion` ended. */
export type CompletionResult =
  | { kind: "done"; job?: JobInfo }
  | { kind: "dead"; job: JobInfo }
  | { kind: "cancelled" }
  /** A later enqueue with the same debounce key replaced the job before it ran (`by` is that job's id). */
  | { kind: "superseded"; by: string }
  /** The job finished before the wait and left no record (ack without retention, or cancel). */
  | { kind: "gone" }
  | { kind: "timed_out" };
