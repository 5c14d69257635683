/**
 * @module A queue's open mends its damaged stats records before recovery.
 * Recovery at open moves the claims a stopped process held, which rewrites
 * their queue's stats record (`n/<queue>`); a record that does not read
 * would fail every open of the store, and the recount an operator is told
 * to run goes through the owner that could then never open. The opening
 * owner, before any move, counts each damaged record again from its
 * queue's indexes (as `Queue.recountStats` does) and says so at warn
 * level. A record that reads is left as it is, drifted or not.
 */
import { StoreCorruptedError } from "../errors.js";
import type { FullLogger } from "../logger.js";
import * as K from "./keys.js";
import { ownedBytes } from "./owned-bytes.js";
import { decodeStats } from "./record.js";
import { recountFrom, type StatsRecount } from "./stats-recount.js";
import { Txn, type ReadSource } from "./txn.js";

/** The queues whose stats record does not read, by name. */
export function damagedStatsQueues(src: Pick<ReadSource, "scan">): string[] {
  const damaged: string[] = [];
  for (const [key, bytes] of src.scan({ prefix: K.STATS })) {
    try {
      decodeStats(key, bytes);
    } catch (err) {
      if (!(err instanceof StoreCorruptedError)) throw err;
      damaged.push(key.slice(K.STATS.length));
    }
  }
  return damaged;
}

/** What the opening owner needs: its store's name, its engine, a durable commit and its logger. */
export interface MendHost {
  readonly storeName: string;
  readonly engine: ReadSource;
  commit(txn: Txn): Promise<void>;
  readonly log: FullLogger;
}

/** Recounts every damaged stats record in one durable commit; the recounts written (none: nothing committed). */
export async function mendDamagedStats(host: MendHost): Promise<StatsRecount[]> {
  const queues = damagedStatsQueues(host.engine);
  if (queues.length === 0) return [];
  const txn = new Txn(host.engine);
  const mended: StatsRecount[] = [];
  for (const queue of queues) {
    const { recount, bytes } = recountFrom(host.engine, queue);
    txn.put(K.statsKey(queue), ownedBytes(bytes));
    mended.push({ ...recount, dryRun: false });
  }
  await host.commit(txn);
  for (const m of mended) {
    const { pending, scheduled, claimed, done, dead } = m.recounted;
    host.log.warn(
      { queue: host.storeName, queueName: m.queueName, damage: m.damage, recounted: m.recounted },
      `queue "${host.storeName}": the stats record of queue "${m.queueName}" was damaged (${m.damage ?? "unreadable"}); ` +
        `counted again from its jobs at open: pending ${pending}, scheduled ${scheduled}, claimed ${claimed}, done ${done}, dead ${dead}`,
    );
  }
  return mended;
}
