/**
 * @module Headers named "length", "0" and "1" (names every array has, and
 * that code telling arrays from objects reads) while `Object.prototype`
 * holds an accessor or a plain value of those names: the decode assigns a
 * header by name, which the accessor's setter takes, and a header left out
 * must not read the prototype's value. The job keeps its own headers
 * through a claim, a nack, a restart from the store and a claim again.
 *
 * A plain "0" on the prototype (what merging a parsed `{"__proto__":
 * {"0": ...}}` sets) stopped the queue at its next WAL object: the WAL
 * writer read its list of sealed objects one past the end, found the
 * prototype's string there instead of undefined, and sent it as an object
 * (key `wal/...undefined`), which closed the engine.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, MockClock } from "taquba";
import { whileDefined, whilePolluted } from "../support/polluted-prototype.js";
import { enc, openQueue } from "./helpers.js";

const HEADERS = { length: "3", "0": "zero", "1": "one", tenant: "a" };
const queueOpts = { defaultQueueConfig: { backoff: { baseMs: 0, maxMs: 0 } } };

describe('headers named "length", "0" and "1" under a polluted Object.prototype', () => {
  it("are kept whole through a claim, a nack, a restart and a claim again under accessors of those names", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_700_000_000_000);
    let taken = 0;
    const accessor = { get: () => "planted", set: () => void taken++ };
    // An accessor of an index would take every push of the process (see index-setter-records-attack): "length" only.
    await whileDefined({ length: accessor }, async () => {
      const { queue } = await openQueue({ store, clock, ...queueOpts });
      await queue.enqueue("q", enc("p"), { headers: HEADERS });
      const job = (await queue.claim("q"))!;
      expect({ ...job.headers }).toEqual(HEADERS);
      await queue.nack(job, "again");
      await queue.close();
      const reopened = await openQueue({ store, clock, ...queueOpts });
      const again = (await reopened.queue.claim("q"))!;
      expect(again.attempt).toBe(2);
      expect({ ...again.headers }).toEqual(HEADERS);
      expect(Object.hasOwn(again.headers!, "length")).toBe(true);
      await reopened.queue.ack(again);
      await reopened.queue.close();
    });
    // The decode's first pass gave the setter the header; the job kept it as its own all the same.
    expect(taken).toBeGreaterThan(0);
  });

  it("a job without those headers reads none of them from plain values the prototype holds", async () => {
    const { queue } = await openQueue(queueOpts);
    await whilePolluted({ length: "planted", "0": "planted" }, async () => {
      await queue.enqueue("q", enc("p"), { headers: { tenant: "a" } });
      const job = (await queue.claim("q"))!;
      expect(Object.keys(job.headers ?? {})).toEqual(["tenant"]);
      expect(Object.hasOwn(job.headers!, "length")).toBe(false);
      await queue.ack(job);
    });
    await queue.close();
  });
});
