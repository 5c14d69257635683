/**
 * @module The engine over a store the user wrote whose listings ignore the
 * prefix, the key to start after, or both (test/support/careless-listings.ts):
 * it lists only its own objects, so a new engine in a bucket that holds the
 * user's files opens (it took them for WAL objects of a store whose
 * manifests were all deleted, and refused), and an engine reopened after
 * checkpoints reads what it committed, its checkpoints' collection leaving
 * the user's objects alone.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { CarelessListings, type Disregard } from "../support/careless-listings.js";

const enc = new TextEncoder();
const dec = new TextDecoder();
// The user's own objects, before and after the engine's `manifest/`, `seg/` and `wal/` in key order.
const USER_OBJECTS = ["aaa/report.csv", "logs/2026-03-02.txt", "zzz/notes"];

async function withUserObjects(): Promise<MemoryStore> {
  const store = new MemoryStore();
  for (const key of USER_OBJECTS) await store.put(key, enc.encode(`user ${key}`));
  return store;
}

async function keysOf(store: MemoryStore): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list("")) out.push(o.key);
  return out;
}

describe("the engine over a store whose listings ignore what was asked", () => {
  // Ignoring only the key to start after was already harmless: the engine reads numbers from the keys it lists.
  for (const disregard of ["prefix", "both"] as const satisfies readonly Disregard[]) {
    it(`opens beside the user's objects, reopens with what it committed and leaves those objects alone (ignoring ${disregard})`, async () => {
      const inner = await withUserObjects();
      const store = new CarelessListings(inner, disregard);
      const engine = await Engine.open(store);
      const expected = new Map<string, string>();
      for (let round = 0; round < 4; round++) {
        for (let i = 0; i < 5; i++) {
          const key = `k${i}`;
          const value = `v${round}.${i}`;
          expected.set(key, value);
          await engine.commit(new WriteBatch().put(key, enc.encode(value)));
        }
        // Checkpoints collect WAL objects, segments and manifests: listed carelessly, the user's objects are in those listings.
        if (round < 3) await engine.checkpoint();
      }
      await engine.close();
      for (const key of USER_OBJECTS) expect(dec.decode((await inner.get(key))!.body)).toBe(`user ${key}`);

      const reopened = await Engine.open(store);
      try {
        for (const [key, value] of expected) expect(dec.decode(reopened.get(key)!)).toBe(value);
      } finally {
        await reopened.close();
      }
      // What a reopen over the store as it is reads is the same.
      const plain = await Engine.open(inner);
      try {
        for (const [key, value] of expected) expect(dec.decode(plain.get(key)!)).toBe(value);
      } finally {
        await plain.close();
      }
      expect((await keysOf(inner)).filter((k) => USER_OBJECTS.includes(k))).toEqual(USER_OBJECTS);
    });
  }
});
