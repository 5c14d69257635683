/**
 * @module Attacks on the owner lease chain: objects in the lease folder
 * whose names look like lease numbers past what a number holds exactly,
 * and lease objects damaged in ways that still parse. The election must
 * ignore what is not a lease, wait no longer than an hour for what it
 * cannot read, and end with exactly one owner.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, type ObjectStore } from "taquba";
import { runOwnerElection, type OwnerElection } from "../../runtime/cluster/owner-election.js";
import { decodeLeaseRecord, leaseKey, parseLeaseKey } from "../../runtime/cluster/lease-chain.js";
import { LEASE, RENEW, settle } from "../support/owner-election.js";

const quiet = { error: () => undefined, warn: () => undefined, info: () => undefined };

/** A store that refuses listings past `max` (so a process listing in a loop fails instead of spinning for ever). */
class ListingBudget implements ObjectStore {
  listings = 0;
  constructor(
    readonly inner: ObjectStore,
    readonly max: number,
  ) {}
  get(key: string) {
    return this.inner.get(key);
  }
  put(key: string, body: Uint8Array, opts?: { ifNoneMatch?: "*" }) {
    return this.inner.put(key, body, opts);
  }
  delete(key: string) {
    return this.inner.delete(key);
  }
  async *list(prefix: string, opts?: { startAfter?: string }) {
    if (++this.listings > this.max) throw new Error(`more than ${this.max} listings`);
    yield* this.inner.list(prefix, opts);
  }
}

function elect(store: ObjectStore, clock: MockClock, id: string): { election: OwnerElection; terms: number[] } {
  const terms: number[] = [];
  const election = runOwnerElection(store, "app", {
    processId: id,
    clock,
    leaseDurationMs: LEASE,
    renewIntervalMs: RENEW,
    logger: quiet,
    start: async (term) => {
      terms.push(term.leaseNumber);
      return { stop: async () => undefined };
    },
  });
  return { election, terms };
}

const enc = (s: string) => new TextEncoder().encode(s);

describe("owner lease: stray objects named like lease numbers no number holds exactly", () => {
  it("are not leases: the election ignores them and claims the lease instead of listing for ever", async () => {
    for (const tail of ["99999999999999999999", "09007199254740993000", "00009007199254740993"]) {
      expect(parseLeaseKey("app/", `app/lease/${tail}`), tail).toBeUndefined();
      const inner = new MemoryStore();
      await inner.put(`app/lease/${tail}`, enc("stray"));
      const store = new ListingBudget(inner, 200);
      const clock = new MockClock(1_000_000);
      const a = elect(store, clock, "a");
      for (let i = 0; i < 20 && a.election.state !== "owner"; i++) {
        clock.advance(RENEW);
        await settle();
      }
      expect(a.election.state, `with a stray lease/${tail}`).toBe("owner");
      expect(a.terms).toEqual([0]);
      await a.election.stop();
    }
    // A number that fits is still read as one.
    expect(parseLeaseKey("app/", leaseKey("app/", 9_007_199_254_740_991))).toBe(9_007_199_254_740_991);
  });
});

describe("owner lease: damaged records that still parse", () => {
  it("wait at most the holder's duration capped to an hour, never less than a lease can be", () => {
    const fallback = { leaseDurationMs: LEASE, renewIntervalMs: RENEW };
    const rec = (fields: Record<string, unknown>) =>
      decodeLeaseRecord(enc(JSON.stringify({ v: 1, holder: "x", released: false, renewIntervalMs: 100, ...fields })), fallback);
    expect(rec({ leaseDurationMs: 1e30 }).leaseDurationMs).toBe(3_600_000);
    // A damaged duration of a fraction of a millisecond would let a standby take over from a live holder at once.
    expect(rec({ leaseDurationMs: 1e-9 }).leaseDurationMs).toBe(100);
    expect(rec({ leaseDurationMs: 250 }).leaseDurationMs).toBe(250);
    for (const bad of [0, -1, "5", null]) expect(rec({ leaseDurationMs: bad }).holder, String(bad)).toBe("(unreadable lease object)");
  });
});
