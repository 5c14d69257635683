/**
 * @module The `ClaimedJob` handed out by claims and its `LeaseHandle`.
 *
 * A claimed job carries a claim token that only this module and the queue
 * can read, so a job obtained any other way (a view, a copy) cannot settle.
 */
import { copyBytes } from "../bytes.js";
import type { TimedClock } from "../clock.js";
import { validateDelay } from "../time-bounds.js";
import { CancelRequestedError, ClaimLostError } from "./errors.js";
import { type Building, defineCancelSignal } from "./cancel-state.js";
import type { LeaseEntry, LeaseRegistry } from "./lease-registry.js";
import type { JobRecord } from "./record.js";
import type { JobKeys } from "./transitions.js";
import type { ClaimedJob, LeaseHandle } from "./types.js";

/** Extra time `ensureAtLeast` adds, so a renewal racing the reaper still wins. */
export const LEASE_MARGIN_MS = 5000;

/** The claim behind a `ClaimedJob`: which queue issued it and its token. */
export interface ClaimTicket {
  readonly owner: object;
  readonly token: number;
  /** The record the claim wrote and the exact bytes it stored, so a settlement finding those bytes unchanged need not decode them again. */
  readonly claimed?: { readonly record: JobRecord; readonly bytes: Uint8Array };
  /**
   * The job was inserted already claimed by this claim (a chained claim), so
   * it has no attempt history while the claim holds: a new job has none (a
   * history goes with its job's record), and only transitions that end the
   * claim (a settlement, the reaper) append to one. An ack then skips the
   * history key's lookup, a miss on every step.
   */
  readonly historyless?: boolean;
  /** The job's engine keys as the insert that claimed it wrote them (a chained claim), for its settlement (see `JobKeys`). */
  readonly keys?: JobKeys;
}

/** The headers of a job enqueued without any. */
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * The ticket of `job`: kept by its lease, for the job object the claim
 * handed out only (a copy shares the lease, not the identity).
 *
 * Not a `WeakMap` keyed by the job: V8's young-generation collection keeps
 * a weak map's values alive whatever becomes of their keys, so every
 * ticket (the claimed record, its stored bytes, the payload copy) outlived
 * its job by a collection and most reached the old generation; at 128
 * claims in flight that was about a sixth of the bytes a drain promoted
 * per claim, and the old generation's growth between mark-compacts, which
 * sets the heap's peak, a fifth more. Held by the lease, a ticket dies
 * with its job.
 */
export function ticketOf(job: ClaimedJob): ClaimTicket | undefined {
  const lease: unknown = job.lease;
  return lease instanceof Lease ? Lease.ticketOf(lease, job) : undefined;
}

class Lease implements LeaseHandle {
  #last: number;
  /** The job this lease was issued with, and its ticket (see `ticketOf`). */
  #job: object | undefined;
  #ticket: ClaimTicket | undefined;

  static issue(lease: Lease, job: object, ticket: ClaimTicket): void {
    lease.#job = job;
    lease.#ticket = ticket;
  }

  static ticketOf(lease: Lease, job: object): ClaimTicket | undefined {
    return lease.#job === job ? lease.#ticket : undefined;
  }

  constructor(
    private readonly registry: LeaseRegistry,
    private readonly clock: TimedClock,
    private readonly id: string,
    private readonly token: number,
    expiresAt: number,
  ) {
    this.#last = expiresAt;
  }

  get expiresAt(): number {
    const e = this.registry.holds(this.id, this.token);
    if (e !== undefined) this.#last = e.expiresAt;
    return this.#last;
  }

  async ensureAtLeast(ms: number): Promise<void> {
    const e = this.registry.holds(this.id, this.token);
    if (e === undefined) throw new ClaimLostError(this.id, "its lease ended before it was extended");
    if (e.cancel.requested) throw new CancelRequestedError(this.id);
    validateDelay("ensureAtLeast's lease extension", ms);
    this.registry.extend(e, this.clock.now() + ms + LEASE_MARGIN_MS);
    this.#last = e.expiresAt;
  }
}

/** A lease bound to no queue, for tests of code that takes a `LeaseHandle`. */
export function detachedLease(expiresAt = Number.MAX_SAFE_INTEGER): LeaseHandle {
  return { expiresAt, ensureAtLeast: async () => {} };
}

/**
 * `v`, or a copy of it when it is a view into a larger buffer: a record read
 * before a checkpoint paged it sits in one of the engine's shared 64 KiB
 * chunks (`ValueArena`), and a worker may hold its job for hours; the view
 * would keep the whole chunk alive, every other value in it included.
 */
function ownBytes(v: Uint8Array): Uint8Array {
  return v.byteLength === v.buffer.byteLength ? v : copyBytes(v);
}

/** `stored`: the bytes the claim wrote for `r`, when known (see `ClaimTicket.claimed`); `historyless` and `keys`: see `ClaimTicket`. */
export function makeClaimedJob(
  owner: object,
  registry: LeaseRegistry,
  clock: TimedClock,
  r: JobRecord,
  entry: LeaseEntry,
  payload: Uint8Array,
  stored?: Uint8Array,
  historyless = false,
  keys?: JobKeys,
): ClaimedJob {
  // The record the ticket keeps (below) shares the copies, so it holds no chunk either.
  const own = ownBytes(payload);
  const lease = new Lease(registry, clock, r.id, entry.token, entry.expiresAt);
  if (r.payload === payload) r.payload = own;
  if (r.attached !== undefined) r.attached = ownBytes(r.attached);
  // Fields listed and the optional ones assigned, not spread: built once per claim, and a
  // literal with spreads takes a slow path in V8. The keys keep their order.
  const job: Omit<Building<ClaimedJob>, "isLastAttempt" | "cancelSignal"> & Partial<Pick<Building<ClaimedJob>, "isLastAttempt" | "cancelSignal">> = {
    id: r.id,
    queueName: r.queue,
    payload: own,
    headers: r.headers === undefined ? NO_HEADERS : Object.freeze({ ...r.headers }),
    attempt: r.attempts,
    maxAttempts: r.maxAttempts,
    priority: r.priority,
    enqueuedAt: r.enqueuedAt,
    claimedAt: r.claimedAt ?? clock.now(),
    lease,
  };
  // Made only when read: most claims are never cancelled and most workers never look (see `CancelState`).
  defineCancelSignal(job, entry.cancel);
  if (r.attached !== undefined) job.attached = r.attached;
  if (r.wokenAt !== undefined) job.wokenAt = r.wokenAt;
  if (r.lastError !== undefined) job.lastError = r.lastError;
  job.isLastAttempt = () => r.attempts >= r.maxAttempts;
  Lease.issue(
    lease,
    job,
    stored === undefined
      ? { owner, token: entry.token, historyless, keys }
      : { owner, token: entry.token, claimed: { record: r, bytes: stored }, historyless, keys },
  );
  return Object.freeze(job as ClaimedJob);
}
