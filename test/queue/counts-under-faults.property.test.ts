/**
 * @module A queue's counts against its records under store faults: chains
 * of jobs, each member acked claiming the next (the ack's done job carried
 * in the next member's claimed entry), nacked, left to expire and settled
 * late, over a store whose puts and deletes fail at random (some after the
 * write landed) and whose engine gives up at the first (poisoned), with
 * crashes that stop a life's writes mid-flight and reopen the store. At
 * every quiet point the stats equal what the records say: pending, scheduled,
 * claimed and dead counted from the listed jobs, done from how far each
 * chain got (one member is alive per unfinished chain). A done job counted
 * twice (a carried count added on a failed or rebuilt commit, a stale
 * settlement after an expiry) shows as done over that.
 */
import { describe, expect, it } from "vitest";
import {
  ClaimLostError,
  MemoryStore,
  MockClock,
  Queue,
  SettlementEffects,
  withFaults,
  type ClaimedJob,
  type FaultyStore,
  type ObjectStore,
  type PutOptions,
} from "taquba";
import { ForwardingStore } from "../support/forwarding-store.js";
import { loadLimitTimeout, withinLoadLimit } from "../support/load.js";
import { testRandom } from "../support/seed.js";
import { enc, settle } from "./helpers.js";

const QUEUE = "steps";
const CHAINS = 6;
const LENGTH = 6;
const LEASE_MS = 1_000;
const CASES = 8;
const ROUNDS = 160;
const FAULT_RATE = 0.2;
const STATES = ["pending", "scheduled", "claimed", "done", "dead"] as const;

/** A life's store: once cut (the life crashed), none of its later writes land. */
class Severable extends ForwardingStore {
  cut = false;
  override put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    if (this.cut) return Promise.reject(new Error("the process stopped"));
    return super.put(key, body, opts);
  }
  override delete(key: string): Promise<void> {
    if (this.cut) return Promise.reject(new Error("the process stopped"));
    return super.delete(key);
  }
}

interface Life {
  queue: Queue;
  faults: FaultyStore;
  severable: Severable;
  /** Claims this life holds, settled later (some after their lease ran out). */
  held: ClaimedJob[];
}

/** The failures a life's background work logs are the faults this test injects. */
const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

const member = (job: { headers: Record<string, string> }) => ({ chain: Number(job.headers.c), index: Number(job.headers.i) });

/** The counts the records give: jobs listed per state, and done from each chain's live member (none: the chain finished). */
async function truth(queue: Queue, chains: number): Promise<Record<(typeof STATES)[number], number>> {
  const counts = { pending: 0, scheduled: 0, claimed: 0, done: 0, dead: 0 };
  const alive = new Map<number, number[]>();
  for (const state of STATES) {
    let cursor: string | undefined;
    do {
      const page = await queue.view().listJobs(QUEUE, state, cursor === undefined ? { limit: 500 } : { cursor, limit: 500 });
      for (const j of page.items) {
        counts[state]++;
        const m = member(j);
        alive.set(m.chain, [...(alive.get(m.chain) ?? []), m.index]);
      }
      cursor = page.nextCursor;
    } while (cursor !== undefined);
  }
  // No done record is kept: a chain with a live member did the members before it.
  for (let c = 0; c < chains; c++) {
    const live = alive.get(c) ?? [];
    expect(live.length, `chain ${c} has one live member at most (members ${live.join(", ")})`).toBeLessThanOrEqual(1);
    counts.done += live.length === 0 ? LENGTH : live[0]!;
  }
  return counts;
}

async function expectCountsMatch(queue: Queue, when: string, chains = CHAINS): Promise<void> {
  await settle();
  const stats = await queue.view().stats(QUEUE);
  const fromRecords = await truth(queue, chains);
  expect({ ...stats }, `stats ${when}`).toEqual(fromRecords);
}

