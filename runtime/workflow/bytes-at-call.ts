/**
 * @module A caller's bytes taken at the call. A call that waits for a lock
 * or reads the store before it writes what it was given (a signal, a child
 * run's start, a group's members) would otherwise store whatever the
 * caller's array holds by then: the caller may change it, or detach its
 * buffer, as soon as the call returns its promise.
 */
import { ValidationError } from "../errors.js";
import { copyOwned } from "../queue/owned-bytes.js";

/**
 * A plain copy of `bytes` (a `Uint8Array` the caller checked) as they are
 * now. Throws `ValidationError` when they are gone (a view of a detached
 * or shrunk buffer), naming them as `what` says, before anything is done.
 */
export function bytesAtCall(what: string, bytes: Uint8Array): Uint8Array {
  const copy = copyOwned(bytes);
  if (copy === undefined) throw new ValidationError(`${what} is a view of a detached or shrunk ArrayBuffer, whose bytes are gone; pass a view of live bytes`);
  return copy;
}
