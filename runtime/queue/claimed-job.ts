/**
 * @module The `ClaimedJob` handed out by claims and its `LeaseHandle`.
 *
 * A claimed job carries a claim token that only this module and the queue
 * can read, so a job obtained any other way (a view, a copy) cannot settle.
 */
import { copyBytes } from "../bytes.js";
import { filledWithoutPrototype } from "../own-fields.js";
import type { TimedClock } from "../clock.js";
import { validateDelay } from "../time-bounds.js";
import { CancelRequestedError, ClaimLostError } from "./errors.js";
import { type Building, CANCEL_SOURCE, type CancelSource, type CancelState, SourceSlot } from "./cancel-state.js";
import type { LeaseEntry, LeaseRegistry } from "./lease-registry.js";
import type { JobRecord } from "./record.js";
import type { JobKeys } from "./transitions.js";
import type { ClaimedJob, LeaseHandle } from "./types.js";

/** Extra time `ensureAtLeast` adds, so a renewal racing the reaper still wins. */
export const LEASE_MARGIN_MS = 5000;

/**
 * The claim behind a `ClaimedJob`: which queue issued it and its lease entry.
 * Kept in the job's private cancel-source slot (see `SourceSlot`), which a
 * copy by spread does not carry, rather than in a weak map: one insert and
 * one lookup less per claimed job, and no weak entry for the collector.
 */
export class ClaimTicket implements CancelSource {
  constructor(
    readonly owner: object,
    /**
     * The lease entry the claim registered: the job id, queue name, token and
     * cancellation a settlement acts on. Read from here, not from the job
     * handed back: an object inheriting from a job can shadow its fields.
     */
    readonly claim: LeaseEntry,
    /**
     * The job was inserted already claimed by this claim (a chained claim), so
     * it has no attempt history while the claim holds: a new job has none (a
     * history goes with its job's record), and only transitions that end the
     * claim (a settlement, the reaper) append to one. An ack then skips the
     * history key's lookup, a miss on every step.
     */
    readonly historyless: boolean,
    /** The job's engine keys as the insert that claimed it wrote them (a chained claim), for its settlement (see `JobKeys`). */
    readonly keys: JobKeys | undefined,
    /** The record the claim wrote, when its exact bytes are known (`claimedBytes`), so a settlement finding those bytes unchanged need not decode them again. */
    readonly claimedRecord: JobRecord | undefined,
    readonly claimedBytes: Uint8Array | undefined,
  ) {}

  get [CANCEL_SOURCE](): CancelState {
    return this.claim;
  }

  get cancelSignal(): AbortSignal {
    return this.claim.cancelSignal;
  }
}

/**
 * A claimed job's `isLastAttempt`: one of two functions shared by every job,
 * not a closure made per claim. The answer is fixed at the claim: a job's
 * attempt counts never change while it is claimed (transitions write a copy
 * of the record), and the job's own `attempt` and `maxAttempts` are read
 * there too. Frozen, so no job can change what the others answer; called
 * detached (`const { isLastAttempt } = job`) as well as on the job.
 */
const IS_LAST_ATTEMPT: () => boolean = Object.freeze(() => true);
const NOT_LAST_ATTEMPT: () => boolean = Object.freeze(() => false);

/** The shared `isLastAttempt` of a job whose claim is (or is not) its last attempt. */
export function lastAttemptAnswer(last: boolean): () => boolean {
  return last ? IS_LAST_ATTEMPT : NOT_LAST_ATTEMPT;
}

/** Whether `f` is one of the shared `isLastAttempt` answers: a function that reads no `this`, safe to hand on detached. */
export function isSharedLastAttemptAnswer(f: unknown): f is () => boolean {
  return f === IS_LAST_ATTEMPT || f === NOT_LAST_ATTEMPT;
}

/** The headers of a job enqueued without any. */
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * The claim of `job`: the ticket in its own slot, else in the slot of the
 * job it inherits from, or of the job a Proxy forwards to. Undefined for a
 * copy or anything else.
 */
export function ticketOf(job: ClaimedJob): ClaimTicket | undefined {
  // Not an object (null from a claim that found nothing, passed on): no claim, refused as a copy is, not a TypeError here.
  if (typeof job !== "object" || job === null) return undefined;
  const t = SourceSlot.sourceIn(job);
  if (t !== undefined) return t instanceof ClaimTicket ? t : undefined;
  return ticketAlongChain(job);
}

/** How many prototypes `ticketAlongChain` looks through: a Proxy's trap can make a chain without end. */
const MAX_CHAIN = 64;

/**
 * The ticket of the job `o` inherits from or is a Proxy of. A private slot
 * shows through neither, where the hidden symbol slot it replaces showed
 * through both, so both are looked for here, off the claimed job's own path.
 */
function ticketAlongChain(o: object): ClaimTicket | undefined {
  let at: object | null = o;
  for (let hops = 0; at !== null && hops < MAX_CHAIN; hops++) {
    const t = SourceSlot.sourceIn(at);
    if (t !== undefined) return t instanceof ClaimTicket ? t : undefined;
    // A Proxy of a claimed job: the platform refuses a trap that reports another accessor or lease than the
    // frozen job's own, and a copy by spread holds the signal read, not the accessor.
    if (Object.getOwnPropertyDescriptor(at, "cancelSignal")?.get === CANCEL_SIGNAL.get) {
      const lease: unknown = (at as ClaimedJob).lease;
      return lease instanceof Lease ? Lease.ticketOf(lease) : undefined;
    }
    at = Object.getPrototypeOf(at);
  }
  return undefined;
}

