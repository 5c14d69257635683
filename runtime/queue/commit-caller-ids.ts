/**
 * @module The job ids callers name for the jobs of one commit (a batch, a
 * settlement's enqueues). An id drawn for a job without one must pass over
 * every one of them, those of items after it as well, which the
 * transaction has not written yet when the draw is made; and one id named
 * by two items is refused before anything is written.
 */
import { DuplicateJobIdError } from "./errors.js";
import type { EnqueueOptions } from "./types.js";

/**
 * The ids `items` name, or undefined when no draw can meet one (a single
 * item, or none names an id: the common case costs no set). Throws
 * `DuplicateJobIdError` naming both positions when two items name one id.
 */
export function callerIdsOfCommit(items: readonly { readonly opts?: EnqueueOptions }[]): ReadonlySet<string> | undefined {
  if (items.length < 2) return undefined;
  let named: Map<string, number> | undefined;
  for (let i = 0; i < items.length; i++) {
    const id = items[i]!.opts?.jobId;
    if (id === undefined) continue;
    named ??= new Map();
    const first = named.get(id);
    if (first !== undefined) throw new DuplicateJobIdError(id, [first, i]);
    named.set(id, i);
  }
  return named === undefined ? undefined : new Set(named.keys());
}
