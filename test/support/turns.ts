/**
 * @module Waits counted in turns of the event loop (each a setImmediate),
 * for tests over stores that answer within a few turns (a MemoryStore, a
 * gated store): no clock, no sleep.
 */

/** Lets `n` turns of the event loop run. */
export async function turns(n = 20): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((r) => setImmediate(r));
}

/** Whether `p` settled (resolved or rejected) within `bound` turns; stops turning once it did. */
export async function settlesWithinTurns(p: Promise<unknown>, bound = 500): Promise<boolean> {
  let settled = false;
  const done = () => {
    settled = true;
  };
  p.then(done, done);
  for (let i = 0; i < bound && !settled; i++) await turns(1);
  return settled;
}
