/**
 * @module A write of an open refused by the store it was given: a store
 * answers a taken key with `PreconditionFailedError`, so a `FencedError`
 * from its own put is a guard around it (an owner's lease guard) refusing
 * every write of this process, most often because the lease it was given
 * lapsed or went to another process. Said as that, not as the newer writer
 * `FencedError` usually reports.
 */
import { FencedError } from "../errors.js";

/** The store's own refusal `err`, as an open reports it; the store's reason is kept in the message and as the cause. */
export function refusedByStore(err: FencedError): FencedError {
  // An error made by another copy of this package may lack `detail`.
  const detail = typeof err.detail === "string" ? err.detail : err.message;
  return new FencedError(detail, {
    message: `the store given to this open refused its write (${detail}): the lease or ownership this process held on the store was lost or ended, and another process may own the store now; stop this process's work on the store and open it again only once this process holds the store (a new owner term)`,
    cause: err,
  });
}

/** `write`, an open's write to its store, with a `FencedError` it throws reported by `refusedByStore`. */
export async function openWrite<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    throw err instanceof FencedError ? refusedByStore(err) : err;
  }
}
