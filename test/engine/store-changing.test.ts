/**
 * @module Opening over a store that keeps changing, or has lost a segment:
 * a reader that keeps finding its manifest or segments deleted under it
 * gives up with StoreUnavailableError (it never loops for ever or returns a
 * stale state); a writer that finds a segment its manifest names missing,
 * or a WAL object listed after its claim gone when read, refuses with
 * StoreCorruptedError naming it.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, StoreCorruptedError, StoreUnavailableError, WriteBatch, type ObjectStore } from "taquba";

const enc = (s: string) => new TextEncoder().encode(s);

/** `inner`, except that gets of keys matching `vanish` find nothing (deleted between list and get), counted. */
function vanishing(inner: ObjectStore, vanish: (key: string) => boolean): ObjectStore & { misses: number } {
  const s = {
    misses: 0,
    get: async (k: string) => {
      if (vanish(k)) {
        s.misses++;
        return null;
      }
      return inner.get(k);
    },
    put: inner.put.bind(inner),
    delete: inner.delete.bind(inner),
    list: inner.list.bind(inner),
  };
  return s;
}

async function storeWithSegment(): Promise<MemoryStore> {
  const store = new MemoryStore();
  const writer = await Engine.open(store);
  for (let i = 0; i < 5; i++) await writer.commit(new WriteBatch().put(`k${i}`, enc(String(i))));
  await writer.checkpoint();
  await writer.commit(new WriteBatch().put("after", enc("x")));
  await writer.close();
  const keys: string[] = [];
  for await (const o of store.list("")) keys.push(o.key);
  expect(keys.some((k) => k.startsWith("seg/"))).toBe(true);
  return store;
}

async function failure(p: Promise<unknown>): Promise<Error> {
  return p.then(
    () => {
      throw new Error("expected a rejection");
    },
    (e: unknown) => e as Error,
  );
}

describe("a store changing under a reader", () => {
  it("manifests that keep disappearing between list and get: StoreUnavailableError for reader and writer", async () => {
    const store = vanishing(await storeWithSegment(), (k) => k.startsWith("manifest/"));
    const err = await failure(EngineReader.open(store));
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err.cause as Error).message).toMatch(/kept disappearing/);
    // 8 looks, each reading the number past the listing's newest (absent here too) and the listed one.
    expect(store.misses).toBe(16);
    store.misses = 0;
    expect(await failure(Engine.open(store))).toBeInstanceOf(StoreUnavailableError);
    expect(store.misses).toBeGreaterThan(0);
  });

  it("a segment the newest manifest lists, missing with no newer manifest: the reader refuses, naming it", async () => {
    // No checkpoint explains the miss (no newer manifest appears), so it is corruption, not a race.
    const store = vanishing(await storeWithSegment(), (k) => k.startsWith("seg/"));
    const err = await failure(EngineReader.open(store));
    expect(err).toBeInstanceOf(StoreCorruptedError);
    expect(err.message).toMatch(/seg\//);
    expect(store.misses).toBeGreaterThan(0);
  });

  it("a writer opening over a manifest whose segment is missing refuses, naming the segment", async () => {
    const inner = await storeWithSegment();
    const segs: string[] = [];
    for await (const o of inner.list("seg/")) segs.push(o.key);
    await inner.delete(segs[0]!);
    const err = await failure(Engine.open(inner));
    expect(err).toBeInstanceOf(StoreCorruptedError);
    expect(err.message).toContain(segs[0]!);
  });

  it("a WAL object listed after the writer's claim and gone when read: the writer refuses, naming it, and plants no fence", async () => {
    const inner = new MemoryStore();
    const first = await Engine.open(inner);
    for (let i = 0; i < 3; i++) await first.commit(new WriteBatch().put(`k${i}`, enc(String(i))));
    await first.close();
    const wal: string[] = [];
    for await (const o of inner.list("wal/")) wal.push(o.key);
    // The next sequence after the last object: as if the previous writer landed it after the load's listing.
    const last = wal.at(-1)!;
    const phantom = `wal/${String(Number(last.slice(4)) + 1).padStart(last.length - 4, "0")}`;
    let claimed = false;
    const puts: string[] = [];
    const store: ObjectStore = {
      get: (k) => (k === phantom ? Promise.resolve(null) : inner.get(k)),
      put: (k, body, opts) => {
        if (k.startsWith("manifest/")) claimed = true;
        else puts.push(k);
        return inner.put(k, body, opts);
      },
      delete: (k) => inner.delete(k),
      async *list(prefix, opts) {
        let shown = !claimed || !prefix.startsWith("wal/");
        for await (const o of inner.list(prefix, opts)) {
          if (!shown && o.key > phantom) {
            shown = true;
            yield { key: phantom, size: 1 };
          }
          yield o;
        }
        if (!shown) yield { key: phantom, size: 1 };
      },
    };
    const err = await failure(Engine.open(store));
    expect(claimed).toBe(true);
    expect(err).toBeInstanceOf(StoreCorruptedError);
    expect((err as StoreCorruptedError).objectKey).toBe(phantom);
    expect(err.message).toMatch(/a WAL object vanished during recovery/);
    expect(puts.filter((k) => k.startsWith("wal/"))).toEqual([]);
  });
});
