/**
 * @module The queue commits its transactions through the engine's owned
 * entry, which checks only the values marked as given from outside the
 * queue: a caller's KV value (`kvPut`, `kvCompareAndPut`, a staged effect,
 * even one pushed into `kvOps` by hand) must be one of them. A value whose
 * length answers differently on each read would otherwise reach the WAL with
 * one length and memory with another.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue } from "taquba";
import { SettlementEffects } from "../../runtime/queue/effects.js";

/** A `Uint8Array` subclass whose `byteLength` is true once, then 1 (`slice` keeps the subclass, so a copy lies too). */
class LyingBytes extends Uint8Array {
  #reads = 0;
  override get byteLength(): number {
    return this.#reads++ === 0 ? super.byteLength : 1;
  }
}

/** Runs `write` on a fresh queue, then checks that a reopen reads what the queue read before closing. */
async function expectReopenReadsTheSame(write: (queue: Queue) => Promise<unknown>, key: string): Promise<void> {
  const store = new MemoryStore();
  const queue = await Queue.open(store, "q");
  await write(queue);
  const before = await queue.kvGet(key);
  expect(before).toEqual(new Uint8Array([1, 2, 3]));
  await queue.close();
  const reopened = await Queue.open(store, "q");
  try {
    expect(await reopened.kvGet(key)).toEqual(before);
  } finally {
    await reopened.close();
  }
}

describe("caller values committed through the queue's transactions", () => {
  it("kvPut of a subclass whose byteLength lies: a reopen reads what memory held", () =>
    expectReopenReadsTheSame((q) => q.kvPut("k", LyingBytes.of(1, 2, 3)), "k"));

  it("kvCompareAndPut of a subclass whose byteLength lies: a reopen reads what memory held", () =>
    expectReopenReadsTheSame((q) => q.kvCompareAndPut("k", null, LyingBytes.of(1, 2, 3)), "k"));

  it("a staged kvPut of such a value: a reopen reads what memory held", () =>
    expectReopenReadsTheSame(async (q) => {
      await q.enqueue("jobs", new Uint8Array([0]));
      const job = await q.claim("jobs");
      await q.ack(job!, new SettlementEffects().kvPut("k", LyingBytes.of(1, 2, 3)));
    }, "k"));

  it("a put pushed into kvOps by hand, past every check: a reopen reads what memory held", () =>
    expectReopenReadsTheSame(async (q) => {
      await q.enqueue("jobs", new Uint8Array([0]));
      const job = await q.claim("jobs");
      const effects = new SettlementEffects();
      effects.kvOps.push({ kind: "put", key: "k", value: LyingBytes.of(1, 2, 3) });
      await q.ack(job!, effects);
    }, "k"));
});
