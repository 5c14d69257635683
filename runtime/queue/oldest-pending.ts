/**
 * @module The oldest pending job of a queue, for the age gauge and the
 * operator's queue health. Pending jobs are kept by priority, then in
 * enqueue order, so the first job of each priority lane is that lane's
 * oldest: one record read per lane, jumping past each lane.
 */
import * as K from "./keys.js";
import { readJob } from "./transitions.js";
import type { ReadSource } from "./txn.js";
import { warmJobs } from "./warm.js";

/** Priority lanes looked at per queue; beyond, the answer is marked approximate (more lanes are rare). */
export const MAX_PENDING_LANES = 64;

export interface OldestPending {
  /** Enqueue time of the oldest pending job found (a retried job counts from its first enqueue); absent when none is pending. */
  readonly at?: number;
  /** Whether more priority lanes existed than were looked at (the oldest may be older). */
  readonly approximate: boolean;
}

/**
 * Reads `src` synchronously as it is now. The load of a record paged out of
 * memory goes to `cold` and its lane is left out; read again after those
 * loads for a whole answer (see {@link oldestPending}).
 */
export function oldestPendingNow(src: ReadSource, queue: string, cold: Promise<void>[], maxLanes = MAX_PENDING_LANES): OldestPending {
  const prefix = K.pendingPrefix(queue);
  let oldest: number | undefined;
  let start: string | undefined;
  for (let lane = 0; lane < maxLanes; lane++) {
    const first = src
      .scan({ prefix, limit: 1, ...(start === undefined ? {} : { start }) })
      [Symbol.iterator]()
      .next();
    if (first.done === true) return oldest === undefined ? { approximate: false } : { at: oldest, approximate: false };
    const [key, idBytes] = first.value;
    const id = new TextDecoder().decode(idBytes);
    const load = warmJobs(src, [id]);
    if (load !== undefined) cold.push(load);
    const r = load === undefined ? readJob(src, id) : undefined;
    if (r !== undefined && (oldest === undefined || r.enqueuedAt < oldest)) oldest = r.enqueuedAt;
    const priority = Number(key.slice(prefix.length, key.indexOf("/", prefix.length)));
    if (!Number.isSafeInteger(priority)) break;
    start = `${prefix}${K.padPriority(priority + 1)}/`;
  }
  return oldest === undefined ? { approximate: true } : { at: oldest, approximate: true };
}

/** {@link oldestPendingNow}, loading paged-out records until every lane looked at was read. */
export async function oldestPending(src: ReadSource, queue: string, maxLanes = MAX_PENDING_LANES): Promise<OldestPending> {
  for (;;) {
    const cold: Promise<void>[] = [];
    const out = oldestPendingNow(src, queue, cold, maxLanes);
    if (cold.length === 0) return out;
    await Promise.all(cold);
  }
}
