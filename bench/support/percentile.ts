/**
 * @module Percentiles of measured latencies, for benchmark reports.
 */

/**
 * The `p`-th percentile (0-100) of `sorted`, which must be in ascending
 * order: the nearest-rank value at or below it, never interpolated. NaN
 * for an empty list.
 */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The median of `xs` (any order; not changed), as `percentile` gives it. */
export function median(xs: readonly number[]): number {
  return percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );
}
