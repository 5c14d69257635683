/**
 * @module In-memory leases of the jobs this process has claimed.
 *
 * Leases are never persisted: after a restart every claimed record is
 * requeued by recovery, so a dead process's leases are void anyway. Each
 * entry carries a claim token that fences settlement (a settlement must
 * present the token of the live claim) and the cancellation state behind
 * `ClaimedJob.cancelSignal`.
 */
import { BTree } from "../store/btree.js";
import { padTime } from "./keys.js";
import { ConcurrencySlots, RateWindows } from "./admission.js";
import { CancelState } from "./cancel-state.js";

/** One live claim held by this process. */
export interface LeaseEntry {
  readonly id: string;
  readonly queue: string;
  readonly token: number;
  expiresAt: number;
  readonly cancel: CancelState;
  /** The concurrency slots the claim holds (see `admission`), released with the lease. */
  readonly slots?: readonly string[];
  /** The entry's key in the expiry index, kept so that removing it (once per claim) does not build it again. */
  expiryKey: string;
}

/** The expiry index key of the lease of `id` expiring at `expiresAt`. */
function expiryKeyOf(expiresAt: number, id: string): string {
  return `${padTime(expiresAt)}/${id}`;
}

/** Lease entries by job id, plus an expiry-ordered index for the reaper. */
export class LeaseRegistry {
  readonly #byId = new Map<string, LeaseEntry>();
  // Ordered by UTF-16 code units: the order among leases of the same millisecond does not matter, and
  // this is several times cheaper than the library's default comparator, which handles mixed key types.
  readonly #byExpiry = new BTree<string, string>(undefined, (a, b) => (a < b ? -1 : a > b ? 1 : 0));
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

  /** Registers a new claim and returns its entry. Replaces any older entry for the id. */
  add(id: string, queue: string, expiresAt: number, cancelled: boolean, slots?: readonly string[]): LeaseEntry {
    this.remove(id);
    const cancel = new CancelState();
    if (cancelled) cancel.request(new Error(`cancellation of job ${id} was requested`));
    const expiryKey = expiryKeyOf(expiresAt, id);
    const e: LeaseEntry =
      slots === undefined
        ? { id, queue, token: this.#nextToken++, expiresAt, cancel, expiryKey }
        : { id, queue, token: this.#nextToken++, expiresAt, cancel, slots, expiryKey };
    this.#byId.set(id, e);
    this.#byExpiry.set(expiryKey, id);
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

  extend(e: LeaseEntry, expiresAt: number): void {
    if (expiresAt <= e.expiresAt) return;
    this.#byExpiry.delete(e.expiryKey);
    e.expiresAt = expiresAt;
    e.expiryKey = expiryKeyOf(expiresAt, e.id);
    this.#byExpiry.set(e.expiryKey, e.id);
  }

  remove(id: string): void {
    const e = this.#byId.get(id);
    if (e === undefined) return;
    this.#byId.delete(id);
    this.#byExpiry.delete(e.expiryKey);
    if (e.slots !== undefined) {
      for (const slot of e.slots) this.slots.release(slot);
      this.onSlotReleased?.(e.queue);
    }
  }

  /** The earliest expiry, if any lease is held. */
  nextExpiry(): number | undefined {
    const k = this.#byExpiry.minKey();
    if (k === undefined) return undefined;
    return this.#byId.get(this.#byExpiry.get(k)!)?.expiresAt;
  }

  /** Entries whose lease expired at or before `now`, earliest first. */
  expired(now: number, limit: number): LeaseEntry[] {
    const out: LeaseEntry[] = [];
    for (const [, id] of this.#byExpiry.entries()) {
      const e = this.#byId.get(id);
      if (e === undefined) continue;
      if (e.expiresAt > now || out.length >= limit) break;
      out.push(e);
    }
    return out;
  }

  clear(): void {
    this.#byId.clear();
    this.#byExpiry.clear();
    this.slots.clear();
    this.windows.clear();
  }
}
