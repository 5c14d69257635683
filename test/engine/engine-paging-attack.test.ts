/**
 * @module Paged values against a damaged store: a segment object deleted or
 * corrupted after the checkpoint that paged values out to it ends a warm-up
 * with an error naming the object, never a hang or a wrong value.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, StoreCorruptedError, WriteBatch, type EngineOptions } from "taquba";

const enc = (s: string) => new TextEncoder().encode(s);
const big = (key: string) => `${key}:${"v".repeat(100)}`;

async function warmAll(engine: Engine, keys: string[]): Promise<void> {
  let rounds = 0;
  for (let p = engine.warm(keys); p !== undefined; p = engine.warm(keys)) {
    if (++rounds > 50) throw new Error("warm never settled");
    await p;
  }
}

const paged: EngineOptions = { pageValues: { keyPrefixes: ["j/"], minBytes: 64, cacheBytes: 0 }, checkpointWalObjects: 0 };

async function segmentKeys(store: MemoryStore): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list("")) if (o.key.includes("seg/")) out.push(o.key);
  return out;
}

describe("engine paged values over a damaged store", () => {
  it("a segment deleted after the checkpoint: warm rejects with StoreCorruptedError naming it", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, paged);
    await engine.commit(new WriteBatch().put("j/a", enc(big("j/a"))));
    await engine.checkpoint();
    const segs = await segmentKeys(store);
    expect(segs.length).toBe(1);
    await store.delete(segs[0]!);
    const err = await warmAll(engine, ["j/a"]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreCorruptedError);
    expect(String((err as Error).message)).toContain(segs[0]!);
    await engine.close();
  });

  it("a segment corrupted after the checkpoint: warm rejects with StoreCorruptedError, never a wrong value", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, paged);
    await engine.commit(new WriteBatch().put("j/a", enc(big("j/a"))));
    await engine.checkpoint();
    const segs = await segmentKeys(store);
    const body = (await store.get(segs[0]!))!;
    const bad = body.body.slice();
    const mid = Math.floor(bad.length / 2);
    bad[mid] = bad[mid]! ^ 0xff;
    await store.put(segs[0]!, bad);
    const err = await warmAll(engine, ["j/a"]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreCorruptedError);
    await engine.close();
  });
});
