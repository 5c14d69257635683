/**
 * @module Claims and lease expiry while `Object.prototype` or
 * `Array.prototype` holds a plain value under an index (as merging a parsed
 * `{"__proto__": {"0": ...}}` sets it). Reading an array past its end then
 * finds that value instead of undefined:
 *
 * - a claim of a queue with nothing ready answered the first element of
 *   an empty list: the prototype's value came back as the claimed job
 *   (and settling it was refused as a copy);
 * - the reaper read the earliest lease of an empty expiry heap, took the
 *   value for a lease and threw, so no expired lease went back to its
 *   queue while the heap stayed empty of current leases.
 */
import { describe, expect, it } from "vitest";
import { enc, openQueue } from "./helpers.js";
import { INDEXED_PROTOTYPES, whileIndexed } from "../support/polluted-prototype.js";

describe("a queue under a plain value at index 0 of a prototype", () => {
  for (const [name, target] of INDEXED_PROTOTYPES) {
    for (const value of ["planted", { id: "planted" }]) {
      it(`claims null from an empty queue, then each job once (${name}, ${typeof value})`, async () => {
        const { queue } = await openQueue();
        await whileIndexed(target, "0", value, async () => {
          expect(await queue.claim("q")).toBeNull();
          expect(await queue.claimBatch("q", 4)).toEqual([]);
          await queue.enqueue("q", enc("a"));
          const job = await queue.claim("q");
          expect(job?.payload).toEqual(enc("a"));
          await queue.ack(job!);
          expect(await queue.claim("q")).toBeNull();
        });
        expect((await queue.view().stats("q")).done).toBe(1);
        await queue.close();
      });

      it(`puts a job whose lease expired back in its queue (${name}, ${typeof value})`, async () => {
        const { queue, clock } = await openQueue();
        await whileIndexed(target, "0", value, async () => {
          await queue.enqueue("q", enc("a"), { maxAttempts: 3 });
          // Nothing leased yet: the reaper reads an empty heap.
          await queue.runMaintenance();
          const first = await queue.claim("q", 1_000);
          expect(first?.attempt).toBe(1);
          clock.advance(1_001);
          await queue.runMaintenance();
          const again = await queue.claim("q", 60_000);
          expect(again?.attempt).toBe(2);
          await queue.ack(again!);
        });
        expect(await queue.view().stats("q")).toMatchObject({ done: 1, pending: 0, claimed: 0 });
        await queue.close();
      });
    }
  }
});
