/**
 * @module The marks a store wrapper passes on when it hands each put
 * straight to the store it wraps and adds no latency of its own: the body
 * released once the put settles (put-body.ts) and puts that contend
 * (put-contention.ts). One call, so a new wrapper cannot pass one and
 * forget the other (`withLatency`, which adds a round trip, passes only
 * the first).
 */
import { passPutBodyReleased } from "./put-body.js";
import { passPutsContend } from "./put-contention.js";

/** Declares `wrapper` as `inner` was declared, for both marks. */
export function passPutMarks(inner: object, wrapper: object): void {
  passPutBodyReleased(inner, wrapper);
  passPutsContend(inner, wrapper);
}
