/**
 * @module A queue's stats as its store holds them: the stats record
 * (`n/<queue>`) plus the done jobs its claimed index entries carry (an
 * ack whose follow-up job is inserted claimed counts its done job in that
 * job's entry instead of rewriting the stats record: see `Txn.finish`).
 * Pure over a read source; one scan of the queue's claimed entries.
 */
import { claimedPrefix, statsKey } from "./keys.js";
import { decodeCarriedDone, decodeStats, type QueueStats } from "./record.js";
import type { ReadSource } from "./txn.js";

/** The done jobs of `queue` its claimed entries carry. */
export function carriedDone(src: Pick<ReadSource, "scan">, queue: string): number {
  let done = 0;
  for (const [key, value] of src.scan({ prefix: claimedPrefix(queue) })) done += decodeCarriedDone(key, value);
  return done;
}

/** `stats` (the decoded stats record of `queue`) with the done jobs its claimed entries carry added. */
export function withCarriedDone(src: Pick<ReadSource, "scan">, queue: string, stats: QueueStats): QueueStats {
  const carried = carriedDone(src, queue);
  if (carried !== 0) stats.done += carried;
  return stats;
}

/** The stats of `queue`: its stats record and what its claimed entries carry, read in one turn. */
export function readQueueStats(src: Pick<ReadSource, "get" | "scan">, queue: string): QueueStats {
  const key = statsKey(queue);
  return withCarriedDone(src, queue, decodeStats(key, src.get(key)));
}