// One getter and descriptor for every claimed job, so V8 reuses one hidden-class transition for them all.
const CANCEL_SIGNAL = {
  get(this: ClaimedJob): AbortSignal {
    // Called on anything but a job (the getter taken off one): the TypeError reading a property of undefined.
    return (ticketOf(this) as ClaimTicket).cancelSignal;
  },
  enumerable: true,
} satisfies PropertyDescriptor;

class Lease implements LeaseHandle {
  #last: number;
  /** The claim of the job that holds this lease: found through it when the job is reached through a Proxy (see `ticketAlongChain`). */
  readonly #ticket: ClaimTicket;
  constructor(
    private readonly registry: LeaseRegistry,
    private readonly clock: TimedClock,
    private readonly id: string,
    private readonly token: number,
    expiresAt: number,
    ticket: ClaimTicket,
  ) {
    this.#last = expiresAt;
    this.#ticket = ticket;
  }

  static ticketOf(lease: Lease): ClaimTicket {
    return lease.#ticket;
  }

  get expiresAt(): number {
    const e = this.registry.holds(this.id, this.token);
    if (e !== undefined) this.#last = e.expiresAt;
    return this.#last;
  }

  async ensureAtLeast(ms: number): Promise<void> {
    const e = this.registry.holds(this.id, this.token);
    if (e === undefined) throw new ClaimLostError(this.id, "its lease ended before it was extended");
    if (e.requested) throw new CancelRequestedError(this.id);
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

/**
 * `stored`: the bytes the claim wrote for `r`, when known (see `ClaimTicket.claimed`); `historyless` and `keys`: see `ClaimTicket`.
 * `payloadOwned`: `payload` is an array made for this job alone, exactly its bytes (a chained claim's, see
 * `PreparedEnqueue.payloadOwned`): handed out as it is, its `buffer` not read (for an array of 64 B or less
 * that read moves its bytes out of V8's heap, about 250 ns).
 */
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
  payloadOwned = false,
): ClaimedJob {
  // The record the ticket keeps (below) shares the copies, so it holds no chunk either.
  const own = payloadOwned ? payload : ownBytes(payload);
  if (r.payload === payload) r.payload = own;
  if (r.attached !== undefined) r.attached = ownBytes(r.attached);
  const headers = r.headers === undefined ? NO_HEADERS : Object.freeze(r.headers);
  const claimedAt = r.claimedAt ?? clock.now();
  // Made only when read: most claims are never cancelled and most workers never look (see `CancelState`).
  const ticket = new ClaimTicket(owner, entry, historyless, keys, stored === undefined ? undefined : r, stored);
  const lease = new Lease(registry, clock, r.id, entry.token, entry.expiresAt, ticket);
  const job = prototypeHoldsClaimedJobField()
    ? filledWithoutPrototype(claimedJobFields, r, own, headers, claimedAt, lease, ticket)
    : new ClaimedJobFields(r, own, headers, claimedAt, lease, ticket);
  return Object.freeze(job);
}

/**
 * Whether `Object.prototype` holds the name of a field the constructor
 * assigns: an accessor there would take the assignment (its setter given
 * the job's headers or payload, the job left without them) and a read-only
 * field would refuse it. Each name written out: a few ns per claim.
 */
function prototypeHoldsClaimedJobField(): boolean {
  const p = Object.prototype;
  return (
    "id" in p ||
    "queueName" in p ||
    "payload" in p ||
    "headers" in p ||
    "attempt" in p ||
    "requeues" in p ||
    "maxAttempts" in p ||
    "priority" in p ||
    "enqueuedAt" in p ||
    "claimedAt" in p ||
    "lease" in p ||
    "attached" in p ||
    "wokenAt" in p ||
    "lastError" in p ||
    "isLastAttempt" in p
  );
}

/**
 * A claimed job's fields, in their key order, unfrozen. Fields assigned, not spread: built once
 * per claim, and a literal with spreads takes a slow path in V8. Built by `new`: V8 then sizes
 * the object for every field this constructor assigns, where a literal of the first ten grew a
 * separate property store for the rest. Its prototype is `Object.prototype` (set below), so the
 * job is a plain object as before: the same prototype, `constructor`, keys and descriptors.
 */
function claimedJobFields(
  this: Building<ClaimedJob>,
  r: JobRecord,
  payload: Uint8Array,
  headers: Readonly<Record<string, string>>,
  claimedAt: number,
  lease: LeaseHandle,
  ticket: ClaimTicket,
): void {
  this.id = r.id;
  this.queueName = r.queue;
  this.payload = payload;
  // The record's own, frozen, not copied: a record's headers are the queue's (an insert copies the enqueue's,
  // a decode makes new ones) and no transition writes into them, so the job and its record can share them.
  this.headers = headers;
  this.attempt = r.attempts;
  this.maxAttempts = r.maxAttempts;
  this.priority = r.priority;
  this.enqueuedAt = r.enqueuedAt;
  this.claimedAt = claimedAt;
  this.lease = lease;
  Object.defineProperty(this, "cancelSignal", CANCEL_SIGNAL);
  SourceSlot.give(this, ticket);
  if (r.attached !== undefined) this.attached = r.attached;
  if (r.wokenAt !== undefined) this.wokenAt = r.wokenAt;
  if (r.lastError !== undefined) this.lastError = r.lastError;
  if (r.requeues !== undefined) this.requeues = r.requeues;
  this.isLastAttempt = lastAttemptAnswer(r.attempts >= r.maxAttempts);
}
claimedJobFields.prototype = Object.prototype;
const ClaimedJobFields = claimedJobFields as unknown as new (...args: Parameters<typeof claimedJobFields>) => Building<ClaimedJob>;
