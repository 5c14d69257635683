/**
 * @module The owner lease on a MockClock over a MemoryStore: claiming,
 * renewing, standing by, takeover on expiry within a lease duration plus
 * one renewal interval, release on a graceful stop, a paused owner fenced
 * by the engine, damaged lease objects, absurd timings and failing starts.
 */
import { describe, expect, it } from "vitest";
import { FencedError, MemoryStore, MockClock, Queue, ValidationError, withCounting, withFaults, type ObjectStore } from "taquba";
import { runOwnerElection, type OwnerElection, type OwnerElectionOptions } from "../../runtime/cluster/owner-election.js";
import { encodeLeaseRecord, leaseKey } from "../../runtime/cluster/lease-chain.js";
import { until } from "../support/until.js";
import { LEASE, RENEW, settle } from "../support/owner-election.js";

const quiet = { error: () => undefined };

/** A store whose every call waits while `paused`, as a process stopped by SIGSTOP would. */
class PausableStore implements ObjectStore {
  paused = false;
  #resume: Array<() => void> = [];
  constructor(readonly inner: ObjectStore) {}
  resume(): void {
    this.paused = false;
    for (const r of this.#resume.splice(0)) r();
  }
  async #gate(): Promise<void> {
    while (this.paused) await new Promise<void>((r) => this.#resume.push(r));
  }
  async get(key: string) {
    await this.#gate();
    return this.inner.get(key);
  }
  async put(key: string, body: Uint8Array, opts?: { ifNoneMatch?: "*" }) {
    await this.#gate();
    return this.inner.put(key, body, opts);
  }
  async delete(key: string) {
    await this.#gate();
    return this.inner.delete(key);
  }
  async *list(prefix: string, opts?: { startAfter?: string }) {
    await this.#gate();
    yield* this.inner.list(prefix, opts);
  }
}

interface Node {
  election: OwnerElection;
  log: string[];
}

function node(store: ObjectStore, clock: MockClock, id: string, extra: Partial<OwnerElectionOptions> = {}): Node {
  const log: string[] = [];
  const election = runOwnerElection(store, "app", {
    processId: id,
    clock,
    leaseDurationMs: LEASE,
    renewIntervalMs: RENEW,
    logger: quiet,
    start: async (term) => {
      log.push(`start ${term.leaseNumber}`);
      return { stop: async () => void log.push("stop") };
    },
    ...extra,
  });
  return { election, log };
}

async function leaseKeys(store: ObjectStore): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list("app/lease/")) out.push(o.key);
  return out;
}

/** Advances in steps of `step` ms until `cond()` holds; returns the time it took. */
async function advanceUntil(clock: MockClock, cond: () => boolean, maxMs: number, step = 50): Promise<number> {
  const from = clock.now();
  await settle();
  while (!cond()) {
    if (clock.now() - from > maxMs) throw new Error(`condition not met within ${maxMs} ms of mock time`);
    clock.advance(step);
    await settle();
  }
  return clock.now() - from;
}

/** The scenario most cases start from: process "a" on a fresh MemoryStore and MockClock, settled (it claimed lease 0). */
async function firstOwner(): Promise<{ store: MemoryStore; clock: MockClock; a: Node }> {
  const store = new MemoryStore();
  const clock = new MockClock();
  const a = node(store, clock, "a");
  await settle();
  return { store, clock, a };
}

