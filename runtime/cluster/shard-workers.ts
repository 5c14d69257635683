/**
 * @module Shards: a deployment split into S queue stores, each with its own
 * engine, inbox and owner lease, and worker processes that share them out.
 *
 * Each worker process stands in the owner election of every shard. It
 * announces itself with a heartbeat in the store (numbered objects under
 * `{name}/cluster/members/{processId}/`, one per renewal interval), counts
 * the processes whose heartbeat moved within a lease duration, and aims at
 * owning at most ceil(S / live processes) shards: it claims the shards of a
 * dead process as soon as their leases run out, whatever it owns (the
 * takeover bound holds even when every survivor is at its share), claims a
 * handed-back shard at once while below its share and after a grace period
 * otherwise, and hands one shard back per interval while above it.
 */
import { listedUnder } from "../store/listing-pages.js";
import { ConstructionGate } from "../internal-construction.js";
import { SystemClock, timedClock, type Clock, type TimedClock } from "../clock.js";
import { PreconditionFailedError, ValidationError } from "../errors.js";
import { fullLogger, type FullLogger, type Logger } from "../logger.js";
import type { ObjectStore } from "../store/object-store.js";
import { checkShardCount, encodeShardLayout, readShardLayout, shardLayoutKey, shardStoreName, type ShardLayout } from "../client/shard-route.js";
import {
  defaultProcessId,
  electionTimings,
  OwnerElection,
  readElectionOptions,
  type OwnedWork,
  type OwnerElectionState,
  type OwnerTerm,
  ELECTION_GATE,
} from "./owner-election.js";

/**
 * Records that the store `name` is split into `shards` shards. Call it once
 * when the deployment is created, before any worker or client opens it;
 * calling it again with the same count is harmless. The count cannot change
 * afterwards (runs stay where their hash put them): another count is a
 * `ValidationError`, as is a store `name` that already holds an unsharded
 * queue.
 */
export async function createShards(store: ObjectStore, name: string, shards: number): Promise<ShardLayout> {
  checkShardCount(shards);
  for await (const o of listedUnder(store, `${name}/db/`)) {
    throw new ValidationError(`the store "${name}" already holds an unsharded queue (${o.key}); shard a new store name instead`);
  }
  try {
    await store.put(shardLayoutKey(name), encodeShardLayout({ shards }), { ifNoneMatch: "*" });
    return { shards };
  } catch (err) {
    if (!(err instanceof PreconditionFailedError)) throw err;
  }
  const there = (await readShardLayout(store, name))!;
  if (there.shards !== shards) {
    throw new ValidationError(`the store "${name}" was created with ${there.shards} shards, not ${shards}; the shard count is fixed at creation`);
  }
  return there;
}

/** What `start` of `runShardWorkers` is given: the shard this process now owns. */
export interface ShardTerm {
  /** The shard's number, 0 to S - 1. */
  readonly shard: number;
  /** The queue store name of the shard: pass it to `Queue.open` (and nothing else). */
  readonly storeName: string;
  /** The sharded store's name (given to `runShardWorkers`) and its shard count, for `routeShardSchedules`. */
  readonly name: string;
  readonly shards: number;
  /** This process's term as the shard's owner (`stepDown`, `signal`). */
  readonly term: OwnerTerm;
}

/** Options of `runShardWorkers`. */
export interface ShardWorkersOptions {
  /** Starts the owner's work of one shard (open its queue, runtime and inbox); see `OwnerElectionOptions.start`. */
  start(shard: ShardTerm): Promise<OwnedWork>;
  /** Per shard, as in `runOwnerElection` (default 15 s). */
  leaseDurationMs?: number;
  /** Per shard and for the heartbeat, as in `runOwnerElection` (default 5 s). */
  renewIntervalMs?: number;
  processId?: string;
  clock?: Clock;
  logger?: Logger;
  /** Called when this process starts or stops owning a shard. */
  onChange?(shard: number, state: OwnerElectionState): void;
}

const PAD = 20;
const membersFolder = (name: string): string => `${name}/cluster/members/`;
const memberKey = (name: string, id: string, n: number): string => `${membersFolder(name)}${id}/${String(n).padStart(PAD, "0")}`;

/**
 * Joins the worker processes of the sharded store `name` (see
 * `createShards`): resolves once this process stands in every shard's
 * election; it then owns its share of the shards until `stop()`.
 *
 * @example
 * const workers = await runShardWorkers(store, "app", {
 *   start: async ({ storeName, term }) => {
 *     const owner = await openOwner(store, storeName); // Queue.open(store, storeName), a runtime, serveClients
 *     owner.queue.onClosed((reason) => reason && term.stepDown(reason));
 *     return { stop: () => owner.stop() };
 *   },
 * });
 * process.on("SIGTERM", () => void workers.stop());
 */
export async function runShardWorkers(store: ObjectStore, name: string, given: ShardWorkersOptions): Promise<ShardWorkers> {
  const opts = readElectionOptions(given, "ShardWorkersOptions");
  const layout = await readShardLayout(store, name);
  if (layout === undefined) throw new ValidationError(`the store "${name}" is not sharded; create it with createShards(store, "${name}", count) first`);
  return SHARDS_GATE.build(() => new ShardWorkers(store, name, layout.shards, opts));
}

/** `new ShardWorkers` is internal: use runShardWorkers(store, name, options) (see internal-construction.ts). */
const SHARDS_GATE = new ConstructionGate("ShardWorkers", "use runShardWorkers(store, name, options)");

