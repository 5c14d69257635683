/**
 * @module The owner lease and the shard layout over stores whose listings
 * ignore start-after (list from the start whatever they are asked) or the
 * prefix, or list each key twice: lease objects are compared by number, so
 * a claim is not voided by itself, a holder is not ended by its own object,
 * and the election elects one owner that keeps its term through renewals;
 * a store name's folders are read by what they hold, not by what the store
 * lists beside them.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, type ListedObject, type ListOptions, type ObjectStore } from "taquba";
import { createLease, leaseKey, newerLeaseExists, readNewestLease } from "../../runtime/cluster/lease-chain.js";
import { createShards } from "../../runtime/cluster/shard-workers.js";
import { readOwners } from "../../runtime/cluster/owners-status.js";
import { DisorderedListings } from "../support/disordered-listings.js";
import { RENEW, settle, startedTerm } from "../support/owner-election.js";

/** `inner` whose listings start at the store's first key under the prefix (`ignore: "start-after"`) or at its first key at all (`"prefix"`). */
function ignoring(inner: MemoryStore, ignore: "start-after" | "prefix"): ObjectStore {
  return {
    get: (k) => inner.get(k),
    put: (...args) => inner.put(...args),
    delete: (k) => inner.delete(k),
    list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
      return ignore === "prefix" ? inner.list("", opts) : inner.list(prefix);
    },
  };
}

const FALLBACK = { leaseDurationMs: 3_000, renewIntervalMs: 1_000 };
const record = (holder: string) => ({ holder, released: false, ...FALLBACK, writtenAt: 0 });

const stores: [string, (inner: MemoryStore) => ObjectStore][] = [
  ["ignores start-after", (inner) => ignoring(inner, "start-after")],
  ["ignores the prefix", (inner) => ignoring(inner, "prefix")],
  ["lists each key twice", (inner) => new DisorderedListings(inner, "each key twice")],
];

describe("the owner lease over listings that depart from the store contract", () => {
  for (const [name, make] of stores) {
    it(`compares lease objects by number when the store ${name}`, async () => {
      const inner = new MemoryStore();
      const store = make(inner);
      // Another election's lease objects beside this one's, sorting after it.
      await inner.put(leaseKey("zz/", 9), new Uint8Array([1]));
      for (let n = 0; n <= 2; n++) expect(await createLease(store, "app/", n, record("a"))).toBe(true);
      expect(await newerLeaseExists(store, "app/", 2)).toBe(false);
      expect(await newerLeaseExists(store, "app/", 1)).toBe(true);
      expect(await readNewestLease(store, "app/", FALLBACK, 2)).toBeUndefined();
      expect((await readNewestLease(store, "app/", FALLBACK, 0))?.n).toBe(2);
      expect((await readNewestLease(store, "app/", FALLBACK))?.n).toBe(2);
    });

    it(`one process claims the lease and keeps its term through renewals when the store ${name}`, async () => {
      const inner = new MemoryStore();
      const { election, term, clock } = await startedTerm(make(inner));
      expect(term.leaseNumber).toBe(0);
      for (let i = 0; i < 6; i++) {
        clock.advance(RENEW);
        await settle();
      }
      expect(term.signal.aborted).toBe(false);
      expect(election.state).toBe("owner");
      await election.stop();
    });
  }

  it("shards a new store name and reads its owners when the store lists keys outside the prefix", async () => {
    const inner = new MemoryStore();
    const store = ignoring(inner, "prefix");
    // Another store name's queue and inbox request, sorting before and after the new one's folders.
    await inner.put("a/db/manifest/00000000000000000001", new Uint8Array([1]));
    await inner.put("z/inbox/workflow-steps/01ARZ3NDEKTSV4RRFFQ69G5FAV", new Uint8Array([1]));
    expect(await createShards(store, "m", 2)).toEqual({ shards: 2 });
    const owners = await readOwners(store, "m");
    expect(owners.map((o) => [o.shard, o.owner, o.backlog, o.inbox.requests])).toEqual([
      [0, null, null, 0],
      [1, null, null, 0],
    ]);
  });
});
