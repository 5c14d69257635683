/**
 * @module A store view that notes the first write its store refused with
 * `FencedError`. Stores answer a lost create with `PreconditionFailedError`;
 * `FencedError` from the store itself is a refusal of every write from this
 * process (an owner's lease guard whose term ended or ran out). An open's
 * claim takes a `FencedError` from its publish for a checkpoint that took
 * its number and tries again, so under a refusing store it tried for the
 * whole claim patience (30 s) and then blamed another writer; with this
 * view the open stops at the first refusal and says why.
 */
import { FencedError } from "../errors.js";
import type { ObjectStore } from "../store/object-store.js";
import { passPutMarks } from "../store/pass-put-marks.js";

/** `store` with its write refusals noted; `refused()` is the first one, if any. */
export function noteWriteRefusals(store: ObjectStore): { store: ObjectStore; refused(): FencedError | undefined } {
  let first: FencedError | undefined;
  const note = (err: unknown): never => {
    if (err instanceof FencedError) first ??= err;
    throw err;
  };
  const view: ObjectStore = {
    get: (key) => store.get(key),
    list: (prefix, opts) => store.list(prefix, opts),
    put: (key, body, opts) => store.put(key, body, opts).catch(note),
    delete: (key) => store.delete(key).catch(note),
  };
  // Each put goes straight to `store`: it may keep a lent body as it would without the view.
  passPutMarks(store, view);
  return { store: view, refused: () => first };
}
