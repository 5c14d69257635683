/**
 * @module What the owner-election tests share: the lease timings they run
 * on (a MockClock's milliseconds), the wait that lets promise chains and
 * store calls run to completion without moving the clock, and an election
 * started to its first term.
 */
import { MockClock, type ObjectStore } from "taquba";
import { runOwnerElection, type OwnerElection, type OwnerTerm } from "../../runtime/cluster/owner-election.js";
import { until } from "./until.js";

/** The lease duration of every election in these tests. */
export const LEASE = 3_000;
/** Their renewal interval. */
export const RENEW = 1_000;

/** Lets promise chains and store calls run to completion without moving the clock. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
}

/** An election started to its first term: the election, the term, and the clock it runs on. */
export interface StartedTerm {
  election: OwnerElection;
  term: OwnerTerm;
  clock: MockClock;
}

/**
 * Runs an owner election of `name` over `store` (one process, a MockClock,
 * the leases above, errors logged nowhere) until its first term started;
 * the term's work does nothing and stops at once.
 */
export async function startedTerm(store: ObjectStore, opts: { name?: string; processId?: string; clock?: MockClock } = {}): Promise<StartedTerm> {
  const clock = opts.clock ?? new MockClock(1_700_000_000_000);
  const terms: OwnerTerm[] = [];
  const election = runOwnerElection(store, opts.name ?? "app", {
    processId: opts.processId ?? "p",
    clock,
    leaseDurationMs: LEASE,
    renewIntervalMs: RENEW,
    logger: { error: () => undefined },
    start: async (term) => {
      terms.push(term);
      return { stop: async () => undefined };
    },
  });
  await until("the term started", () => terms.length === 1);
  return { election, term: terms[0]!, clock };
}

/** An owner of `app` whose terms' work guards `store` and stops at once, leaving any write it sent in flight: a straggler of the term. */
export interface GuardedOwner {
  election: OwnerElection;
  /** The current term's guarded store, once a term started. */
  guarded(): ObjectStore | undefined;
}

/** Runs an election of `app` over `store` as process `id` on `clock` (the leases above, errors logged nowhere) whose terms guard `store`. */
export function guardedOwner(store: ObjectStore, clock: MockClock, id: string): GuardedOwner {
  let guarded: ObjectStore | undefined;
  const election = runOwnerElection(store, "app", {
    processId: id,
    clock,
    leaseDurationMs: LEASE,
    renewIntervalMs: RENEW,
    logger: { error: () => undefined },
    start: async (term) => {
      guarded = term.guard(store);
      return { stop: async () => undefined };
    },
  });
  return { election, guarded: () => guarded };
}
