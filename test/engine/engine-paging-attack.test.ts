/**
 * @module Paged values against a damaged store: a segment object deleted or
 * corrupted after the checkpoint that paged values out to it ends a warm-up
 * with an error naming the object, never a hang or a wrong value.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, StoreCorruptedError, WriteBatch, withFaults, type EngineOptions } from "taquba";

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

describe("engine paged values: warm-ups racing checkpoints and compactions under store faults", () => {
  it("every read after a warm-up gives the model's value; failures are only the injected store faults", async () => {
    for (let seed = 1; seed <= 12; seed++) {
      const faulty = withFaults(new MemoryStore(), { failureRate: 0, seed, ops: ["get"] });
      const opts: EngineOptions = {
        pageValues: { keyPrefixes: ["j/"], minBytes: 64, cacheBytes: 0 },
        checkpointWalObjects: 0,
        maxSegmentRuns: 2,
        maxSegmentBytes: 2048,
        retry: { attempts: 2, baseDelayMs: 0, maxDelayMs: 0 },
      };
      let engine = await Engine.open(faulty, opts);
      const model = new Map<string, string>();
      const keys = Array.from({ length: 40 }, (_, i) => `j/${String(i).padStart(3, "0")}`);
      let reads = 0;
      for (let round = 0; round < 8; round++) {
        const b = new WriteBatch();
        for (const k of keys) {
          if ((Number(k.slice(2)) * 7 + round * 3 + seed) % 5 === 0) {
            const v = `${big(k)}-${seed}-${round}`;
            b.put(k, enc(v));
            model.set(k, v);
          } else if ((Number(k.slice(2)) + round + seed) % 11 === 0) {
            b.delete(k);
            model.delete(k);
          }
        }
        await engine.commit(b);
        faulty.failureRate = 0.2;
        const checkpoint = engine.checkpoint().catch(() => undefined);
        const readers = keys
          .filter((_, i) => (i + round) % 4 === 0)
          .map(async (k) => {
            try {
              await warmAll(engine, [k]);
            } catch (e) {
              expect(String(e)).toMatch(/injected fault/);
              return;
            }
            const v = engine.get(k);
            expect(v === undefined ? undefined : new TextDecoder().decode(v), `seed ${seed} round ${round} ${k}`).toBe(model.get(k));
            reads++;
          });
        await Promise.all([checkpoint, ...readers]);
        faulty.failureRate = 0;
        if (round === 5) {
          await engine.close();
          engine = await Engine.open(faulty, opts);
        }
      }
      await warmAll(engine, keys);
      for (const k of keys)
        expect(engine.get(k) === undefined ? undefined : new TextDecoder().decode(engine.get(k)), `seed ${seed} final ${k}`).toBe(model.get(k));
      expect(reads).toBeGreaterThan(0);
      await engine.close();
    }
  });
});
