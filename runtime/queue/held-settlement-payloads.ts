/**
 * @module A settlement's enqueued payloads held across its awaits. A
 * settlement builds its commit in the caller's turn when it can, and then
 * reads each enqueue's bytes there: an item made for a commit in that turn
 * (a workflow step's next job, holding the array its runner returned) is
 * not copied. When it must await first (a payload offloaded, or the
 * claimed job's record paged out and loaded), the caller's code runs
 * before the encode: the payloads are copied before that first await, so
 * what is stored is what the settlement was given.
 *
 * Only these slower paths copy (each of them writes or reads the store
 * anyway); an item staged by `SettlementEffects.enqueue` already holds a
 * copy of its own, and is copied again here, since the two are not told
 * apart for the rare case.
 */
import type { EnqueueItem } from "./types.js";
import type { PreparedEnqueue } from "./transitions.js";
import { heldPayload } from "./payload-at-call.js";
import { copyOwned } from "./owned-bytes.js";
import { checkedPayloadOf } from "./validate-enqueue.js";

/**
 * `prepared` with each payload replaced by a copy of its bytes now. Throws
 * `ValidationError` naming the job when a payload's bytes are gone (the
 * caller checks and discards the prepared enqueues then).
 */
export function holdPrepared(prepared: readonly PreparedEnqueue[]): readonly PreparedEnqueue[] {
  for (const p of prepared) p.payload = heldPayload(p.payload, p.queueName, p.opts.jobId);
  return prepared;
}

/**
 * The enqueues `preparing` (the `QueueCore.prepare` of `items`, offloading
 * a payload) resolves to, each holding a copy of its payload's bytes as
 * they were at this call: taken now, swapped in once prepared. An item
 * pushed into the effects by hand was copied by `prepare` already (it is
 * checked and copied there, see `ownEnqueueItem`).
 */
export function heldOncePrepared(items: readonly EnqueueItem[], preparing: Promise<readonly PreparedEnqueue[]>): Promise<readonly PreparedEnqueue[]> {
  const given: (Uint8Array | undefined)[] = [];
  const copies: (Uint8Array | undefined)[] = [];
  for (const item of items) {
    const payload = checkedPayloadOf(item);
    given.push(payload);
    // Checked in this turn by `prepare`, so its bytes are not gone: a copy that failed would keep the array.
    copies.push(payload === undefined ? undefined : (copyOwned(payload) ?? payload));
  }
  return preparing.then((prepared) => {
    for (let i = 0; i < prepared.length; i++) {
      const p = prepared[i]!;
      // Only in place of the very array copied: effects whose list reads differently a second time swap nothing.
      if (given[i] !== undefined && p.payload === given[i]) p.payload = copies[i]!;
    }
    return prepared;
  });
}
