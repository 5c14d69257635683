/**
 * @module A store that answers another segment's bytes for a segment of the
 * same size: every checksum of those bytes holds, so only the manifest's
 * record of the segment (entries, first and last key) can tell. The load
 * refuses with StoreCorruptedError naming the segment asked for, whether it
 * reads segments whole (a reader) or by their tails (a writer that pages
 * values, one run or several), and nothing is written.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, StoreCorruptedError, WriteBatch, type ObjectStore } from "taquba";
import { keysUnder } from "../support/store-keys.js";

const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;
const PAGED = { ...MANUAL, pageValues: { keyPrefixes: ["k/"], minBytes: 16 } } as const;
const value = (i: number) => new TextEncoder().encode(`value ${String(i).padStart(6, "0")} ${"x".repeat(40)}`);

/** Two checkpoints of 200 keys each, the same shape (keys of one length, values of one length): two segments of one size. */
async function twoLikeSegments(store: MemoryStore): Promise<[string, string]> {
  const writer = await Engine.open(store, MANUAL);
  for (const from of [1000, 2000]) {
    const batch = new WriteBatch();
    for (let i = from; i < from + 200; i++) batch.put(`k/${i}`, value(i));
    await writer.commit(batch);
    await writer.checkpoint();
  }
  await writer.close();
  const segs = await keysUnder(store, "seg/");
  expect(segs).toHaveLength(2);
  const sizes = await Promise.all(segs.map(async (k) => (await store.get(k))!.body.byteLength));
  expect(sizes[0]).toBe(sizes[1]);
  return [segs[0]!, segs[1]!];
}

/** Whether `key` is one of an engine's durable objects (a writer's open also puts and deletes a probe of the store). */
const durable = (key: string) => /(^|\/)(manifest|wal|seg)\//.test(key);

/** `inner`, answering every read of `asked` with the bytes of `answered`; counts writes of durable objects. */
function swapping(inner: MemoryStore, asked: string, answered: string) {
  const to = (k: string) => (k === asked ? answered : k);
  const s = {
    writes: 0,
    store: {
      get: (k: string) => inner.get(to(k)),
      getRange: (k: string, o: number, l: number) => inner.getRange(to(k), o, l),
      put: (...args: Parameters<ObjectStore["put"]>) => {
        if (durable(args[0])) s.writes++;
        return inner.put(...args);
      },
      delete: (k: string) => {
        if (durable(k)) s.writes++;
        return inner.delete(k);
      },
      list: (...args: Parameters<ObjectStore["list"]>) => inner.list(...args),
    } satisfies ObjectStore,
  };
  return s;
}

async function refusal(p: Promise<unknown>): Promise<StoreCorruptedError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StoreCorruptedError);
  return err as StoreCorruptedError;
}

describe("a segment read against its manifest record", () => {
  it("a reader reading segments whole refuses another segment's bytes", async () => {
    const inner = new MemoryStore();
    const [older, newer] = await twoLikeSegments(inner);
    for (const [asked, answered] of [
      [older, newer],
      [newer, older],
    ] as const) {
      const s = swapping(inner, asked, answered);
      const err = await refusal(EngineReader.open(s.store));
      expect(err.objectKey).toBe(asked);
      expect(err.message).toMatch(/segment (starts|ends) at key "k\/\d+", the manifest says "k\/\d+": the store answered bytes of another segment/);
      expect(s.writes).toBe(0);
    }
    // The store itself is sound.
    const reader = await EngineReader.open(inner);
    expect(reader.get("k/1000")).toEqual(value(1000));
    expect(reader.get("k/2199")).toEqual(value(2199));
    await reader.close();
  });

  it("a writer reading segment tails refuses it, over one run and over several", async () => {
    const inner = new MemoryStore();
    const [older, newer] = await twoLikeSegments(inner);
    // Two runs: the open merges their key sections.
    const s = swapping(inner, newer, older);
    const err = await refusal(Engine.open(s.store, PAGED));
    expect(err.objectKey).toBe(newer);
    expect(err.message).toMatch(/the store answered bytes of another segment/);
    expect(s.writes).toBe(0);
    // One run each: two engines under two prefixes of one store, one checkpoint each; one's segment answered for the other's.
    const shared = new MemoryStore();
    for (const [prefix, from] of [
      ["a/", 1000],
      ["b/", 2000],
    ] as const) {
      const writer = await Engine.open(shared, { ...MANUAL, prefix });
      const batch = new WriteBatch();
      for (let i = from; i < from + 200; i++) batch.put(`k/${i}`, value(i));
      await writer.commit(batch);
      await writer.checkpoint();
      await writer.close();
    }
    const [segA] = await keysUnder(shared, "a/seg/");
    const [segB] = await keysUnder(shared, "b/seg/");
    const one = swapping(shared, segA!, segB!);
    const oneErr = await refusal(Engine.open(one.store, { ...PAGED, prefix: "a/" }));
    expect(oneErr.objectKey).toBe(segA);
    expect(oneErr.message).toMatch(/segment starts at key "k\/2000", the manifest says "k\/1000"/);
    expect(one.writes).toBe(0);
    const paged = await Engine.open(shared, { ...PAGED, prefix: "a/" });
    for (let p = paged.warm(["k/1199"]); p; p = paged.warm(["k/1199"])) await p;
    expect(paged.get("k/1199")).toEqual(value(1199));
    await paged.close();
  });
});
