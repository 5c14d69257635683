/**
 * @module An owner stopped (SIGSTOP) in the middle of a lease renewal and
 * resumed (SIGCONT) after another process took the lease over and renewed
 * past the renewal's slot. Modelled on MockClocks: while stopped, the
 * owner's wall clock goes on but none of its timers fire and none of its
 * store answers are handled; on resume, the answers that arrived meanwhile
 * are handled before the overdue timers fire, as in Node's event loop. The
 * resumed owner must write nothing to the store and must refuse its work's
 * writes.
 */
import { describe, expect, it } from "vitest";
import { FencedError, MemoryStore, MockClock, type ObjectStore, type PutOptions } from "taquba";
import { runOwnerElection, type OwnerElection, type OwnerTerm } from "../../runtime/cluster/owner-election.js";
import { leaseKey } from "../../runtime/cluster/lease-chain.js";
import { LEASE, RENEW, settle } from "../support/owner-election.js";

const quiet = { error: () => undefined, warn: () => undefined };

/**
 * One process that can be stopped: its clock reads the wall clock, its
 * timers fire only while it runs; its store calls are not sent while it is
 * stopped and their answers are not handled until it resumes. `stopAt`
 * picks the moment: before a call is sent, or after the store answered it.
 */
class StoppableProcess {
  readonly timers: MockClock;
  stopped = false;
  /** Successful writes called after a resume, as the shard test's worker logs them. */
  readonly writesAfterResume: string[] = [];
  #resumed = false;
  #waiting: Array<() => void> = [];
  stopAt: { when: "before" | "after"; op: "get" | "put" | "delete"; key: string } | undefined;
  readonly clock: { now(): number; waitUntil(at: number, signal?: AbortSignal): Promise<void> };
  readonly store: ObjectStore;

  constructor(
    readonly wall: MockClock,
    inner: ObjectStore,
  ) {
    this.timers = new MockClock(wall.now());
    this.clock = { now: () => wall.now(), waitUntil: (at, signal) => this.timers.waitUntil(at, signal) };
    const call = async <T>(op: "get" | "put" | "delete", key: string, run: () => Promise<T>, write: boolean): Promise<T> => {
      await this.#gate();
      // Called now, as the shard test's worker stamps a write; sent to the store once running.
      const sentAfterResume = this.#resumed;
      const at = this.stopAt;
      if (at?.when === "before" && at.op === op && at.key === key) this.#stop();
      await this.#gate();
      const out = await run();
      if (at?.when === "after" && at.op === op && at.key === key) this.#stop();
      await this.#gate();
      if (write && sentAfterResume) this.writesAfterResume.push(`${op} ${key}`);
      return out;
    };
    const gate = () => this.#gate();
    this.store = {
      get: (key) => call("get", key, () => inner.get(key), false),
      put: (key: string, body: Uint8Array, opts?: PutOptions) => call("put", key, () => inner.put(key, body, opts), true),
      delete: (key) => call("delete", key, () => inner.delete(key), true),
      async *list(prefix, opts) {
        await gate();
        yield* inner.list(prefix, opts);
      },
    };
  }

  #stop(): void {
    this.stopped = true;
    this.stopAt = undefined;
  }

  async #gate(): Promise<void> {
    while (this.stopped) await new Promise<void>((r) => this.#waiting.push(r));
  }

  /** Lets the process's timers catch up with the wall clock (while it runs). */
  run(): void {
    if (!this.stopped) this.timers.set(this.wall.now());
  }

  /**
   * SIGCONT, first half: the answers that arrived while stopped are handled.
   * The overdue timers fire at the next `run()`, as Node handles I/O before
   * the timers of the next turn.
   */
  async resume(): Promise<void> {
    this.stopped = false;
    this.#resumed = true;
    for (const w of this.#waiting.splice(0)) w();
    await settle();
  }
}

function elect(store: ObjectStore, clock: StoppableProcess["clock"] | MockClock, id: string, terms: OwnerTerm[]): OwnerElection {
  return runOwnerElection(store, "app", {
    processId: id,
    clock,
    leaseDurationMs: LEASE,
    renewIntervalMs: RENEW,
    logger: quiet,
    start: async (term) => {
      terms.push(term);
      return { stop: async () => undefined };
    },
  });
}

/** Moves the wall clock on in steps, letting the running processes' timers follow. */
async function advance(wall: MockClock, ms: number, procs: StoppableProcess[], step = 50): Promise<void> {
  for (let done = 0; done < ms; done += step) {
    wall.advance(Math.min(step, ms - done));
    for (const p of procs) p.run();
    await settle();
  }
}

async function holders(store: ObjectStore): Promise<Array<{ n: number; holder: string; released: boolean }>> {
  const out: Array<{ n: number; holder: string; released: boolean }> = [];
  for await (const o of store.list("app/lease/")) {
    const rec = JSON.parse(new TextDecoder().decode((await store.get(o.key))!.body)) as { holder: string; released: boolean };
    out.push({ n: Number(o.key.split("/").at(-1)), holder: rec.holder, released: rec.released });
  }
  return out;
}

/**
 * The scenario of every case: process `a`, which can be stopped, claims the lease and renews it for ten
 * renewal intervals (past its first lease duration, which has checks of its own); then process `b`, never
 * stopped, starts beside it. `current` is the number of a's newest lease object when b starts.
 */
