/**
 * @module In-memory leases of the jobs this process has claimed.
 *
 * Leases are never persisted: after a restart every claimed record is
 * requeued by recovery, so a dead process's leases are void anyway. Each
 * entry carries a claim token that fences settlement (a settlement must
 * present the token of the live claim) and the cancellation state behind
 * `ClaimedJob.cancelSignal`.
 */
import { ConcurrencySlots, RateWindows } from "./admission.js";
import { CancelState } from "./cancel-state.js";
import { ExpiryHeap } from "./expiry-heap.js";

/**
 * One live claim held by this process, and its cancellation: the entry is
 * its own `CancelState` rather than holding one, so a claim costs one object
 * (most are never cancelled, and a step claims one per run step).
 */
export class LeaseEntry extends CancelState {
  constructor(
    readonly id: string,
    readonly queue: string,
    readonly token: number,
    public expiresAt: number,
    /** The concurrency slots the claim holds (see `admission`), released with the lease. */
    readonly slots: readonly string[] | undefined,
  ) {
    super();
  }

  /** False once the registry removed or replaced the entry: its expiry nodes are then stale. */
  held = true;

  /**
   * The queue's `foreignCommits` right after the claim's commit wrote the
   * record its ticket keeps, or -1 once anything else wrote the record (a
   * cancel's flag) or when the claim kept none. While it equals
   * `foreignCommits`, the stored record is still the one the claim wrote,
   * and a settlement may act on the kept record without reading it.
   */
  recordAt = -1;
}

/** Whether a lease is still held. One function for every registry: a closure made per queue is another call target to V8's code for the heap. */
function leaseHeld(e: LeaseEntry): boolean {
  return e.held;
}

/** Lease entries by job id, plus an expiry-ordered index for the reaper. */
export class LeaseRegistry {
  readonly #byId = new Map<string, LeaseEntry>();
  /**
   * Expiry order for the reaper. A heap whose stale nodes (a lease removed
   * or extended) are skipped when they come to its top: a claim and its
   * settlement, once per job, cost a push that most often moves nothing
   * (leases of one queue expire in the order they were taken) and a map
   * delete, where an ordered tree cost two ordered updates and a key string.
   */
  // An entry's own flag, not a map look-up by its id: the heap checks each node it drops.
  readonly #byExpiry = new ExpiryHeap<LeaseEntry>(leaseHeld);
  #nextToken = 1;
  /** Concurrency slots held by these leases. */
  readonly slots = new ConcurrencySlots();
  /** Recent claim times per rate-limited key. */
  readonly windows = new RateWindows();
  /** Called with the queue name when a lease holding a concurrency slot goes, so a waiting worker claims again. */
  onSlotReleased: ((queue: string) => void) | undefined;

  get size(): number {
    return this.#byId.size;
  }

  /** Nodes of the expiry order, stale ones included (for tests). */
  get expiryNodes(): number {
    return this.#byExpiry.nodeCount;
  }

  /** Registers a new claim and returns its entry. Replaces any older entry for the id. */
  add(id: string, queue: string, expiresAt: number, cancelled: boolean, slots?: readonly string[]): LeaseEntry {
    this.remove(id);
    const e = new LeaseEntry(id, queue, this.#nextToken++, expiresAt, slots);
    if (cancelled) e.request(new Error(`cancellation of job ${id} was requested`));
    this.#byId.set(id, e);
    this.#byExpiry.push(expiresAt, e);
    return e;
  }

  get(id: string): LeaseEntry | undefined {
    return this.#byId.get(id);
  }

  /** The live entry of `id` if it still carries `token`. */
  holds(id: string, token: number): LeaseEntry | undefined {
    const e = this.#byId.get(id);
    return e !== undefined && e.token === token ? e : undefined;
  }

  /**
   * Whether `e` is still the live entry of job `id`, as `holds(id, e.token)`
   * answers, without the map look-up: an entry is in the map under its own
   * id exactly while `held` (only `remove` and `clear` take one out, and
   * both clear it), and tokens are never reused. A settlement checks the
   * entry its claim kept.
   */
  holdsEntry(e: LeaseEntry, id: string): boolean {
    return e.held && e.id === id;
  }

  extend(e: LeaseEntry, expiresAt: number): void {
    if (expiresAt <= e.expiresAt) return;
    e.expiresAt = expiresAt;
    // A removed entry has no node to move.
    if (!e.held) return;
    // The node at the old expiry goes stale (its time is no longer the entry's).
    this.#byExpiry.stale();
    this.#byExpiry.push(expiresAt, e);
  }

  remove(id: string): void {
    const e = this.#byId.get(id);
    if (e === undefined) return;
    this.#byId.delete(id);
    e.held = false;
    this.#byExpiry.stale();
    if (e.slots !== undefined) {
      for (const slot of e.slots) this.slots.release(slot);
      this.onSlotReleased?.(e.queue);
    }
  }

  /** The earliest expiry, if any lease is held. */
  nextExpiry(): number | undefined {
    return this.#byExpiry.min()?.expiresAt;
  }

  /** Entries whose lease expired at or before `now`, earliest first. */
  expired(now: number, limit: number): LeaseEntry[] {
    return this.#byExpiry.upTo(now, limit);
  }

  clear(): void {
    for (const e of this.#byId.values()) e.held = false;
    this.#byId.clear();
    this.#byExpiry.clear();
    this.slots.clear();
    this.windows.clear();
  }
}
