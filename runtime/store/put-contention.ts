/**
 * @module Which stores' puts contend with each other instead of overlapping.
 *
 * A put to a remote store is mostly a round trip: several in flight overlap,
 * and the engine releases a stored WAL object's commits by groups after a
 * slow put so that the next objects leave while the later groups still run
 * (engine/wal-writer.ts). A local disk's put is its own write and syncs:
 * two in flight share the disk and each takes longer, so a put slowed by a
 * busy disk would switch the release to groups, which send about twice the
 * puts per commit, which keep the puts slow. For such a store the engine
 * releases every commit of an object at once, whatever the put took.
 *
 * Not part of `ObjectStore`: a store nobody declared is taken to overlap its
 * puts, as before. Wrappers that add no latency of their own declare what
 * their inner store declared; `withLatency`, which adds a round trip, does not.
 */

/** A weak set, not a property: an object cannot lose or forge the mark by being spread or copied. */
const contending = new WeakSet<object>();

/** Declares that `store`'s puts contend with each other (one local disk) rather than overlap. */
export function declarePutsContend(store: object): void {
  contending.add(store);
}

/** Whether `store` was declared to have puts that contend with each other. */
export function putsContend(store: object): boolean {
  return contending.has(store);
}

/** Declares `wrapper` as `inner` was: for wrappers that add no latency to the puts they pass on. */
export function passPutsContend(inner: object, wrapper: object): void {
  if (contending.has(inner)) contending.add(wrapper);
}
