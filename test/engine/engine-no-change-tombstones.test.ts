/**
 * @module Incremental checkpoints without tombstones for keys that were no
 * change: a key put and deleted again since the last checkpoint, which no
 * earlier run holds, writes nothing; a key an earlier run holds, wherever
 * the state kept it (its memtable, a frozen table, a key run), is still
 * deleted for a reopen and a reader, however often it was put and deleted
 * in between, and when an open's replay made the changes.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, WriteBatch } from "taquba";
import { stateTuning } from "../../runtime/engine/recovery.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const retry = { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 };
const manual = { checkpointWalObjects: 0, checkpointWalBytes: 0, retry, onBackgroundError: () => {} };

function contents(view: { scan(): Iterable<[string, Uint8Array]> }): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of view.scan()) out.set(k, dec(v));
  return out;
}

afterEach(() => {
  stateTuning.memtableKeys = undefined;
});

describe("incremental checkpoints and keys that were no change", () => {
  it("write the same run for a change alone and for the change beside keys put and deleted since the cut", async () => {
    const written: number[] = [];
    for (const churn of [0, 300]) {
      const engine = await Engine.open(new MemoryStore(), manual);
      const first = new WriteBatch();
      for (let i = 0; i < 200; i++) first.put(`r/${String(i).padStart(3, "0")}`, enc("run"));
      await engine.commit(first.put("n/base", enc("0")));
      await engine.checkpoint();
      const before = engine.stats.checkpointBytes;
      // A queue's claimed jobs: each put at a claim and deleted at the next commit, and deletes of keys never written.
      for (let i = 0; i < churn; i++) {
        const b = new WriteBatch().put(`j/${String(i).padStart(6, "0")}`, enc(`job ${i}`)).put(`c/${String(i).padStart(6, "0")}`, enc("x"));
        if (i > 0) b.delete(`j/${String(i - 1).padStart(6, "0")}`).delete(`c/${String(i - 1).padStart(6, "0")}`);
        await engine.commit(b.delete(`sig/${i}`));
      }
      if (churn > 0) await engine.commit(new WriteBatch().delete(`j/${String(churn - 1).padStart(6, "0")}`).delete(`c/${String(churn - 1).padStart(6, "0")}`));
      await engine.commit(new WriteBatch().put("n/base", enc("1")));
      await engine.checkpoint();
      expect(engine.stats).toMatchObject({ compactions: 1, segmentRuns: 2 });
      written.push(engine.stats.checkpointBytes - before);
      expect(contents(engine).get("n/base")).toBe("1");
      expect(contents(engine).size).toBe(201);
      await engine.close();
    }
    expect(written[1]).toBe(written[0]);
  });

  it("delete for a reopen and a reader the keys an earlier run holds, from the memtable, a frozen table or a key run", async () => {
    // A small memtable, so the keys written first live in key runs and frozen tables by the time they are deleted.
    stateTuning.memtableKeys = 64;
    const store = new MemoryStore();
    let engine = await Engine.open(store, manual);
    const model = new Map<string, string>();
    const b = new WriteBatch();
    for (let i = 0; i < 600; i++) {
      const key = `k/${String(i).padStart(4, "0")}`;
      b.put(key, enc(`v${i}`));
      model.set(key, `v${i}`);
    }
    await engine.commit(b);
    await engine.checkpoint();
    for (let round = 0; round < 4; round++) {
      // Keys written before the cut, now spread over the memtable, frozen tables and runs: some deleted, some deleted,
      // put and deleted again, some put and deleted again after a delete in an earlier commit of this interval.
      for (let i = round; i < 600; i += 7) {
        const key = `k/${String(i).padStart(4, "0")}`;
        if (!model.has(key)) continue;
        // Written over first, then deleted.
        if (i % 3 === 1) await engine.commit(new WriteBatch().put(key, enc("over")));
        await engine.commit(new WriteBatch().delete(key));
        if (i % 3 === 0) {
          await engine.commit(new WriteBatch().put(key, enc("again")));
          await engine.commit(new WriteBatch().delete(key));
        }
        model.delete(key);
      }
      // Fresh keys put and deleted, and fresh keys kept.
      for (let i = 0; i < 50; i++) {
        const key = `f/${round}/${i}`;
        await engine.commit(new WriteBatch().put(key, enc("f")));
        if (i % 2 === 0) await engine.commit(new WriteBatch().delete(key));
        else model.set(key, "f");
      }
      await engine.checkpoint();
      expect(contents(engine)).toEqual(model);
      const reader = await EngineReader.open(store);
      expect(contents(reader)).toEqual(model);
      await engine.close();
      engine = await Engine.open(store, manual);
      expect(contents(engine)).toEqual(model);
    }
    expect(engine.stats.segmentRuns).toBeGreaterThan(1);
    await engine.close();
  });

  it("delete the keys an earlier run holds when the changes come from the log an open replays", async () => {
    const store = new MemoryStore();
    const first = await Engine.open(store, manual);
    const b = new WriteBatch();
    for (let i = 0; i < 300; i++) b.put(`k/${String(i).padStart(3, "0")}`, enc(`v${i}`));
    await first.commit(b);
    await first.checkpoint();
    // Stored in the log only: the writer stops without a checkpoint, and the next open replays them.
    await first.commit(new WriteBatch().put("k/000", enc("over")));
    await first.commit(new WriteBatch().delete("k/000").delete("k/001").put("f/1", enc("f")));
    await first.commit(new WriteBatch().delete("f/1").put("f/2", enc("f")));
    const second = await Engine.open(store, manual);
    await first.close().catch(() => {});
    await second.checkpoint();
    expect(second.stats).toMatchObject({ compactions: 0, segmentRuns: 2 });
    const want = contents(second);
    expect(want.has("k/000") || want.has("k/001") || want.has("f/1")).toBe(false);
    expect(want.get("f/2")).toBe("f");
    await second.close();
    const third = await Engine.open(store, manual);
    expect(contents(third)).toEqual(want);
    expect(contents(await EngineReader.open(store))).toEqual(want);
    await third.close();
  });
});
