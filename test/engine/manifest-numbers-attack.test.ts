/**
 * @module Manifest objects far past a store's newest, put there by another
 * program: at 1e15, at 2^53 and past it, at the largest 20-digit number.
 * An open and a reader's open read the manifests past the listing's newest
 * by number until one is absent; past 2^53 a number plus one is the same
 * double, so one stray object there made that read find it for ever (the
 * open never ended). Every case ends in the store's true state or in
 * StoreCorruptedError naming the stray object, within a bounded number of
 * reads, and a refused open writes nothing.
 */
import { describe, expect, it } from "vitest";
import {
  Engine,
  EngineReader,
  MemoryStore,
  StoreCorruptedError,
  WriteBatch,
  type ListedObject,
  type ListOptions,
  type ObjectStore,
  type PutOptions,
  type StoredObject,
} from "taquba";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;
/** An open of this small store reads a handful of objects; far more means it went round a loop. */
const MOST_READS = 1_000;

/** `inner` with its reads counted (refused past MOST_READS, so a loop ends the test instead of hanging it) and the engine's writes counted. */
class CountingStore implements ObjectStore {
  reads = 0;
  writes = 0;
  constructor(readonly inner: MemoryStore) {}
  async get(key: string): Promise<StoredObject | null> {
    if (++this.reads > MOST_READS) throw new Error(`read ${key} after ${MOST_READS} reads: the open goes round a loop`);
    return this.inner.get(key);
  }
  put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    this.count(key);
    return this.inner.put(key, body, opts);
  }
  delete(key: string): Promise<void> {
    this.count(key);
    return this.inner.delete(key);
  }
  list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    return this.inner.list(prefix, opts);
  }
  /** A write of the engine's: the writer's open also puts and removes an object of its own under probe/ (the store's capability check). */
  count(key: string): void {
    if (!key.startsWith("probe/")) this.writes++;
  }
}

/** A store a writer committed "k" to and checkpointed, then closed: the store and its newest manifest's bytes. */
async function checkpointedStore(): Promise<{ store: MemoryStore; newest: Uint8Array }> {
  const store = new MemoryStore();
  const engine = await Engine.open(store, MANUAL);
  await engine.commit(new WriteBatch().put("k", enc("v")));
  await engine.checkpoint();
  await engine.close();
  const keys: string[] = [];
  for await (const o of store.list("manifest/")) keys.push(o.key);
  return { store, newest: (await store.get(keys.at(-1)!))!.body };
}

async function snapshot(store: MemoryStore): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const o of store.list("")) out.set(o.key, Buffer.from((await store.get(o.key))!.body).toString("hex"));
  return out;
}

const strays: [string, string[]][] = [
  ["2^53", ["00009007199254740992"]],
  ["2^53 and a key past it that reads as the same number", ["00009007199254740992", "00009007199254740993"]],
  ["the largest 20-digit number", ["99999999999999999999"]],
];

describe("manifests numbered far past the newest", () => {
  for (const body of ["garbage", "a copy of the newest manifest"] as const) {
    const bytesOf = (newest: Uint8Array) => (body === "garbage" ? enc("junk") : newest);

    it(`one at 1e15 (${body}): the open and a reader's open fail with StoreCorruptedError naming it, writing nothing`, async () => {
      const { store, newest } = await checkpointedStore();
      await store.put("manifest/00001000000000000000", bytesOf(newest));
      const before = await snapshot(store);
      const counting = new CountingStore(store);
      for (const open of [() => Engine.open(counting, MANUAL), () => EngineReader.open(counting)]) {
        const err = await open().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(StoreCorruptedError);
        expect((err as StoreCorruptedError).objectKey).toBe("manifest/00001000000000000000");
      }
      expect(counting.writes).toBe(0);
      expect(await snapshot(store)).toEqual(before);
    });

    for (const [name, numbers] of strays) {
      it(`past 2^53-1 (${name}, ${body}): not the engine's objects; the store opens as it is, goes on and reopens`, async () => {
        const { store, newest } = await checkpointedStore();
        for (const n of numbers) await store.put(`manifest/${n}`, bytesOf(newest));
        const counting = new CountingStore(store);
        const reader = await EngineReader.open(counting);
        expect(dec(await reader.get("k"))).toBe("v");
        await reader.close();
        const engine = await Engine.open(counting, MANUAL);
        expect(dec(await engine.get("k"))).toBe("v");
        await engine.commit(new WriteBatch().put("k2", enc("w")));
        await engine.checkpoint();
        await engine.close();
        counting.reads = 0;
        const again = await Engine.open(counting, MANUAL);
        expect([dec(await again.get("k")), dec(await again.get("k2"))]).toEqual(["v", "w"]);
        await again.close();
        // Left where they were: nothing of the engine's was written over them.
        for (const n of numbers) expect(dec((await store.get(`manifest/${n}`))?.body.subarray(0, 4))).toBe(dec(bytesOf(newest).subarray(0, 4)));
      });
    }

    it(`at 2^53-1 and 2^53 (${body}): StoreCorruptedError naming the one at 2^53-1 (nothing can follow it), within a few reads, writing nothing`, async () => {
      const { store, newest } = await checkpointedStore();
      await store.put("manifest/00009007199254740991", bytesOf(newest));
      await store.put("manifest/00009007199254740992", bytesOf(newest));
      const before = await snapshot(store);
      const counting = new CountingStore(store);
      for (const open of [() => Engine.open(counting, MANUAL), () => EngineReader.open(counting)]) {
        counting.reads = 0;
        const err = await open().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(StoreCorruptedError);
        expect((err as StoreCorruptedError).objectKey).toBe("manifest/00009007199254740991");
        expect((err as Error).message).toMatch(/remove the manifest objects numbered beyond the store's real ones/);
        expect(counting.reads).toBeLessThan(10);
      }
      expect(counting.writes).toBe(0);
      expect(await snapshot(store)).toEqual(before);
    });
  }
});
