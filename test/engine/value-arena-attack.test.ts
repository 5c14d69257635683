/**
 * @module Attacks on the writer's ValueArena: values at and around the
 * chunk's bounds, empty ones, values replaced or deleted before a
 * checkpoint pages them, a checkpoint that fails and is retried, the
 * caller's array changed after its commit, and reopens (clean and not)
 * between commits. Every value must read back as committed.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch, type ObjectStore } from "taquba";
import { ValueArena } from "../../runtime/engine/paged-value.js";
import { failWhen } from "../support/failing-store.js";
import { testRandom } from "../support/seed.js";

const CHUNK = ValueArena.CHUNK_BYTES;
const pageValues = { keyPrefixes: ["j/"], minBytes: 0 };

async function read(engine: Engine, key: string): Promise<Uint8Array | undefined> {
  for (let p = engine.warm([key]); p !== undefined; p = engine.warm([key])) await p;
  return engine.get(key);
}

function filled(n: number, seed: number): Uint8Array {
  const v = new Uint8Array(n);
  for (let i = 0; i < n; i++) v[i] = (seed * 31 + i) & 0xff;
  return v;
}

async function expectAll(engine: Engine, model: Map<string, Uint8Array | undefined>): Promise<void> {
  for (const [key, want] of model) {
    const got = await read(engine, key);
    if (want === undefined) expect(got, key).toBeUndefined();
    else {
      expect(got, key).toBeDefined();
      expect(got!.byteLength, key).toBe(want.byteLength);
      expect(Buffer.compare(got!, want), key).toBe(0);
    }
  }
}

describe("ValueArena attacks", () => {
  it("values of 0, 1, a quarter chunk and one byte over, a whole chunk and more read back before and after a checkpoint and a reopen", async () => {
    const store = new MemoryStore();
    const sizes = [0, 1, CHUNK / 4 - 1, CHUNK / 4, CHUNK / 4 + 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK, 0, 1];
    const model = new Map<string, Uint8Array | undefined>();
    let engine = await Engine.open(store, { pageValues, checkpointWalObjects: 0 });
    for (const [i, n] of sizes.entries()) {
      const b = new WriteBatch();
      const v = filled(n, i);
      b.put(`j/${i}`, v);
      model.set(`j/${i}`, v.slice());
      await engine.commit(b);
    }
    await expectAll(engine, model);
    await engine.checkpoint();
    await expectAll(engine, model);
    await engine.close();
    engine = await Engine.open(store, { pageValues, checkpointWalObjects: 0 });
    await expectAll(engine, model);
    await engine.close();
  });

  it("a caller's array changed after its commit changes neither the value read nor what a reopen replays", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, { pageValues, checkpointWalObjects: 0 });
    const small = filled(100, 1);
    const large = filled(CHUNK + 5, 2);
    const b = new WriteBatch();
    b.put("j/small", small);
    b.put("j/large", large);
    await engine.commit(b);
    const model = new Map<string, Uint8Array | undefined>([
      ["j/small", small.slice()],
      ["j/large", large.slice()],
    ]);
    small.fill(0xee);
    large.fill(0xee);
    await expectAll(engine, model);
    // Not closed: the next writer replays the WAL.
    const next = await Engine.open(store, { pageValues, checkpointWalObjects: 0 });
    await expectAll(next, model);
    await next.checkpoint();
    await expectAll(next, model);
    await next.close();
  });

  it("values replaced or deleted before the checkpoint, a checkpoint that fails and is retried, and reopens with and without close keep every value", async () => {
    const r = testRandom("value-arena-attack");
    const rand = () => r.random();
    const inner = new MemoryStore();
    let failPuts = false;
    const store: ObjectStore = failWhen(inner, (call, key) =>
      failPuts && call === "put" && !key.includes("wal") ? new Error("injected put fault") : undefined,
    );
    const model = new Map<string, Uint8Array | undefined>();
    const open = () => Engine.open(store, { pageValues, checkpointWalObjects: 0, retry: { attempts: 1 } });
    let engine = await open();
    for (let round = 0; round < 12; round++) {
      for (let c = 0; c < 20; c++) {
        const b = new WriteBatch();
        const reused: Uint8Array[] = [];
        for (let k = 0; k < 1 + Math.floor(rand() * 8); k++) {
          const key = `j/${Math.floor(rand() * 60)}`;
          if (rand() < 0.15) {
            b.delete(key);
            model.set(key, undefined);
          } else {
            const pick = rand();
            const n =
              pick < 0.1
                ? 0
                : pick < 0.8
                  ? Math.floor(rand() * 2000)
                  : pick < 0.95
                    ? CHUNK / 4 + Math.floor(rand() * 3) - 1
                    : CHUNK + Math.floor(rand() * 3) - 1;
            const v = filled(n, round * 1000 + c);
            b.put(key, v);
            model.set(key, v.slice());
            if (rand() < 0.3) reused.push(v);
          }
        }
        await engine.commit(b);
        // The caller reuses its arrays once the commit resolved.
        for (const v of reused) v.fill(0xab);
      }
      const step = round % 4;
      if (step === 0) {
        failPuts = true;
        await expect(engine.checkpoint()).rejects.toThrow();
        failPuts = false;
        await expectAll(engine, model);
        await engine.checkpoint();
      } else if (step === 1) {
        await engine.checkpoint();
      } else if (step === 2) {
        await engine.close();
        engine = await open();
      } else {
        // A crash: the writer is dropped as it is, the next one fences it.
        engine = await open();
      }
      await expectAll(engine, model);
    }
    await engine.close();
    engine = await open();
    await expectAll(engine, model);
    await engine.close();
  });
});
