/**
 * @module `EngineOptions.memtableKeys`: how many keys the writer's memtable
 * holds before it freezes them into a key run. Out-of-range values are
 * refused before any store request; a memtable sized above the keys written
 * freezes none; nothing stored depends on the setting, so a store written
 * under one size reopens under another with the same contents.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, ValidationError, WriteBatch, type EngineOptions } from "taquba";
import { withCounting } from "taquba/testing";

const KEYS = 40_000;

async function writeKeys(engine: Engine, from: number, count: number, tag: string): Promise<void> {
  for (let at = from; at < from + count; at += 1_000) {
    const batch = new WriteBatch();
    for (let i = at; i < Math.min(at + 1_000, from + count); i++) batch.put(`k/${String(i).padStart(6, "0")}`, new TextEncoder().encode(`${tag}${i}`));
    await engine.commit(batch);
  }
}

describe("EngineOptions.memtableKeys", () => {
  it.each([0, 1_023, 4_194_305, Number.NaN, Number.POSITIVE_INFINITY, 1_500.5, "65536", -1])("refuses %s before any store request", async (value) => {
    const store = withCounting(new MemoryStore());
    const err = await Engine.open(store, { memtableKeys: value } as unknown as EngineOptions).then(
      async (e) => {
        await e.close();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toMatch(/memtableKeys/);
    expect(store.counts.gets + store.counts.puts + store.counts.lists + store.counts.deletes).toBe(0);
  });

  it("freezes no run while the keys written fit the memtable, and does with the default", async () => {
    const roomy = await Engine.open(new MemoryStore(), { memtableKeys: 65_536, checkpointWalObjects: 0, checkpointWalBytes: 0 });
    await writeKeys(roomy, 0, KEYS, "v");
    expect(roomy.stats.memtableFreezes).toBe(0);
    await roomy.close();

    const usual = await Engine.open(new MemoryStore(), { checkpointWalObjects: 0, checkpointWalBytes: 0 });
    await writeKeys(usual, 0, KEYS, "v");
    expect(usual.stats.memtableFreezes).toBeGreaterThan(0);
    await usual.close();
  });

  it("reads the same contents after rewrites, under a small memtable and then a large one over the same store", async () => {
    const store = new MemoryStore();
    const small = await Engine.open(store, { memtableKeys: 1_024 });
    await writeKeys(small, 0, 5_000, "a");
    await writeKeys(small, 2_500, 5_000, "b"); // rewrites half of the keys that now live in runs
    await small.checkpoint();
    await writeKeys(small, 6_000, 1_000, "c"); // left in the WAL
    const before = [...small.scan({ prefix: "k/" })].map(([k, v]) => `${k}=${new TextDecoder().decode(v)}`);
    expect(small.stats.memtableFreezes).toBeGreaterThan(0);
    await small.close();

    const large = await Engine.open(store, { memtableKeys: 1_000_000 });
    const after = [...large.scan({ prefix: "k/" })].map(([k, v]) => `${k}=${new TextDecoder().decode(v)}`);
    expect(after).toEqual(before);
    expect(after).toHaveLength(7_500);
    expect(after[0]).toBe("k/000000=a0");
    expect(after[2_500]).toBe("k/002500=b2500");
    expect(after[6_000]).toBe("k/006000=c6000");
    await large.close();
  });
});
