/**
 * @module Who owns what: per shard (or for the one store of an unsharded
 * deployment), the lease holder, when its lease runs out, and the backlog
 * of the step queue and of the client inbox. Reads only; never fences.
 */
import { listedUnder } from "../store/listing-pages.js";
import { decodeTime } from "ulid";
import { requestsPrefix, KEEP_NAME } from "../client/inbox-layout.js";
import { readShardLayout, shardStoreName } from "../client/shard-route.js";
import { validateQueueName, validateStoreName } from "../queue/names.js";
import { checkOptionalFunction, optionFields, readExactOptions } from "../option-values.js";
import { QueueReader } from "../queue/reader.js";
import type { ObjectStore } from "../store/object-store.js";
import { DEFAULT_STEP_QUEUE } from "../workflow/runs/workflow-view.js";
import { readNewestLease } from "./lease-chain.js";
import { DEFAULT_LEASE_DURATION_MS, DEFAULT_RENEW_INTERVAL_MS } from "./owner-election.js";

/** One line of `readOwners`. */
export interface OwnerStatus {
  /** The shard's number; null for an unsharded store. */
  readonly shard: number | null;
  /** The queue store name (what the owner passed to `Queue.open`). */
  readonly storeName: string;
  /** The process holding the lease; null when none does (released, or never claimed). */
  readonly owner: string | null;
  /**
   * When the lease runs out unless renewed: the holder's clock at its last
   * renewal plus its lease duration (clocks of two machines may differ).
   * Null when no one holds it.
   */
  readonly leaseExpiresAt: number | null;
  /** Jobs of the step queue waiting to run (pending and scheduled) and running; null when the store has no queue yet. */
  readonly backlog: { readonly pending: number; readonly scheduled: number; readonly running: number } | null;
  /** Client requests waiting in the inbox, and the age in ms of the oldest (null when none). */
  readonly inbox: { readonly requests: number; readonly oldestMs: number | null };
}

/** Options of `readOwners`. */
export interface ReadOwnersOptions {
  /** The runtime's step queue (default "workflow-steps"). */
  readonly queueName?: string;
  /** For the age of inbox requests (default `Date.now`). */
  readonly now?: () => number;
}

/** The owner, lease and backlog of every shard of `name` (one line when the store is not sharded). */
export async function readOwners(store: ObjectStore, name: string, given: ReadOwnersOptions = {}): Promise<OwnerStatus[]> {
  validateStoreName(name);
  const opts = readExactOptions(given, optionFields<ReadOwnersOptions>({ queueName: true, now: true }), "ReadOwnersOptions");
  if (opts.queueName !== undefined) validateQueueName(opts.queueName);
  checkOptionalFunction("ReadOwnersOptions.now", opts.now);
  const q = (opts.queueName as string | undefined) ?? DEFAULT_STEP_QUEUE;
  const now = (opts.now as (() => number) | undefined) ?? Date.now;
  const layout = await readShardLayout(store, name);
  const targets =
    layout === undefined
      ? [{ shard: null, storeName: name }]
      : Array.from({ length: layout.shards }, (_, i) => ({ shard: i, storeName: shardStoreName(name, i) }));
  return Promise.all(targets.map((t) => readOne(store, t.shard, t.storeName, q, now)));
}

/** One shard's lease as `readLeases` reads it. */
export interface LeaseStatus {
  readonly shard: number | null;
  readonly owner: string | null;
  readonly leaseExpiresAt: number | null;
}

/**
 * The lease holder and expiry of every shard (one line unsharded), without
 * the backlog: one LIST and one GET per shard. A renewal moves the expiry,
 * so comparing two reads tells whether the owners changed or renewed.
 */
export async function readLeases(store: ObjectStore, name: string): Promise<LeaseStatus[]> {
  validateStoreName(name);
  const layout = await readShardLayout(store, name);
  const targets =
    layout === undefined
      ? [{ shard: null, storeName: name }]
      : Array.from({ length: layout.shards }, (_, i) => ({ shard: i, storeName: shardStoreName(name, i) }));
  return Promise.all(targets.map(async (t) => ({ shard: t.shard, ...(await readHolder(store, t.storeName)) })));
}

async function readHolder(store: ObjectStore, storeName: string): Promise<{ owner: string | null; leaseExpiresAt: number | null }> {
  const lease = await readNewestLease(store, `${storeName}/`, { leaseDurationMs: DEFAULT_LEASE_DURATION_MS, renewIntervalMs: DEFAULT_RENEW_INTERVAL_MS });
  const held = lease !== undefined && !lease.record.released;
  return {
    owner: held ? lease.record.holder : null,
    leaseExpiresAt: held && lease.record.writtenAt > 0 ? lease.record.writtenAt + lease.record.leaseDurationMs : null,
  };
}

async function readOne(store: ObjectStore, shard: number | null, storeName: string, q: string, now: () => number): Promise<OwnerStatus> {
  const holder = await readHolder(store, storeName);
  let backlog: OwnerStatus["backlog"] = null;
  let hasQueue = false;
  for await (const _ of listedUnder(store, `${storeName}/db/`)) {
    hasQueue = true;
    break;
  }
  if (hasQueue) {
    const reader = await QueueReader.open(store, storeName);
    try {
      const s = await reader.stats(q);
      backlog = { pending: s.pending, scheduled: s.scheduled, running: s.claimed };
    } finally {
      await reader.close();
    }
  }
  let requests = 0;
  let oldest: number | undefined;
  const folder = `${storeName}/${requestsPrefix(q)}`;
  for await (const o of listedUnder(store, folder)) {
    const id = o.key.slice(folder.length);
    if (id === KEEP_NAME) continue;
    requests++;
    try {
      const t = decodeTime(id);
      oldest = oldest === undefined ? t : Math.min(oldest, t);
    } catch {
      // not a request id: counted, no age
    }
  }
  return {
    shard,
    storeName,
    ...holder,
    backlog,
    inbox: { requests, oldestMs: oldest === undefined ? null : Math.max(0, now() - oldest) },
  };
}
