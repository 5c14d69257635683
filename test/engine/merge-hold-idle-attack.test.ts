/**
 * @module The merge a freeze holds back until the next writes are weighed
 * (`#mergeHold`), when no write ever comes: the runs stay within their
 * bound and every read stays right, `finishMerges` runs the held merge,
 * and an engine whose last writes left one held checkpoints, closes and
 * reopens with nothing waiting on a merge that never starts.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { LayeredState } from "../../runtime/engine/layered-state.js";
import type { MemtableRange } from "../../runtime/engine/memtable-size.js";

const key = (i: number) => `k/${String(i).padStart(7, "0")}`;
const turns = async (n: number) => {
  for (let t = 0; t < n; t++) await new Promise((resolve) => setImmediate(resolve));
};

describe("a merge held after a freeze, with no writes after it", () => {
  it("stays held through idle turns with reads right, and finishMerges runs it", async () => {
    const range: MemtableRange = { minKeys: 256, maxKeys: 2048 };
    const width = 4 * range.minKeys;
    const state = new LayeredState({ memtableRange: range });
    for (let i = 0; i < width; i++) state.set(key(i), i);
    await turns(20);
    // Four runs of one tier: a merge is due, and held for writes that never come.
    expect(state.runCount).toBe(4);
    expect(state.counters.merges).toBe(0);
    await turns(20);
    expect(state.counters.merges, "idle turns start no held merge").toBe(0);
    for (let i = 0; i < width; i++) expect(state.get(key(i))).toBe(i);
    state.finishMerges();
    expect(state.counters.merges, "finishMerges runs the merge held").toBe(1);
    expect(state.runCount).toBe(1);
    expect(state.layout.merging).toBe(0);
    for (let i = 0; i < width; i++) expect(state.get(key(i))).toBe(i);
  });

  it("an engine whose fill left a merge held checkpoints, closes and reopens with every key", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, { checkpointWalObjects: 0 });
    // Four of the smallest memtables the engine chooses, written once: the last freeze's merge is held.
    const width = 4 * 32_768 + 10;
    const enc = (i: number) => new Uint8Array([i & 0xff, (i >> 8) & 0xff]);
    for (let i = 0; i < width; i += 2048) {
      const b = new WriteBatch();
      for (let j = i; j < Math.min(width, i + 2048); j++) b.put(key(j), enc(j));
      await engine.commit(b);
    }
    await turns(20);
    // The four runs wait for a merge the hold keeps from starting.
    expect(engine.stats.keyRuns).toBe(4);
    expect(engine.stats.runMerges).toBe(0);
    await engine.checkpoint();
    await engine.close();
    const again = await Engine.open(store, { checkpointWalObjects: 0 });
    for (const i of [0, 1, 32_767, 32_768, 65_536, 98_304, width - 1]) expect(await again.get(key(i)), key(i)).toEqual(enc(i));
    let n = 0;
    for await (const _ of again.scan({ start: "k/", end: "k0" })) n++;
    expect(n).toBe(width);
    await again.close();
  }, 120_000);
});