async function runCase(
  seed: number,
  int: (below: number) => number,
  random: () => number,
): Promise<{ crashes: number; stale: number; faults: number; chained: number; failures: number }> {
  const inner: ObjectStore = new MemoryStore();
  const clock = new MockClock(1_700_000_000_000);
  let crashes = 0;
  let stale = 0;
  let faults = 0;
  let chained = 0;
  let failures = 0;

  let chains = 0;
  const open = async (): Promise<Life> => {
    const severable = new Severable(inner);
    const f = withFaults(severable, { failureRate: 0, seed: int(2 ** 31), ops: ["put", "delete"] });
    const queue = await Queue.open(f, "q", {
      flushIntervalMs: 0,
      clock,
      logger: quiet,
      engineOptions: { retry: { attempts: 1 }, checkpointWalObjects: 8, onBackgroundError: () => undefined },
      queueConfigs: { [QUEUE]: { leaseMs: LEASE_MS, maxAttempts: 1_000_000, backoff: { baseMs: 10, maxMs: 10 } } },
    });
    await expectCountsMatch(queue, `at the open of life ${crashes} (seed ${seed})`, chains);
    f.failureRate = FAULT_RATE;
    return { queue, faults: f, severable, held: [] };
  };

  /** The life stops: nothing more it writes lands, and the store opens again. */
  const crash = async (life: Life): Promise<Life> => {
    faults += life.faults.injected;
    life.severable.cut = true;
    crashes++;
    const next = await open();
    await life.queue.close().catch(() => undefined);
    return next;
  };

  let life = await open();
  life.faults.failureRate = 0;
  for (; chains < CHAINS; chains++) await life.queue.enqueue(QUEUE, enc(`${chains}:0`), { headers: { c: String(chains), i: "0" } });
  life.faults.failureRate = FAULT_RATE;

  for (let round = 0; round < ROUNDS; round++) {
    const pick = random();
    try {
      if (pick < 0.3) {
        const job = await life.queue.claim(QUEUE);
        if (job !== null) life.held.push(job);
      } else if (pick < 0.75 && life.held.length > 0) {
        const job = life.held.splice(int(life.held.length), 1)[0]!;
        const { chain, index } = member(job);
        const how = random();
        if (how < 0.15) await life.queue.nack(job, "try again");
        else if (index === LENGTH - 1) await life.queue.ack(job);
        else {
          const effects = new SettlementEffects().enqueue(QUEUE, enc(`${chain}:${index + 1}`), { headers: { c: String(chain), i: String(index + 1) } });
          const res = await life.queue.ackClaimingNext(job, effects, { index: 0, reserve: () => how < 0.9 });
          if (res.next !== undefined) {
            chained++;
            life.held.push(res.next);
          }
        }
      } else if (pick < 0.85) {
        // Leases run out: the reaper puts the held jobs back, and their holders settle them late.
        clock.advance(LEASE_MS + 1);
        await life.queue.runMaintenance();
      } else if (pick < 0.92) {
        clock.advance(20);
        await life.queue.runMaintenance();
      } else {
        life = await crash(life);
        continue;
      }
    } catch (err) {
      if (err instanceof ClaimLostError) {
        stale++;
        continue;
      }
      // A poisoned engine (a write given up) or a settlement's commit that failed: the process starts again.
      if (life.queue.closed || isStoreFailure(err)) {
        failures++;
        life = await crash(life);
        continue;
      }
      throw err;
    }
    // A quiet point of a healthy life: everything committed is applied, none is in flight.
    if (round % 8 === 0 && !life.queue.closed) {
      const f = life.faults.failureRate;
      life.faults.failureRate = 0;
      await expectCountsMatch(life.queue, `in life ${crashes}, round ${round} (seed ${seed})`);
      life.faults.failureRate = f;
    }
  }

  // Faults off: every chain runs to its end, and each member was done once.
  life = await crash(life);
  life.faults.failureRate = 0;
  for (let guard = 0; ; guard++) {
    expect(guard, `chains drained (seed ${seed})`).toBeLessThan(10_000);
    clock.advance(20);
    await life.queue.runMaintenance();
    const job = await life.queue.claim(QUEUE);
    if (job === null) {
      if ((await life.queue.view().stats(QUEUE)).done === CHAINS * LENGTH) break;
      continue;
    }
    const { chain, index } = member(job);
    if (index === LENGTH - 1) await life.queue.ack(job);
    else
      await life.queue.ack(job, new SettlementEffects().enqueue(QUEUE, enc(`${chain}:${index + 1}`), { headers: { c: String(chain), i: String(index + 1) } }));
  }
  await expectCountsMatch(life.queue, `at the end (seed ${seed})`);
  expect(await life.queue.view().stats(QUEUE)).toEqual({ pending: 0, scheduled: 0, claimed: 0, done: CHAINS * LENGTH, dead: 0 });
  faults += life.faults.injected;
  await life.queue.close();
  return { crashes, stale, faults, chained, failures };
}

/** A store failure a settlement or claim reports (the engine retried and gave up, or was poisoned by another commit). */
function isStoreFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "STORE_UNAVAILABLE" || code === "CLOSED" || code === "FENCED";
}

describe("a queue's counts under store faults, expiries, late settlements and crashes", () => {
  it("equal what the records say at every quiet point, and each chain member is done once", { timeout: loadLimitTimeout(120_000) }, () =>
    withinLoadLimit(120_000, async () => {
      const r = testRandom("counts-under-faults");
      let crashes = 0;
      let stale = 0;
      let faults = 0;
      let chained = 0;
      let failures = 0;
      for (let i = 0; i < CASES; i++) {
        const seed = r.int(2 ** 31);
        const got = await runCase(seed, r.int, r.random);
        crashes += got.crashes;
        stale += got.stale;
        faults += got.faults;
        chained += got.chained;
        failures += got.failures;
      }
      // The workload made the paths happen: crashes (some after calls failed on the store), late settlements refused, faults, chained claims.
      expect(crashes).toBeGreaterThan(CASES);
      expect(stale).toBeGreaterThan(0);
      expect(faults).toBeGreaterThan(0);
      expect(chained).toBeGreaterThan(CASES);
      expect(failures, "settlements and claims that failed on the store").toBeGreaterThan(0);
    }),
  );
});