describe("owner election", () => {
  it("the first process claims lease 0, starts its work and renews, keeping two lease objects", async () => {
    const { store, clock, a } = await firstOwner();
    expect(a.election.state).toBe("owner");
    expect(a.log).toEqual(["start 0"]);
    expect(await leaseKeys(store)).toEqual([leaseKey("app/", 0)]);
    for (let i = 0; i < 10; i++) {
      clock.advance(RENEW);
      await settle();
    }
    expect(await leaseKeys(store)).toEqual([leaseKey("app/", 9), leaseKey("app/", 10)]);
    expect(a.election.state).toBe("owner");
    await a.election.stop();
    expect(a.log).toEqual(["start 0", "stop"]);
    expect(a.election.state).toBe("stopped");
    const last = JSON.parse(new TextDecoder().decode((await store.get(leaseKey("app/", 11)))!.body)) as { released: boolean; holder: string };
    expect(last).toMatchObject({ released: true, holder: "a" });
  });

  it("a standby stays a standby while the owner renews, and takes over within one renewal interval of a graceful stop", async () => {
    const { store, clock, a } = await firstOwner();
    const b = node(store, clock, "b");
    for (let i = 0; i < 20; i++) {
      clock.advance(RENEW / 2);
      await settle();
    }
    expect(b.election.state).toBe("standby");
    expect(b.log).toEqual([]);
    await a.election.stop();
    // The standby sees the release at its next look, one renewal interval at most, not after an expiry.
    const took = await advanceUntil(clock, () => b.election.state === "owner", LEASE, 10);
    expect(took).toBeLessThanOrEqual(RENEW);
    expect(a.log).toEqual(["start 0", "stop"]);
    expect(b.log).toHaveLength(1);
    await b.election.stop();
  });

  it("a dead owner's lease is taken over within the lease duration plus one renewal interval", async () => {
    for (const phase of [0, 250, 600, 999]) {
      const inner = new MemoryStore();
      const paused = new PausableStore(inner);
      const clock = new MockClock();
      const a = node(paused, clock, "a");
      await settle();
      const b = node(inner, clock, "b");
      await settle();
      clock.advance(RENEW * 3 + phase);
      await settle();
      paused.paused = true; // a stops answering: dead, from the store's point of view
      const took = await advanceUntil(clock, () => b.election.state === "owner", LEASE * 3, 10);
      expect(took, `phase ${phase}`).toBeLessThanOrEqual(LEASE + RENEW);
      // The paused owner gave up on its own deadline too.
      expect(a.election.state).toBe("standby");
      expect(a.log).toEqual(["start 0", "stop"]);
      await b.election.stop();
      paused.resume();
      await a.election.stop();
    }
  });

  it("a standby whose next lease object was deleted while it looked away follows the chain past the gap", async () => {
    // a holds, b and c stand by. a stops gracefully; c takes over at once and deletes the objects
    // below its previous one, among them the number b reads next. b must still find c's objects, so
    // that when c dies b takes over within the bound rather than from a view one term old.
    const inner = new MemoryStore();
    const clock = new MockClock();
    const cStore = new PausableStore(inner);
    const bClaims: string[] = [];
    const bStore: ObjectStore = {
      get: (k) => inner.get(k),
      list: (p, o) => inner.list(p, o),
      delete: (k) => inner.delete(k),
      async put(key, body, opts) {
        const r = await inner.put(key, body, opts);
        if (key.startsWith("app/lease/")) bClaims.push(key);
        return r;
      },
    };
    const step = async (to: number) => {
      while (clock.now() < to) {
        clock.advance(10);
        await settle();
      }
    };
    const t0 = clock.now();
    const a = node(inner, clock, "a");
    await settle();
    // Phases: a renews at 1000, 2000...; c looks at 1100, 2100...; b at 1600, 2600...
    await step(t0 + 100);
    const c = node(cStore, clock, "c");
    await settle();
    await step(t0 + 600);
    const b = node(bStore, clock, "b");
    await settle();
    // b's look at 1600 saw a's renewal, object 1; a renewed again at 2000 and now leaves.
    await step(t0 + 2050);
    await a.election.stop();
    // c looks at 2100, follows a's release and claims 4, deleting 1 and 2 before b's next look.
    await step(t0 + 2550);
    expect(c.election.state).toBe("owner");
    expect(await inner.get(leaseKey("app/", 2)), "the object after b's last seen, deleted").toBeNull();
    // c renews once more (5, at 3100) and dies.
    await step(t0 + 3150);
    cStore.paused = true;
    const took = await advanceUntil(clock, () => b.election.state === "owner", LEASE * 3, 10);
    expect(took, "b's takeover after c's death").toBeLessThanOrEqual(LEASE + RENEW);
    expect(bClaims, "b's lease objects: one claim, none into a deleted slot").toEqual([leaseKey("app/", 6)]);
    await b.election.stop();
    cStore.resume();
    await c.election.stop();
  });

  it("a standby's look costs two GETs and no listing, whether it finds a renewal or nothing new", async () => {
    // b looks four times per renewal of a's: three of its looks find nothing new. Each reads the next
    // number and, when that is missing, the object it saw last (still there: nothing was deleted past it).
    const { store: inner, clock, a } = await firstOwner();
    clock.advance(100);
    await settle();
    const bStore = withCounting(inner);
    const b = node(bStore, clock, "b", { renewIntervalMs: RENEW / 4 });
    await settle();
    const looks: string[] = [];
    for (let i = 0; i < 16; i++) {
      bStore.reset();
      clock.advance(RENEW / 4);
      await settle();
      const { gets, lists, puts, deletes } = bStore.counts;
      looks.push(`${gets} GET ${lists} LIST ${puts} PUT ${deletes} DELETE`);
    }
    expect(looks).toEqual(Array(16).fill("2 GET 0 LIST 0 PUT 0 DELETE"));
    expect(b.election.state).toBe("standby");
    await Promise.all([a.election.stop(), b.election.stop()]);
  });

  it("a standby whose last seen object was deleted and written again lists, rather than claim into a deleted slot", async () => {
    const inner = new MemoryStore();
    const clock = new MockClock();
    const record = (holder: string) => encodeLeaseRecord({ holder, released: false, leaseDurationMs: LEASE, renewIntervalMs: RENEW, writtenAt: clock.now() });
    await inner.put(leaseKey("app/", 0), record("x"));
    const bClaims: string[] = [];
    const bStore: ObjectStore = {
      get: (k) => inner.get(k),
      list: (p, o) => inner.list(p, o),
      delete: (k) => inner.delete(k),
      async put(key, body, opts) {
        const r = await inner.put(key, body, opts);
        if (key.startsWith("app/lease/")) bClaims.push(key);
        return r;
      },
    };
    const b = node(bStore, clock, "b");
    await settle();
    clock.advance(RENEW / 2);
    await settle();
    // Between two of b's looks x's chain moves past what b saw and deletes it, oldest first; then a
    // late put (from a process paused with it under way) lands in the freed slot 0. x dies.
    for (const n of [1, 2, 3]) await inner.put(leaseKey("app/", n), record("x"));
    for (const n of [0, 1, 2]) await inner.delete(leaseKey("app/", n));
    await inner.put(leaseKey("app/", 0), record("late"));
    const took = await advanceUntil(clock, () => b.election.state === "owner", LEASE * 3, 10);
    expect(bClaims, "b's lease objects: one claim, none into a deleted slot").toEqual([leaseKey("app/", 4)]);
    expect(took, "b's takeover after x's death").toBeLessThanOrEqual(LEASE + RENEW);
    await b.election.stop();
  });

  it("the holder deletes old lease objects one at a time, oldest first, also after a failed delete", async () => {
    // Objects 0-3 left by earlier holders (3 a release); a takes over at 4, and its first delete fails.
    const inner = new MemoryStore();
    const clock = new MockClock();
    for (const n of [0, 1, 2, 3]) {
      const rec = { holder: "x", released: n === 3, leaseDurationMs: LEASE, renewIntervalMs: RENEW, writtenAt: 0 };
      await inner.put(leaseKey("app/", n), encodeLeaseRecord(rec));
    }
    let failNext = true;
    const outOfOrder: string[] = [];
    const aStore: ObjectStore = {
      get: (k) => inner.get(k),
      list: (p, o) => inner.list(p, o),
      put: (k, b, o) => inner.put(k, b, o),
      async delete(key) {
        if (failNext) {
          failNext = false;
          throw new Error("injected delete failure");
        }
        if ((await leaseKeys(inner)).some((k) => k < key)) outOfOrder.push(key);
        return inner.delete(key);
      },
    };
    const a = node(aStore, clock, "a", { logger: { warn: () => undefined, error: () => undefined } });
    await settle();
    expect(a.log).toEqual(["start 4"]);
    for (let i = 0; i < 4; i++) {
      clock.advance(RENEW);
      await settle();
    }
    expect(outOfOrder, "objects deleted while an older one was still there").toEqual([]);
    expect(await leaseKeys(inner)).toEqual([leaseKey("app/", 7), leaseKey("app/", 8)]);
    await a.election.stop();
  });

  it("a paused owner that wakes after losing the lease writes nothing: the new owner's open fenced it", async () => {
    const inner = new MemoryStore();
    const paused = new PausableStore(inner);
    const clock = new MockClock();
    const queues: Record<string, Queue> = {};
    const opener = (id: string, store: ObjectStore) =>
      ({
        start: async () => {
          const q = await Queue.open(store, "app", { clock });
          queues[id] = q;
          // Stopping a term does not close the queue here, to show the fence alone refuses the old writer.
          return { stop: async () => undefined };
        },
      }) satisfies Partial<OwnerElectionOptions>;
    const a = node(paused, clock, "a", opener("a", paused));
    await until("a opened the queue", () => queues.a !== undefined);
    await queues.a!.enqueue("q", new Uint8Array([1]), { jobId: "before" });
    const b = node(inner, clock, "b", opener("b", inner));
    await settle();
    paused.paused = true;
    await advanceUntil(clock, () => b.election.state === "owner", LEASE * 3, 10);
    await until("b opened the queue", () => queues.b !== undefined);
    const lateWrite = queues.a!.enqueue("q", new Uint8Array([2]), { jobId: "late" });
    paused.resume();
    await expect(lateWrite).rejects.toBeInstanceOf(FencedError);
    expect(await queues.b!.view().job("late")).toBeNull();
    expect(await queues.b!.view().job("before")).not.toBeNull();
    await b.election.stop();
    await a.election.stop();
    await queues.b!.close();
    await queues.a!.close().catch(() => undefined);
  });

  it("the term's guarded store refuses every write once the lease ran out, even where the engine does not look", async () => {
    const inner = new MemoryStore();
    const paused = new PausableStore(inner);
    const clock = new MockClock();
    let guarded: ObjectStore | undefined;
    const a = node(paused, clock, "a", {
      start: async (term) => {
        guarded = term.guard(paused);
        return { stop: async () => undefined };
      },
    });
    await settle();
    await guarded!.put("app/inbox/answers/1", new Uint8Array([1]));
    clock.advance(RENEW * 2);
    await settle();
    await guarded!.delete("app/inbox/answers/1"); // renewed: still allowed
    const b = node(inner, clock, "b");
    await settle();
    paused.paused = true;
    await advanceUntil(clock, () => b.election.state === "owner", LEASE * 3, 10);
    // The old owner wakes up with a write it had in mind (an inbox answer): refused before it reaches the store.
    const late = guarded!.put("app/inbox/answers/2", new Uint8Array([2]));
    paused.resume();
    await expect(late).rejects.toBeInstanceOf(FencedError);
    expect(await inner.get("app/inbox/answers/2")).toBeNull();
    expect((await guarded!.get("app/lease/00000000000000000000")) !== undefined).toBe(true); // reads pass
    await Promise.all([a.election.stop(), b.election.stop()]);
  });

  it("a term that wakes past its lease and steps down writes no release into a slot the new owner deleted", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    // a's own clock stands still while it is stopped (SIGSTOP: no timer of a fires, nothing is sent).
    const clockA = new MockClock(clock.now());
    let stepDown: (() => void) | undefined;
    const a = node(store, clockA, "a", {
      start: async (term) => {
        stepDown = () => term.stepDown(new Error("fenced"));
        return { stop: async () => undefined };
      },
    });
    await settle();
    const b = node(store, clock, "b");
    await advanceUntil(clock, () => b.election.state === "owner", LEASE * 3, 10);
    // b renews a few times and deletes the old objects, a's next number among them.
    for (let i = 0; i < 5; i++) {
      clock.advance(RENEW);
      await settle();
    }
    // Slot 1 held b's claim, since deleted: free to a create-if-absent put again.
    expect(await store.get(leaseKey("app/", 1))).toBeNull();
    // a wakes up: its work notices the fence and steps down as its clock jumps ahead.
    stepDown!();
    clockA.set(clock.now());
    await settle();
    const released: string[] = [];
    for await (const o of store.list("app/lease/")) {
      const rec = JSON.parse(new TextDecoder().decode((await store.get(o.key))!.body)) as { holder: string; released: boolean };
      if (rec.holder === "a" && rec.released) released.push(o.key);
    }
    expect(released, "a stale release by a").toEqual([]);
    expect(a.election.state).toBe("standby");
    await Promise.all([a.election.stop(), b.election.stop()]);
  });

  it("many takeovers, by expiry and by release, leave a handful of lease objects; one owner at any time", async () => {
    const inner = new MemoryStore();
    const clock = new MockClock();
    const stores = Array.from({ length: 3 }, () => new PausableStore(inner));
    let running = 0;
    let maxRunning = 0;
    const nodes = stores.map((s, i) =>
      node(s, clock, `p${i}`, {
        start: async () => {
          running++;
          maxRunning = Math.max(maxRunning, running);
          return { stop: async () => void running-- };
        },
      }),
    );
    const owner = () => nodes.findIndex((n) => n.election.state === "owner");
    let most = 0;
    for (let round = 0; round < 30; round++) {
      await advanceUntil(clock, () => nodes.filter((n) => n.election.state === "owner").length === 1, LEASE * 4, 25);
      const was = owner();
      if (round % 2 === 0) {
        stores[was]!.paused = true; // dies: the others wait for the expiry
      } else {
        nodes[was]!.election.relinquish(); // hands over at once
      }
      await advanceUntil(clock, () => nodes.some((n, i) => i !== was && n.election.state === "owner"), LEASE * 4, 25);
      stores[was]!.resume();
      // One renewal by the new owner, then count.
      clock.advance(RENEW);
      await settle();
      most = Math.max(most, (await leaseKeys(inner)).length);
    }
    const newest = Number((await leaseKeys(inner)).at(-1)!.split("/").at(-1));
    expect(newest, "the chain moved through many numbers").toBeGreaterThan(60);
    expect(most, "lease objects in the folder after a takeover").toBeLessThanOrEqual(3);
    expect(maxRunning).toBe(1);
    await Promise.all(nodes.map((n) => n.election.stop()));
  });

  it("a claim that lands late in a slot the holder already deleted is void: the claimer stands by, the holder keeps the lease", async () => {
    const inner = new MemoryStore();
    const clock = new MockClock();
    const aStore = new PausableStore(inner);
    const a = node(aStore, clock, "a");
    await settle();
    // b's claim put for slot 1 is held back, as if b were stopped between its look and its put.
    let releaseClaim: (() => void) | undefined;
    const held = new Promise<void>((r) => (releaseClaim = r));
    const bStore: ObjectStore = {
      get: (k) => inner.get(k),
      list: (p, o) => inner.list(p, o),
      delete: (k) => inner.delete(k),
      async put(key, body, opts) {
        if (key === leaseKey("app/", 1)) await held;
        return inner.put(key, body, opts);
      },
    };
    // a dies before its first renewal; b and c both see slot 0 expire.
    aStore.paused = true;
    const b = node(bStore, clock, "b");
    const c = node(inner, clock, "c");
    await settle();
    await advanceUntil(clock, () => c.election.state === "owner", LEASE * 4, 25);
    // c renews until slot 1 (its claim) is deleted.
    for (let i = 0; i < 4; i++) {
      clock.advance(RENEW);
      await settle();
    }
    expect(await inner.get(leaseKey("app/", 1))).toBeNull();
    releaseClaim!();
    await settle();
    for (let i = 0; i < 6; i++) {
      clock.advance(RENEW / 2);
      await settle();
      expect(b.election.state, "b after its late claim").toBe("standby");
      expect(c.election.state).toBe("owner");
    }
    expect(b.log).toEqual([]);
    expect(await inner.get(leaseKey("app/", 1)), "b's void claim is removed").toBeNull();
    await Promise.all([b.election.stop(), c.election.stop()]);
    aStore.resume();
    await a.election.stop();
  });

  it("a renewal that finds the next lease object taken ends the term", async () => {
    const { store, clock, a } = await firstOwner();
    await store.put(leaseKey("app/", 1), new TextEncoder().encode("not a lease"), { ifNoneMatch: "*" });
    clock.advance(RENEW);
    await settle();
    expect(a.election.state).toBe("standby");
    expect(a.log).toEqual(["start 0", "stop"]);
    // The damaged object counts as held for one lease duration, then a is the owner again.
    const took = await advanceUntil(clock, () => a.election.state === "owner", LEASE * 2);
    expect(took).toBeGreaterThanOrEqual(LEASE);
    expect(took).toBeLessThanOrEqual(LEASE + RENEW);
    await a.election.stop();
  });

  it("a start that fails releases the lease to another process, which runs the work", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    const a = node(store, clock, "a", {
      start: async () => {
        throw new Error("cannot open");
      },
    });
    await settle();
    const b = node(store, clock, "b");
    await advanceUntil(clock, () => b.election.state === "owner", LEASE * 2);
    expect(a.election.state).toBe("standby");
    await Promise.all([a.election.stop(), b.election.stop()]);
  });

  it("work that steps down releases the lease and waits a lease duration before claiming again", async () => {
    const store = new MemoryStore();
    const clock = new MockClock();
    let stepDown: (() => void) | undefined;
    const a = node(store, clock, "a", {
      start: async (term) => {
        stepDown = () => term.stepDown(new Error("queue closed"));
        return { stop: async () => undefined };
      },
    });
    await settle();
    stepDown!();
    await settle();
    expect(a.election.state).toBe("standby");
    // Nobody else: a claims its own released lease again after the hold-off.
    const took = await advanceUntil(clock, () => a.election.state === "owner", LEASE * 2);
    expect(took).toBeGreaterThanOrEqual(LEASE);
    await a.election.stop();
  });

  it("many processes: exactly one owner at any time, across kills", async () => {
    const inner = new MemoryStore();
    const clock = new MockClock();
    const stores = Array.from({ length: 5 }, () => new PausableStore(inner));
    let running = 0;
    let maxRunning = 0;
    const nodes = stores.map((s, i) =>
      node(s, clock, `p${i}`, {
        start: async () => {
          running++;
          maxRunning = Math.max(maxRunning, running);
          return { stop: async () => void running-- };
        },
      }),
    );
    for (let round = 0; round < 4; round++) {
      await advanceUntil(clock, () => nodes.filter((n) => n.election.state === "owner").length === 1, LEASE * 3, 25);
      const owner = nodes.findIndex((n) => n.election.state === "owner");
      stores[owner]!.paused = true;
      await advanceUntil(clock, () => nodes.some((n, i) => i !== owner && n.election.state === "owner"), LEASE * 3, 25);
      stores[owner]!.resume();
    }
    expect(maxRunning).toBe(1);
    await Promise.all(nodes.map((n) => n.election.stop()));
    expect(running).toBe(0);
  });

  it("keeps the lease through store faults on renewals", async () => {
    const inner = new MemoryStore();
    const clock = new MockClock();
    const faulty = withFaults(inner, { failureRate: 0.3, seed: 7, ops: ["put"] });
    const a = node(faulty, clock, "a");
    await advanceUntil(clock, () => a.election.state === "owner", LEASE * 3);
    let lost = 0;
    for (let i = 0; i < 200; i++) {
      clock.advance(100);
      await settle();
      if (a.election.state !== "owner") lost++;
    }
    expect(lost).toBe(0);
    await a.election.stop();
  });

  it("refuses absurd timings and names before touching the store", () => {
    const store = new MemoryStore();
    const start = async () => ({ stop: async () => undefined });
    for (const bad of [
      { leaseDurationMs: Number.NaN },
      { leaseDurationMs: Number.POSITIVE_INFINITY },
      { leaseDurationMs: 1e30 },
      { renewIntervalMs: 0 },
      { renewIntervalMs: -5 },
      { renewIntervalMs: 1.5 },
      { leaseDurationMs: 1_000, renewIntervalMs: 600 },
    ]) {
      expect(() => runOwnerElection(store, "app", { start, ...bad }), JSON.stringify(bad)).toThrow(ValidationError);
    }
    expect(() => runOwnerElection(store, "", { start })).toThrow(ValidationError);
    expect(() => runOwnerElection(store, "app", { start, processId: "" })).toThrow(ValidationError);
    expect(() => runOwnerElection(store, "app", {} as OwnerElectionOptions)).toThrow(ValidationError);
  });
});
