/**
 * @module Which stores are done with a put's body once the put settles, so
 * the caller may write over it: the engine then writes its next segment or
 * WAL object into the buffer of one already stored instead of a new one.
 *
 * Not part of `ObjectStore`: a store nobody declared is assumed to keep the
 * body it was given (a map of the caller's arrays would), and gets a fresh
 * buffer per object. `LocalStore` writes the body out before its put
 * settles; the wrappers declare what their inner store declared, since they
 * hand the body straight to it. `MemoryStore` is not declared: it keeps a
 * lent body as the object's bytes.
 *
 * The other way round, a caller may lend a body (`lendBody`). The contract
 * of a lent body: the caller never writes it while a put of it may read it,
 * and once the put settled (resolved or rejected) it writes over it only if
 * the store was declared done with bodies; to any other store the body is
 * handed over for good, and the caller never writes it again. So a store
 * copies a lent body neither to keep the caller's later writes out of the
 * object (`LocalStore` writes it as it is) nor to keep it (`MemoryStore`).
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
 * Marks `body` as lent to the puts it is given to (see the module
 * documentation): its caller writes over it only once those puts settled,
 * and only when their store was declared done with bodies; never, for any
 * other store. So a store that would copy it to keep a later write out of
 * the stored object may write it as it is (`LocalStore`), and a store not
 * declared may keep it without a copy (`MemoryStore`). The engine lends its
 * WAL objects, segments and manifests. Only this exact view is marked: a
 * subarray of it is not lent.
 */
export function lendBody(body: Uint8Array): void {
  lent.add(body);
}

/** Whether `body` was lent (see `lendBody`). */
export function isLentBody(body: Uint8Array): boolean {
  return lent.has(body);
}

/**
 * Whether a store that may keep a lent body keeps `body` as it is: it fills
 * at least three quarters of its buffer (a segment of a builder's buffer
 * sized for a whole one that ended small would hold the rest of that buffer
 * for as long as the object lives; so would a small object in Node's shared
 * slab), on a buffer that neither changes size nor is shared with another
 * thread. A caller handing over a body that does not, copies it itself and
 * keeps the buffer.
 */
export function keepsAsItIs(body: Uint8Array): boolean {
  const buf = body.buffer as ArrayBufferLike & { resizable?: boolean };
  return buf instanceof ArrayBuffer && buf.resizable !== true && body.byteLength * 4 >= buf.byteLength * 3;
}
