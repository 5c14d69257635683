/**
 * @module Attack on the owner lease: lease objects deleted or overwritten
 * under a running owner (a lifecycle rule, an operator's clean-up), or a
 * stray object far above the chain, never leave two processes running the
 * owner's work for longer than one renewal interval, and the election
 * settles on one owner again.
 * MockClock over a MemoryStore.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock, type ObjectStore } from "taquba";
import { runOwnerElection, type OwnerElection } from "../../runtime/cluster/owner-election.js";
import { testRandom } from "../support/seed.js";

const quiet = { error: () => undefined, warn: () => undefined, info: () => undefined };
const LEASE = 3_000;
const RENEW = 1_000;

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
}

async function leaseKeys(store: ObjectStore): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list("app/lease/")) out.push(o.key);
  return out;
}

/** Processes in one election, counting how many run the owner's work at once, and for how long two did. */
function cluster(store: ObjectStore, clock: MockClock) {
  let running = 0;
  let doubleSince: number | undefined;
  let longestDouble = 0;
  const note = () => {
    if (running > 1) doubleSince ??= clock.now();
    else if (doubleSince !== undefined) {
      longestDouble = Math.max(longestDouble, clock.now() - doubleSince);
      doubleSince = undefined;
    }
  };
  const nodes: OwnerElection[] = [];
  return {
    nodes,
    join(id: string) {
      nodes.push(
        runOwnerElection(store, "app", {
          processId: id,
          clock,
          leaseDurationMs: LEASE,
          renewIntervalMs: RENEW,
          logger: quiet,
          start: async () => {
            running++;
            note();
            return {
              stop: async () => {
                running--;
                note();
              },
            };
          },
        }),
      );
    },
    owners: () => nodes.filter((n) => n.state === "owner").length,
    running: () => running,
    longestDouble: () => (doubleSince === undefined ? longestDouble : Math.max(longestDouble, clock.now() - doubleSince)),
  };
}

async function advance(clock: MockClock, ms: number, step = 25): Promise<void> {
  for (let t = 0; t < ms; t += step) {
    clock.advance(step);
    await settle();
  }
}

describe("attack: lease objects deleted under a running owner", () => {
  it("the lease folder emptied, then a process starts: at most one renewal interval with two owners, then one owner", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    const c = cluster(store, clock);
    c.join("a");
    // Half way between two renewals of a: b starts, lists an empty folder and claims before a renews.
    await advance(clock, 2 * RENEW + RENEW / 2);
    expect(c.owners()).toBe(1);
    for (const k of await leaseKeys(store)) await store.delete(k);
    c.join("b");
    await settle();
    expect(c.owners(), "b claimed lease 0 of the emptied folder while a holds the lease").toBe(2);
    await advance(clock, 10 * LEASE);
    expect(c.longestDouble(), "mock ms with two processes running the owner's work").toBeLessThanOrEqual(RENEW);
    expect(c.owners(), "owners after the election settled").toBe(1);
    expect(c.running()).toBe(1);
    await Promise.all(c.nodes.map((n) => n.stop()));
  });

  it("a stray object far above the chain: a standby claims above it, and the holder stops within a renewal interval of that", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    const c = cluster(store, clock);
    c.join("a");
    c.join("b");
    await advance(clock, 3 * LEASE);
    expect(c.owners()).toBe(1);
    await store.put("app/lease/00000000000000000999", new TextEncoder().encode("{stray"));
    c.join("c");
    await advance(clock, 10 * LEASE);
    expect(c.longestDouble(), "mock ms with two processes running the owner's work").toBeLessThanOrEqual(RENEW);
    expect(c.owners()).toBe(1);
    await Promise.all(c.nodes.map((n) => n.stop()));
  });

  it("lease objects deleted or overwritten with garbage at random points while three processes run: one owner again each time", async () => {
    const { seed, random } = testRandom("lease tampering");
    console.log(`lease tampering: seed ${seed} (TAQUBA_TEST_SEED replays it)`);
    const store = new MemoryStore();
    const clock = new MockClock();
    const c = cluster(store, clock);
    for (const id of ["a", "b", "c"]) c.join(id);
    await advance(clock, 2 * LEASE);
    for (let round = 0; round < 40; round++) {
      const keys = await leaseKeys(store);
      for (const k of keys) {
        const r = random();
        if (r < 0.4) await store.delete(k);
        else if (r < 0.6) await store.put(k, new TextEncoder().encode("{garbage"));
      }
      // Sometimes a process restarts: it reads the lease afresh.
      if (random() < 0.5) {
        const i = Math.floor(random() * c.nodes.length);
        const old = c.nodes[i]!;
        c.nodes.splice(i, 1);
        await old.stop();
        c.join(`r${round}`);
      }
      await advance(clock, Math.floor(random() * 3 * RENEW));
    }
    await advance(clock, 6 * LEASE);
    // Deletions that keep coming can hide the holder's newest object from a check or two; a term looks for a lease duration.
    expect(c.longestDouble(), "mock ms with two processes running the owner's work").toBeLessThanOrEqual(LEASE + RENEW);
    expect(c.owners()).toBe(1);
    expect(c.running()).toBe(1);
    await Promise.all(c.nodes.map((n) => n.stop()));
  });
});
