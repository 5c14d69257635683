/**
 * @module A state the engine or a reader drops stops merging: after
 * `Engine.close`, `EngineReader.close` and a reader's reload from a newer
 * checkpoint, and after an `Engine.open` abandoned once its state was
 * loaded (its fence write failed), no idle turn copies entries of a merge
 * nobody will read.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, WriteBatch } from "taquba";
import { frozenCopyStats } from "../../runtime/engine/frozen-memtable.js";
import { cursorStats } from "../../runtime/engine/key-run.js";
import { stateTuning } from "../../runtime/engine/recovery.js";
import { failWhen } from "../support/failing-store.js";

beforeAll(() => {
  stateTuning.memtableKeys = 256;
  stateTuning.idleSlice = 16;
});
afterAll(() => {
  stateTuning.memtableKeys = undefined;
  stateTuning.idleSlice = undefined;
});

const KEYS = 65_536;

const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

/**
 * Entries copied during `n` idle turns: decoded by run cursors (merges copy
 * through them) or copied from a frozen memtable into its run.
 */
async function decodedOver(n: number): Promise<number> {
  const before = cursorStats.decoded + frozenCopyStats.copied;
  await turns(n);
  return cursorStats.decoded + frozenCopyStats.copied - before;
}

async function fill(engine: Engine, keys: number, from = 0): Promise<void> {
  for (let i = from; i < from + keys; i += 5000) {
    const b = new WriteBatch();
    for (let j = i; j < Math.min(from + keys, i + 5000); j++) b.put(`k/${String(j).padStart(7, "0")}`, new Uint8Array([j & 255]));
    await engine.commit(b);
  }
}

describe("a dropped state stops merging", () => {
  it("after the engine closes, and after a reader closes or reloads", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, { checkpointWalObjects: 0 });
    // 4^4 memtables: the last key's freeze starts merges of up to all 65,536 entries, 16 copied per idle turn, and first the frozen memtable's copy into its run.
    await fill(engine, KEYS);
    expect(await decodedOver(1)).toBeGreaterThan(0);
    await engine.close();
    expect(await decodedOver(30)).toBe(0);

    const writer = await Engine.open(store, { checkpointWalObjects: 0 });
    const reader = await EngineReader.open(store);
    expect(await decodedOver(1)).toBeGreaterThan(0);
    // A checkpoint replaces the segments: the reader's refresh loads a fresh state and drops the one merging.
    await fill(writer, 1000, KEYS);
    await writer.checkpoint();
    expect(await reader.refresh()).toBe(true);
    expect(reader.get(`k/${String(KEYS + 999).padStart(7, "0")}`)).toEqual(new Uint8Array([(KEYS + 999) & 255]));
    await reader.close();
    await writer.close();
    expect(await decodedOver(30)).toBe(0);
  }, 120_000);

  it("after an open whose fence write or manifest claim fails", async () => {
    const inner = new MemoryStore();
    const first = await Engine.open(inner, { checkpointWalObjects: 0 });
    await fill(first, KEYS);
    await first.close();
    expect(await decodedOver(30)).toBe(0);

    // The claim lands, then every WAL put (the fence) fails: the open is abandoned after its state loaded and began merging.
    const fenceFails = failWhen(inner, (call, key) => (call === "put" && key.startsWith("wal/") ? new Error(`fence write refused: ${key}`) : undefined));
    await expect(Engine.open(fenceFails, { checkpointWalObjects: 0 })).rejects.toThrow(/fence write refused/);
    expect(await decodedOver(30)).toBe(0);
    // Likewise when the claim of the next manifest fails.
    const claimFails = failWhen(inner, (call, key) => (call === "put" && key.startsWith("manifest/") ? new Error(`claim refused: ${key}`) : undefined));
    await expect(Engine.open(claimFails, { checkpointWalObjects: 0 })).rejects.toThrow(/claim refused/);
    expect(await decodedOver(30)).toBe(0);

    // The same store opens fine without the fault, and that state does merge in idle turns.
    const writer = await Engine.open(inner, { checkpointWalObjects: 0 });
    expect(await decodedOver(1)).toBeGreaterThan(0);
    expect(writer.get(`k/${String(KEYS - 1).padStart(7, "0")}`)).toEqual(new Uint8Array([(KEYS - 1) & 255]));
    await writer.close();
    expect(await decodedOver(30)).toBe(0);
  }, 120_000);
});
