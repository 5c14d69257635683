/**
 * @module What the owner-election tests share: the lease timings they run
 * on (a MockClock's milliseconds) and the wait that lets promise chains and
 * store calls run to completion without moving the clock.
 */

/** The lease duration of every election in these tests. */
export const LEASE = 3_000;
/** Their renewal interval. */
export const RENEW = 1_000;

/** Lets promise chains and store calls run to completion without moving the clock. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
}
