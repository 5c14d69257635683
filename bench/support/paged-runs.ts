/**
 * @module The store of paged segment runs that `key-compare-ab.ts`'s
 * lookups and `paged-get-profile.ts` read: RUNS * ENTRIES keys shaped like
 * the queue's (about 40 bytes sharing a 7-byte head, then digits) with
 * 64-byte paged values, then RUNS - 1 runs of updates spread over them.
 */
import type { ObjectStore } from "../../runtime/index.js";

type Taquba = Pick<typeof import("../../runtime/index.js"), "Engine" | "WriteBatch">;

/** Key `k` of the store's keys. */
export const pagedRunKey = (k: number): string => `j/q/01J${String(k).padStart(12, "0")}ABCDEFGHJKMNPQRS`;

/** Every value of the store. */
export const pagedRunValue = new Uint8Array(64).fill(7);

/** Engine options that page the values and keep `runs` segment runs apart (no checkpoint but the explicit ones). */
export function pagedRunsOptions(runs: number) {
  return { pageValues: { keyPrefixes: ["j/"], cacheBytes: 256 * 1024 * 1024 }, maxSegmentRuns: runs * 2, checkpointWalObjects: 0, checkpointWalBytes: 0 };
}

/**
 * Writes the store through `taquba`'s engine: every key, then `runs` - 1 runs
 * of updates spread over the key space, each of 1/(2 * runs) of the keys:
 * newer runs that together stay smaller than the oldest, so no checkpoint
 * compacts them. Throws if the store does not end with `runs` segment runs.
 */
export async function writePagedRuns(taquba: Taquba, store: ObjectStore, runs: number, entries: number): Promise<void> {
  const total = runs * entries;
  const engine = await taquba.Engine.open(store, pagedRunsOptions(runs));
  for (let r = 0; r < runs; r++) {
    const batch = new taquba.WriteBatch();
    for (let k = r === 0 ? 0 : r; k < total; k += r === 0 ? 1 : 2 * runs) batch.put(pagedRunKey(k), pagedRunValue);
    await engine.commit(batch);
    await engine.checkpoint();
  }
  const got = engine.stats.segmentRuns;
  await engine.close();
  if (got !== runs) throw new Error(`expected ${runs} segment runs, got ${got}`);
}
