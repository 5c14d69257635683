/**
 * @module The engine over its layered state (a memtable over compact key
 * runs) with more keys than the memtable holds: freezes, run merges and
 * rewrites, paging, checkpoints, compactions and reopens keep every key and
 * value, and paging still takes values out of memory.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch, type EngineOptions } from "taquba";
import { testRandom } from "../support/seed.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (v: Uint8Array | undefined) => (v === undefined ? undefined : new TextDecoder().decode(v));

async function warmAll(engine: Engine, keys: string[]): Promise<void> {
  for (let p = engine.warm(keys); p !== undefined; p = engine.warm(keys)) await p;
}

/** Every key and value of the engine, read in chunks (each warmed, then read in the same turn), against the model. */
async function expectState(engine: Engine, model: Map<string, string>): Promise<void> {
  const keys = [...model.keys()].sort();
  for (let i = 0; i < keys.length; i += 500) {
    const chunk = keys.slice(i, i + 500);
    await warmAll(engine, chunk);
    const got = chunk.map((k) => dec(engine.get(k)));
    expect(got).toEqual(chunk.map((k) => model.get(k)));
  }
  // Scans: keys in order, nothing extra, prefixes and reverse.
  expect([...engine.scan()].map(([k]) => k).filter((k) => !model.has(k))).toEqual([]);
  expect(engine.scan().next().done ? 0 : [...engine.scan()].length).toBe(model.size);
  const pending = keys.filter((k) => k.startsWith("p/"));
  expect([...engine.scan({ prefix: "p/", reverse: true, limit: 50 })].map(([k, v]) => [k, dec(v)])).toEqual(
    pending
      .slice(-50)
      .reverse()
      .map((k) => [k, model.get(k)]),
  );
}

describe("engine over compact key runs", () => {
  it("keeps every key and value across memtable freezes, run merges, checkpoints, compactions and reopens, and still pages values out", async () => {
    const r = testRandom("engine key runs");
    const store = new MemoryStore();
    const opts: EngineOptions = {
      pageValues: { keyPrefixes: ["j/"], minBytes: 64, cacheBytes: 256 * 1024 },
      checkpointWalObjects: 0,
      maxSegmentRuns: 3,
    };
    let engine = await Engine.open(store, opts);
    const model = new Map<string, string>();
    let compactions = 0;
    const id = (n: number) => `01J${String(n).padStart(8, "0")}`;
    for (let round = 0; round < 5; round++) {
      const changed = new Set<string>();
      for (let b = 0; b < 30; b++) {
        const batch = new WriteBatch();
        for (let i = 0; i < 400; i++) {
          const n = r.int(30_000);
          const j = `j/${id(n)}`;
          const p = `p/q/0005/${id(n)}`;
          if (r.int(5) === 0) {
            batch.delete(j).delete(p);
            model.delete(j);
            model.delete(p);
          } else {
            const record = `${j}:${"r".repeat(64 + r.int(100))}:${round}`;
            batch.put(j, enc(record)).put(p, enc(id(n)));
            model.set(j, record);
            model.set(p, id(n));
          }
          changed.add(j);
        }
        await engine.commit(batch);
      }
      await engine.checkpoint();
      await new Promise<void>((resolve) => setTimeout(resolve, 1));
      // Records that no commit changed since the checkpoint are paged out: a read needs a warm-up first.
      const unchanged = [...model.keys()].filter((k) => k.startsWith("j/") && !changed.has(k));
      let cold = 0;
      for (const k of unchanged.slice(0, 300)) {
        try {
          engine.get(k);
        } catch {
          cold++;
        }
      }
      if (unchanged.length >= 300) expect(cold).toBeGreaterThan(200);
      await expectState(engine, model);
      if (round % 2 === 1) {
        compactions += engine.stats.compactions;
        await engine.close();
        engine = await Engine.open(store, opts);
        await expectState(engine, model);
      }
    }
    expect(model.size).toBeGreaterThan(40_000);
    expect(compactions + engine.stats.compactions).toBeGreaterThan(0);
    await engine.close();
  }, 240_000);
});
