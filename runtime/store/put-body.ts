/**
 * @module Which stores are done with a put's body once the put settles, so
 * the caller may write over it: the engine then writes its next segment or
 * WAL object into the buffer of one already stored instead of a new one.
 *
 * Not part of `ObjectStore`: a store nobody declared is assumed to keep the
 * body it was given (a map of the caller's arrays would), and gets a fresh
 * buffer per object, as before. `LocalStore` and `MemoryStore` copy the body
 * before their first await; the wrappers declare what their inner store
 * declared, since they hand the body straight to it.
 *
 * The other way round, a caller may lend a body (`lendBody`): it promises
 * not to write over it before the put settles, so a store that copies only
 * to protect itself from such writes need not.
 */

/** Weak sets, not properties: an object cannot lose or forge a mark by being spread or copied. */
const released = new WeakSet<object>();
const lent = new WeakSet<Uint8Array>();

/** Declares that `store` reads a put's body no more once that put's promise settles. */
export function declarePutBodyReleased(store: object): void {
  released.add(store);
}

/** Whether `store` was declared done with a put's body once the put settles. */
export function putBodyReleased(store: object): boolean {
  return released.has(store);
}

/** Declares `wrapper` as `inner` was: for wrappers that pass the body straight to `inner`. */
export function passPutBodyReleased(inner: object, wrapper: object): void {
  if (released.has(inner)) released.add(wrapper);
}

/**
 * Marks `body` as lent to the puts it is given to: its caller writes over it
 * only once those puts settled, so a store that would copy it to keep a
 * later mutation out of the stored object (`LocalStore`) may write it as it
 * is. The engine lends its WAL objects and segments.
 */
export function lendBody(body: Uint8Array): void {
  lent.add(body);
}

/** Whether `body` was lent (see `lendBody`). */
export function isLentBody(body: Uint8Array): boolean {
  return lent.has(body);
}
