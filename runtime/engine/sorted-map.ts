/**
 * @module The engine's record of keys changed since the last checkpoint
 * cut. (The ordered map of the state itself is ordered-map.ts, behind
 * memtable.ts.)
 */
import type { ChangedKeys } from "./changed-keys.js";

/**
 * The keys changed since the last checkpoint cut, with their new values
 * (packed when the engine packs them, see `applyOps`); `null` marks a
 * deleted key. A hash map (its keys as bytes outside the heap, see
 * changed-keys.ts), so recording a change costs far less than an ordered
 * insert; an incremental checkpoint orders the keys (change-order.ts) and
 * writes them as a segment run, nulls as tombstones.
 */
export type DeltaMap = ChangedKeys;

/**
 * Whether a delta has grown past what an incremental checkpoint is worth:
 * more than half as many keys as the state (and past a small floor). The
 * engine then stops recording and the next checkpoint rewrites the state,
 * which costs no more; this also bounds the delta's memory by the state's.
 */
export function deltaOverflows(delta: DeltaMap, stateSize: number): boolean {
  return delta.size > 4096 && delta.size > stateSize / 2;
}
