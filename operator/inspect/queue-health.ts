/**
 * @module The health of a queue store as an operator reads it: each
 * queue's counters, its oldest pending job, dead letters, and the engine's
 * backlog (WAL objects not yet folded into a checkpoint, the newest
 * checkpoint's age). Reads only; shared by `taquba queue stats` and the
 * dashboard.
 */
import { decodeManifest } from "../../runtime/engine/manifest.js";
import { parseNumberedKey } from "../../runtime/engine/layout.js";
import { PrefixedStore } from "../../runtime/queue/prefixed-store.js";
import type { QueueReader } from "../../runtime/queue/reader.js";
import type { QueueStats } from "../../runtime/queue/record.js";
import type { ObjectStore } from "../../runtime/store/object-store.js";
import { StoreCorruptedError } from "../../runtime/errors.js";
import { statsKey } from "../../runtime/queue/keys.js";

export interface QueueHealthRow {
  readonly queue: string;
  readonly counts: QueueStats;
  /** Enqueue time of the oldest pending job, when any is pending. */
  readonly oldestPendingAt?: number;
  /** Whether more priority bands existed than were examined (the oldest may be older). */
  readonly oldestApproximate?: boolean;
}

export interface QueueHealth {
  /** When this was read (epoch ms). */
  readonly at: number;
  readonly queues: readonly QueueHealthRow[];
  /** Dead letters over every queue. */
  readonly deadLetters: number;
  /** WAL objects in the store (each is replayed by a reader until a checkpoint covers it). */
  readonly walObjects: number;
  /**
   * Queues whose stats record does not read (every move of such a queue is
   * refused until it is recounted: `taquba queue recount <queue>`), each
   * with what is wrong with it; absent when none. Not in `queues`.
   */
  readonly damagedStats?: readonly { readonly queue: string; readonly detail: string }[];
  /** The newest checkpoint (manifest): its number and when it was written, when any was. */
  readonly checkpoint?: { readonly manifest: number; readonly writtenAt: number };
}

/** Counts the keys under a prefix (one LIST walk). */
async function countObjects(store: ObjectStore, prefix: string): Promise<number> {
  let n = 0;
  for await (const _ of store.list(prefix)) n++;
  return n;
}

/** The newest manifest's number and time, or undefined before the first checkpoint. */
async function newestCheckpoint(engine: ObjectStore): Promise<{ manifest: number; writtenAt: number } | undefined> {
  let newest: string | undefined;
  for await (const o of engine.list("manifest/")) newest = o.key;
  if (newest === undefined) return undefined;
  const id = parseNumberedKey("", "manifest", newest);
  const obj = await engine.get(newest);
  if (id === undefined || obj === null) return undefined;
  const m = decodeManifest(newest, obj.body, id);
  return { manifest: m.id, writtenAt: m.createdAt };
}

/** Reads the health of queue store `name` in `store` through `reader` (already refreshed by the caller). */
export async function readQueueHealth(store: ObjectStore, name: string, reader: QueueReader, now: number): Promise<QueueHealth> {
  const engine = new PrefixedStore(new PrefixedStore(store, `${name}/`), "db/");
  const names = await reader.listQueues();
  const damagedStats: { queue: string; detail: string }[] = [];
  const read = await Promise.all(
    names.map(async (queue): Promise<QueueHealthRow | undefined> => {
      let counts: QueueStats;
      try {
        counts = await reader.stats(queue);
      } catch (err) {
        // One queue's damaged stats record is named beside the others' counts, not the whole page's failure.
        // Another damaged object its stats read (a claimed entry) is no record a recount mends: its error stands.
        if (!(err instanceof StoreCorruptedError) || err.objectKey !== statsKey(queue)) throw err;
        damagedStats.push({ queue, detail: err.detail });
        return undefined;
      }
      if (counts.pending === 0) return { queue, counts };
      const oldest = await reader.oldestPending(queue);
      return {
        queue,
        counts,
        ...(oldest.at === undefined ? {} : { oldestPendingAt: oldest.at }),
        ...(oldest.approximate ? { oldestApproximate: true } : {}),
      };
    }),
  );
  const queues = read.filter((q): q is QueueHealthRow => q !== undefined);
  const [walObjects, checkpoint] = await Promise.all([countObjects(engine, "wal/"), newestCheckpoint(engine)]);
  return {
    at: now,
    queues,
    deadLetters: queues.reduce((n, q) => n + q.counts.dead, 0),
    walObjects,
    ...(damagedStats.length === 0 ? {} : { damagedStats: damagedStats.sort((a, b) => (a.queue < b.queue ? -1 : 1)) }),
    ...(checkpoint === undefined ? {} : { checkpoint }),
  };
}