async function ownerRenewedThenStandby() {
  const wall = new MockClock();
  const inner = new MemoryStore();
  const a = new StoppableProcess(wall, inner);
  const aTerms: OwnerTerm[] = [];
  const ea = elect(a.store, a.clock, "a", aTerms);
  await settle();
  await advance(wall, 10 * RENEW, [a]);
  const ownedBeforeB = ea.state;
  const current = Math.max(...(await holders(inner)).map((h) => h.n));
  const bTerms: OwnerTerm[] = [];
  const eb = elect(inner, wall, "b", bTerms);
  return { wall, inner, a, aTerms, ea, ownedBeforeB, current, bTerms, eb };
}

describe("owner election: an owner stopped in the middle of a renewal", () => {
  it("that read its lease object before the stop sends no renewal after it resumes past its lease", async () => {
    const { wall, inner, a, ea, ownedBeforeB, current, eb } = await ownerRenewedThenStandby();
    expect(ownedBeforeB).toBe("owner");
    await settle();
    // a is stopped while its next renewal's read of its newest object is answered.
    a.stopAt = { when: "after", op: "get", key: leaseKey("app/", current) };
    await advance(wall, RENEW, [a]);
    expect(a.stopped).toBe(true);
    await advance(wall, 3 * LEASE, [a]);
    expect(eb.state).toBe("owner");
    // b renewed past the slot a's renewal would take, and deleted it.
    expect(await inner.get(leaseKey("app/", current + 1))).toBeNull();
    expect(Math.max(...(await holders(inner)).map((h) => h.n))).toBeGreaterThan(current + 2);
    await a.resume();
    await advance(wall, 2 * RENEW, [a]);
    expect(a.writesAfterResume, "writes by a after it resumed").toEqual([]);
    expect(
      (await holders(inner)).filter((h) => h.holder === "a"),
      "lease objects of a",
    ).toEqual([]);
    expect(ea.state).toBe("standby");
    expect(eb.state).toBe("owner");
    await Promise.all([ea.stop(), eb.stop()]);
  });

  it("whose renewal lands late in a slot the new owner deleted does not count it: its work's writes are refused at once", async () => {
    const { wall, inner, a, aTerms, ea, current, bTerms, eb } = await ownerRenewedThenStandby();
    const guarded = aTerms[0]!.guard(a.store);
    // b sees a's newest object early in a's renewal interval.
    await advance(wall, RENEW / 2, [a]);
    // a is not run for most of its lease (a loaded machine): its next renewal is sent just before its deadline...
    await advance(wall, LEASE - RENEW / 2 - 100, []);
    // ... and a is stopped with that renewal's put under way, before it reaches the store.
    a.stopAt = { when: "before", op: "put", key: leaseKey("app/", current + 1) };
    a.run();
    await settle();
    expect(a.stopped).toBe(true);
    // b takes over at a's deadline and renews twice, deleting the slot a's put is headed for,
    // before the deadline a's renewal would give it.
    await advance(wall, 2 * RENEW + 200, [a]);
    expect(eb.state).toBe("owner");
    expect(await inner.get(leaseKey("app/", current + 1))).toBeNull();
    // a resumes: its put lands in the deleted slot and is answered before a's overdue timers fire.
    await a.resume();
    const late = guarded.put("app/inbox/answers/late", new Uint8Array([1]));
    await expect(late, "a's write after its renewal landed late").rejects.toBeInstanceOf(FencedError);
    expect(await inner.get("app/inbox/answers/late")).toBeNull();
    await advance(wall, 2 * RENEW, [a]);
    expect(a.writesAfterResume, "writes by a after it resumed").toEqual([]);
    expect(ea.state).toBe("standby");
    expect(aTerms[0]!.signal.aborted).toBe(true);
    expect(eb.state).toBe("owner");
    expect(bTerms).toHaveLength(1);
    await Promise.all([ea.stop(), eb.stop()]);
  });

  it("stopped while deleting its predecessors' lease objects, sends none of the queued deletes after it resumes past its lease", async () => {
    const wall = new MockClock();
    const inner = new MemoryStore();
    // b owns first and stops gracefully: its two newest objects and the released one stay.
    const bTerms: OwnerTerm[] = [];
    const eb = elect(inner, wall, "b", bTerms);
    await settle();
    await advance(wall, 5 * RENEW, []);
    expect(eb.state).toBe("owner");
    await eb.stop();
    const left = (await holders(inner)).map((h) => h.n);
    expect(left.length).toBeGreaterThanOrEqual(3);
    // a claims after them and deletes all but the one before its own, one at a time, oldest first:
    // it is stopped as its first delete is sent, with the others queued behind it.
    const a = new StoppableProcess(wall, inner);
    a.stopAt = { when: "before", op: "delete", key: leaseKey("app/", left[0]!) };
    const ea = elect(a.store, a.clock, "a", []);
    await settle();
    expect(a.stopped).toBe(true);
    expect(ea.state).toBe("owner");
    // c takes over once a's lease ran out, and renews.
    const c = elect(inner, wall, "c", []);
    await advance(wall, LEASE + 3 * RENEW, [a]);
    expect(c.state).toBe("owner");
    await a.resume();
    await advance(wall, 2 * RENEW, [a]);
    expect(a.writesAfterResume, "writes by a after it resumed").toEqual([]);
    expect(ea.state).toBe("standby");
    expect(c.state).toBe("owner");
    await Promise.all([ea.stop(), c.stop()]);
  });
});
