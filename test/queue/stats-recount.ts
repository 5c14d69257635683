/**
 * @module A queue's stats recounted from its indexes, to compare with the
 * stats it keeps: pending, scheduled, claimed and dead jobs each have one
 * index entry (the done count only grows and is left out).
 */
import type { QueueStats } from "taquba";
import * as K from "../../runtime/queue/keys.js";
import type { ReadSource } from "../../runtime/queue/txn.js";

export type Recounted = Omit<QueueStats, "done">;

/** The pending, scheduled, claimed and dead entries of `queue` in `src`. */
export function recount(src: Pick<ReadSource, "scan">, queue: string): Recounted {
  const n = (prefix: string) => [...src.scan({ prefix })].length;
  const scheduled = [...src.scan({ prefix: K.SCHEDULED })].filter(([k]) => K.parseScheduledKey(k).queue === queue).length;
  return { pending: n(K.pendingPrefix(queue)), scheduled, claimed: n(K.claimedPrefix(queue)), dead: n(K.deadPrefix(queue)) };
}

/** `stats` without the done count. */
export function counted(stats: QueueStats): Recounted {
  const { pending, scheduled, claimed, dead } = stats;
  return { pending, scheduled, claimed, dead };
}
