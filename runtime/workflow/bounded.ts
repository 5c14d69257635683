/**
 * @module Running async work over a list with at most `limit` calls in
 * flight, for store requests that would otherwise go one at a time (slow)
 * or all at once (unbounded).
 */

/**
 * Calls `fn` on every item, at most `limit` at a time, and resolves when all
 * calls have. The first rejection is rethrown once every started call has
 * settled; no call starts after it.
 */
export async function forEachBounded<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const lane = async (): Promise<void> => {
    while (failure === undefined && next < items.length) {
      const item = items[next++]!;
      try {
        await fn(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  if (failure !== undefined) throw failure.error;
}
