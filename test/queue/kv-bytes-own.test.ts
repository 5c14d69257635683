/**
 * @module Caller KV bytes cross the queue's boundary as copies, both ways:
 * a value handed to `kvPut`, `kvCompareAndPut` or `SettlementEffects.kvPut`
 * and changed afterwards, and a value read with `kvGet` or `kvScan` (of the
 * queue, its view, a `QueueReader`) and changed by the reader, change
 * neither what later reads report nor what a checkpoint stores. The engine
 * keeps committed values as they are, so without the copies they were its
 * own arrays (held values without record paging, or values over 64 bytes
 * with it).
 */
import { describe, expect, it } from "vitest";
import { MemoryStore, Queue, QueueReader, SettlementEffects, type OpenOptions } from "taquba";

/** Arrays of both kinds callers pass: a Buffer's `slice` is a view, not a copy. */
const kinds = [
  ["Uint8Array", (n: number) => new Uint8Array(n)],
  ["Buffer", (n: number) => Buffer.alloc(n)],
] as const;
/** Checkpoint after every WAL object, so a later commit stores the state as it is in memory then. */
const checkpointing: OpenOptions = { engineOptions: { checkpointWalObjects: 1 } };

describe.each(
  kinds.flatMap(([kind, make]) =>
    [
      ["with record paging", checkpointing],
      ["without record paging", { ...checkpointing, recordCacheBytes: null }],
    ].map(([label, opts]) => [`${kind}, ${label as string}`, opts as OpenOptions, make] as const),
  ),
)("caller KV bytes are copies (%s)", (_label, opts, make) => {
  const bytes = (n: number, v: number) => make(n).fill(v);
  /** What a read must hold, compared as plain arrays (a read may answer with either kind). */
  const want = (n: number, v: number) => new Uint8Array(n).fill(v);
  const plain = (v: Uint8Array | null) => (v === null ? null : new Uint8Array(v));
  it("values changed by the caller after kvPut, kvCompareAndPut or staging an effect are stored as they were given", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "q", opts);
    const put = bytes(10_000, 1);
    await queue.kvPut("put", put);
    put.fill(9);
    const swapped = bytes(200, 2);
    expect(await queue.kvCompareAndPut("cas", null, swapped)).toBe(true);
    swapped.fill(9);
    const staged = bytes(300, 3);
    const effects = new SettlementEffects().kvPut("effect", staged);
    // Changed between staging and the commit, too: what was staged is what commits.
    staged.fill(8);
    await queue.enqueueWithEffects("jobs", bytes(1, 0), {}, effects);
    staged.fill(9);
    const expected = { put: want(10_000, 1), cas: want(200, 2), effect: want(300, 3) };
    for (const [k, v] of Object.entries(expected)) expect(plain(await queue.kvGet(k)), k).toEqual(v);
    await queue.kvPut("later", bytes(1, 0)); // a checkpoint of the state as it is now
    await queue.close();
    const reopened = await Queue.open(store, "q", opts);
    for (const [k, v] of Object.entries(expected)) expect(plain(await reopened.kvGet(k)), k).toEqual(v);
    await reopened.close();
  });

  it("values read and changed by the reader change no later read and nothing a checkpoint stores", async () => {
    const store = new MemoryStore();
    const queue = await Queue.open(store, "q", opts);
    const sizes = { a: 10, b: 100, c: 10_000 };
    for (const [k, n] of Object.entries(sizes)) await queue.kvPut(k, bytes(n, 5));
    const reads = [
      async () => [await queue.kvGet("a"), await queue.kvGet("b"), await queue.kvGet("c")],
      async () => (await queue.kvScan("")).entries.map((e) => e.value),
      async () => [await queue.view().kvGet("c")],
      async () => (await queue.view().kvScan("")).entries.map((e) => e.value),
    ];
    for (const read of reads) for (const v of await read()) v!.fill(0xee);
    for (const [k, n] of Object.entries(sizes)) expect(plain(await queue.kvGet(k)), k).toEqual(want(n, 5));
    await queue.kvPut("later", bytes(1, 0)); // a checkpoint of the state as it is now
    await queue.close();

    const reader = await QueueReader.open(store, "q");
    for (const v of [await reader.kvGet("c"), ...(await reader.kvScan("")).entries.map((e) => e.value)]) v!.fill(0xee);
    for (const [k, n] of Object.entries(sizes)) expect(plain(await reader.kvGet(k)), k).toEqual(want(n, 5));
    await reader.close();
    const reopened = await Queue.open(store, "q", opts);
    for (const [k, n] of Object.entries(sizes)) expect(plain(await reopened.kvGet(k)), k).toEqual(want(n, 5));
    await reopened.close();
  });
});