/** This process's part in running a sharded store; see `runShardWorkers`. */
export class ShardWorkers {
  readonly #store: ObjectStore;
  readonly #name: string;
  readonly #clock: TimedClock;
  readonly #logger: FullLogger;
  readonly #leaseMs: number;
  readonly #renewMs: number;
  readonly #elections: OwnerElection[];
  readonly #stopCtl = new AbortController();
  readonly #heartbeat: Promise<void>;
  /** Other processes: the newest heartbeat number seen and when it last moved. */
  readonly #members = new Map<string, { n: number; movedAt: number }>();
  #beat = 0;
  readonly processId: string;
  /** How many shards the store has. */
  readonly shards: number;

  /** @internal Use `runShardWorkers`. */
  constructor(store: ObjectStore, name: string, shards: number, opts: ShardWorkersOptions) {
    SHARDS_GATE.check();
    const t = electionTimings(opts);
    this.#store = store;
    this.#name = name;
    this.shards = shards;
    this.#clock = timedClock(opts.clock ?? SystemClock);
    this.#logger = fullLogger(opts.logger);
    this.#leaseMs = t.leaseDurationMs;
    this.#renewMs = t.renewIntervalMs;
    this.processId = opts.processId ?? defaultProcessId();
    // A process at its share lets one below it take a handed-back shard first. Not a dead
    // owner's: a standby sees the last renewal up to one interval late, so a lease duration
    // after that is already the bound's full lease duration plus one renewal interval.
    const hooks = {
      claimDelayMs: (released: boolean) => (released && this.owned().length >= this.share() ? Math.min(2 * this.#renewMs, this.#leaseMs - this.#renewMs) : 0),
    };
    this.#elections = Array.from({ length: shards }, (_, shard) => {
      const storeName = shardStoreName(name, shard);
      return ELECTION_GATE.build(
        () =>
          new OwnerElection(
            store,
            `${storeName}/`,
            {
              ...t,
              processId: this.processId,
              clock: this.#clock,
              ...(opts.logger === undefined ? {} : { logger: opts.logger }),
              onChange: (state) => opts.onChange?.(shard, state),
              start: (term) => opts.start({ shard, storeName, name, shards, term }),
            },
            hooks,
          ),
      );
    });
    this.#heartbeat = this.#beatLoop();
  }

  /** The shards this process owns now. */
  owned(): number[] {
    return this.#elections.flatMap((e, i) => (e.state === "owner" ? [i] : []));
  }

  /** How many processes look alive (this one included), by their heartbeats. */
  liveProcesses(): number {
    const now = this.#clock.now();
    let n = 1;
    for (const [id, m] of this.#members) if (id !== this.processId && now - m.movedAt < this.#leaseMs) n++;
    return n;
  }

  /** The most shards this process aims to own: ceil(S / live processes). */
  share(): number {
    return Math.ceil(this.shards / this.liveProcesses());
  }

  /** Leaves every shard's election (stopping the work and releasing the leases) and removes the heartbeat. */
  async stop(): Promise<void> {
    this.#stopCtl.abort();
    await this.#heartbeat;
    await Promise.all(this.#elections.map((e) => e.stop()));
    for (const n of [this.#beat - 1, this.#beat]) {
      if (n >= 1) await this.#store.delete(memberKey(this.#name, this.processId, n)).catch(() => undefined);
    }
  }

  async #beatLoop(): Promise<void> {
    const stop = this.#stopCtl.signal;
    while (!stop.aborted) {
      try {
        await this.#beatOnce();
        this.#balance();
      } catch (err) {
        this.#logger.warn({ err, store: this.#name }, "the worker heartbeat failed; trying again at the next interval");
      }
      try {
        await this.#clock.waitUntil(this.#clock.now() + this.#renewMs, stop);
      } catch {
        break;
      }
    }
  }

  async #beatOnce(): Promise<void> {
    this.#beat += 1;
    // A key only this process writes: a plain put, no condition needed.
    await this.#store.put(memberKey(this.#name, this.processId, this.#beat), new Uint8Array(0));
    if (this.#beat >= 3) await this.#store.delete(memberKey(this.#name, this.processId, this.#beat - 2)).catch(() => undefined);
    const now = this.#clock.now();
    const newest = new Map<string, number>();
    const folder = membersFolder(this.#name);
    for await (const o of listedUnder(this.#store, folder)) {
      const rest = o.key.slice(folder.length);
      const slash = rest.lastIndexOf("/");
      const n = Number(rest.slice(slash + 1));
      if (slash <= 0 || !Number.isSafeInteger(n)) continue;
      const id = rest.slice(0, slash);
      newest.set(id, Math.max(newest.get(id) ?? 0, n));
    }
    for (const [id, n] of newest) {
      const m = this.#members.get(id);
      if (m === undefined || m.n !== n) this.#members.set(id, { n, movedAt: now });
    }
    // A process whose objects are gone left (or was cleaned up): forget it.
    for (const id of [...this.#members.keys()]) if (!newest.has(id)) this.#members.delete(id);
  }

  /** Hands one shard back when this process owns more than its share. */
  #balance(): void {
    const owned = this.owned();
    if (owned.length <= this.share()) return;
    const shard = owned[owned.length - 1]!;
    this.#logger.info({ store: this.#name, shard, owned: owned.length, share: this.share() }, "handing a shard to a process with fewer");
    // Stay away long enough for a process below its share to claim it.
    this.#elections[shard]!.relinquish(2 * this.#leaseMs);
  }
}
