/**
 * @module WAL objects a checkpoint deleted that come back (a power loss can
 * undo a delete whose directory entry removal never reached the disk). They
 * lie below the newest manifest's `walNext`, so replay never reads them:
 * writers and readers open with the state the commits left, and the next
 * checkpoint deletes them again. This is why a checkpoint's WAL deletes do
 * not need to be durable one by one.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, LocalStore, WriteBatch, type ObjectStore } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-covered-wal-");
const bytes = (...b: number[]) => new Uint8Array(b);

async function objectsUnder(store: ObjectStore, prefix: string): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  for await (const o of store.list(prefix)) {
    const got = await store.get(o.key);
    if (got !== null) out.set(o.key, got.body);
  }
  return out;
}

const walSeq = (key: string) => Number(key.slice("wal/".length));

describe("WAL objects below the newest manifest that reappear", () => {
  it("are never replayed, and the next checkpoint deletes them again", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const engine = await Engine.open(store);
    await engine.commit(new WriteBatch().put("a", bytes(1)).put("b", bytes(1)));
    await engine.commit(new WriteBatch().put("a", bytes(2)));
    await engine.commit(new WriteBatch().delete("b"));
    // What the checkpoint will delete: replaying any of it again would bring back b or an old a.
    const covered = await objectsUnder(store, "wal/");
    await engine.checkpoint();
    const walNext = Math.max(...[...covered.keys()].map(walSeq)) + 1;
    // Fence markers stay; the three commits' objects went.
    const kept = await objectsUnder(store, "wal/");
    for (const key of kept.keys()) covered.delete(key);
    expect(covered.size).toBe(3);
    await engine.commit(new WriteBatch().put("c", bytes(3)));
    await engine.close();

    // The power loss: every deleted WAL object is back, byte for byte.
    for (const [key, body] of covered) await store.put(key, body);

    const reader = await EngineReader.open(new LocalStore(dir));
    expect([...reader.scan()]).toEqual([
      ["a", bytes(2)],
      ["c", bytes(3)],
    ]);
    const reopened = await Engine.open(new LocalStore(dir));
    expect([...reopened.scan()]).toEqual([
      ["a", bytes(2)],
      ["c", bytes(3)],
    ]);
    await reopened.commit(new WriteBatch().put("d", bytes(4)));
    await reopened.checkpoint();
    const left = [...(await objectsUnder(store, "wal/")).keys()];
    expect(left.filter((key) => covered.has(key))).toEqual([]);
    // What stays below the old cut is the first writer's fence marker, as before the power loss.
    expect(left.filter((key) => walSeq(key) < walNext)).toEqual([...kept.keys()]);
    await reopened.close();
    const final = await Engine.open(new LocalStore(dir));
    expect([...final.scan()]).toEqual([
      ["a", bytes(2)],
      ["c", bytes(3)],
      ["d", bytes(4)],
    ]);
    await final.close();
  });
});
