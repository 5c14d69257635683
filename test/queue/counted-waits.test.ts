/**
 * `CountedWaits`, what a queue's close waits for: a promise added by two
 * waiters (two chained settlements whose commits share one WAL group's
 * promise) stays until both took it back.
 */
import { describe, expect, it } from "vitest";
import { CountedWaits } from "../../runtime/queue/counted-waits.js";

describe("CountedWaits", () => {
  it("keeps a promise added twice until both waiters took it back, and lists each promise once", () => {
    const waits = new CountedWaits();
    const shared = Promise.resolve();
    const own = Promise.resolve();
    waits.add(shared);
    waits.add(shared);
    waits.add(own);
    expect(waits.size).toBe(2);
    expect([...waits]).toEqual([shared, own]);
    waits.delete(shared);
    expect([...waits]).toEqual([shared, own]);
    waits.delete(own);
    waits.delete(shared);
    expect(waits.size).toBe(0);
    // A promise never added, or taken back once too often, changes nothing.
    waits.delete(shared);
    waits.add(own);
    expect([...waits]).toEqual([own]);
  });
});
