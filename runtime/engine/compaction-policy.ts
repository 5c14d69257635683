/**
 * @module What a checkpoint cut with no compaction running writes: a new run
 * of its changes, a new run that also folds the newest runs into it
 * (size-tiered), or the whole state as one run (a compaction). See
 * docs/engine.md, "Compaction by tiers".
 *
 * Only a compaction rewrites the oldest run, so only a compaction drops
 * tombstones and superseded values: it comes when the newer runs together
 * outgrow the oldest (rewriting the oldest then costs at most what they
 * hold), or when two thirds of the entries the runs list are dead (the
 * open and the store pay for them). At `maxSegmentRuns` otherwise
 * the checkpoint folds the newest runs into its own, which keeps the oldest
 * run and the bytes written per checkpoint a fraction of the state.
 */

/**
 * The entries the runs list (tombstones and superseded values included) at
 * which a compaction comes, as a multiple of the live keys: 3, so at most
 * two thirds of what is listed is dead. A drain that deletes what the
 * oldest run holds then compacts once half of it died and rewrites the
 * other half: about the oldest run once over a drain to empty, where 2
 * rewrote it about twice (a third died, two thirds rewritten, and so on).
 */
export const DEAD_LISTED_FACTOR = 3;

/**
 * Most runs one fold takes (the classic size-tiered threshold): a fold runs
 * in the incremental slot, so no other checkpoint runs until it published,
 * and folding every run of one size at once (a fill leaves many alike)
 * held commits for as long as a compaction of them.
 */
export const MAX_FOLD_RUNS = 4;

/** What the policy needs of one run: its entries (tombstones included) and its bytes. */
export interface RunSize {
  entries: number;
  bytes: number;
}

/** What a checkpoint writes: its changes as a new run, that run with the newest `fold` runs folded in, or the whole state. */
export type CheckpointPlan = { kind: "add" } | { kind: "fold"; fold: number } | { kind: "full" };

/**
 * The plan of a checkpoint of `changedKeys` changes over `runs` (oldest
 * first) when `liveKeys` keys have a value. A compaction when the runs are
 * at the cap of 1, when the change is as large as the state, when the newer
 * runs outgrow the oldest, or when the entries listed (the changes counted
 * as entries too) are at least `DEAD_LISTED_FACTOR` times the live keys; else a fold at the cap
 * (`maxRuns`), else a new run. Without `byTier`, a compaction at the cap
 * and no dead-share rule, as before tiers.
 */
export function planCheckpoint(runs: readonly RunSize[], changedKeys: number, liveKeys: number, maxRuns: number, byTier: boolean): CheckpointPlan {
  if (maxRuns <= 1) return { kind: "full" };
  if (changedKeys >= liveKeys) return { kind: "full" };
  if (runs.length === 0) return { kind: "add" };
  const newer = runs.slice(1);
  if (newer.reduce((n, r) => n + r.bytes, 0) >= runs[0]!.bytes) return { kind: "full" };
  // Without tiers, the cap itself compacts (the behaviour before tiers, still the engine's default).
  if (!byTier) return runs.length >= maxRuns ? { kind: "full" } : { kind: "add" };
  const listed = runs.reduce((n, r) => n + r.entries, changedKeys);
  if (listed >= DEAD_LISTED_FACTOR * liveKeys) return { kind: "full" };
  if (runs.length < maxRuns) return { kind: "add" };
  return { kind: "fold", fold: tierFold(newer, changedKeys, MAX_FOLD_RUNS) };
}

/**
 * How many of the newest `runs` a checkpoint of `changedKeys` entries folds
 * into its own run (at least one when there is one): the newest always,
 * then older ones while each holds at most twice the entries the fold holds
 * so far, `maxRuns` at most (a fold by tier takes `MAX_FOLD_RUNS`; beside
 * a compaction, where other checkpoints go on, there is no such bound). Runs of similar size merge, so an entry is rewritten about log2
 * of the runs it passes through, not once per checkpoint.
 */
export function tierFold(runs: readonly RunSize[], changedKeys: number, maxRuns = Number.POSITIVE_INFINITY): number {
  let taken = 0;
  let holds = changedKeys;
  for (let i = runs.length - 1; i >= 0; i--) {
    const entries = runs[i]!.entries;
    if (taken > 0 && (entries > 2 * holds || taken >= maxRuns)) break;
    taken++;
    holds += entries;
  }
  return taken;
}
