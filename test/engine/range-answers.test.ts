/**
 * @module A store whose `getRange` answers with other bytes than asked:
 * one ignoring ranges (the whole object for every read) is refused as a
 * store request error naming the read, not called corrupted data (whose
 * message tells the user to restore or remove the store's data); one
 * answering short is a segment shorter than its manifest says.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, StoreCorruptedError, StoreRequestError, WriteBatch, type EngineOptions, type ObjectStore } from "taquba";

const options: EngineOptions = {
  pageValues: { keyPrefixes: ["j/"], minBytes: 64, cacheBytes: 4096 },
  checkpointWalObjects: 0,
  segmentBlockBytes: 512,
};

async function filled(): Promise<MemoryStore> {
  const store = new MemoryStore();
  const e = await Engine.open(store, options);
  const b = new WriteBatch();
  for (let i = 0; i < 100; i++) b.put(`j/${String(i).padStart(3, "0")}`, new Uint8Array(100).fill(i));
  await e.commit(b);
  await e.checkpoint();
  await e.close();
  return store;
}

/** `inner` with its ranged reads answered by `answer`. */
function ranged(inner: MemoryStore, answer: (whole: Uint8Array, offset: number, length: number) => Uint8Array): ObjectStore {
  return {
    get: (k) => inner.get(k),
    getRange: async (k, offset, length) => {
      const found = await inner.get(k);
      return found === null ? null : answer(found.body, offset, length);
    },
    put: (k, b, o) => inner.put(k, b, o),
    delete: (k) => inner.delete(k),
    list: (p, o) => inner.list(p, o),
  };
}

describe("ranged reads answered with other bytes than asked", () => {
  it("a store returning the whole object for a range is refused as a store request error naming the read", async () => {
    const store = ranged(await filled(), (whole) => whole);
    // A small segment's tail read asks for all of it; the first block read asks for less.
    const err = await (async () => {
      const engine = await Engine.open(store, options);
      try {
        for (let p = engine.warm(["j/050"]); p !== undefined; p = engine.warm(["j/050"])) await p;
        return undefined;
      } finally {
        await engine.close();
      }
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreRequestError);
    expect((err as Error).message).toMatch(/seg\/.*was answered with \d+ bytes; the store's getRange must return at most the bytes asked for/);
  });

  it("a store answering a byte short is a segment shorter than its manifest lists", async () => {
    const store = ranged(await filled(), (whole, offset, length) => whole.subarray(offset, Math.min(whole.byteLength, offset + length) - 1));
    const err = await Engine.open(store, options).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreCorruptedError);
    expect((err as Error).message).toMatch(/segment ends before byte/);
  });
});
