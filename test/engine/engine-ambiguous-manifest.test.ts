/**
 * @module A manifest put that lands but reports failure on its last
 * attempt: the writer does not know its checkpoint published. The next
 * checkpoint must find that manifest is its own (same writer epoch) and
 * build on it, not take it for a newer writer's and fence itself.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch, type ListOptions, type ListedObject, type ObjectStore, type PutOptions, type StoredObject } from "taquba";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));

/** Lets the next manifest put land, then throws as if the response was lost. */
class LostManifestAck implements ObjectStore {
  armed = false;
  constructor(readonly inner: ObjectStore) {}
  get(key: string): Promise<StoredObject | null> {
    return this.inner.get(key);
  }
  async put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    const res = await this.inner.put(key, body, opts);
    if (this.armed && key.startsWith("manifest/")) {
      this.armed = false;
      throw new Error("connection reset after the write landed");
    }
    return res;
  }
  delete(key: string): Promise<void> {
    return this.inner.delete(key);
  }
  list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    return this.inner.list(prefix, opts);
  }
}

describe("a manifest whose put landed but failed", () => {
  it("the next checkpoint adopts it and publishes after it; a reopen reads every value", async () => {
    const store = new LostManifestAck(new MemoryStore());
    const opts = { checkpointWalObjects: 0, retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } };
    const engine = await Engine.open(store, opts);
    await engine.commit(new WriteBatch().put("a", enc("1")));
    store.armed = true;
    await expect(engine.checkpoint()).rejects.toThrow(/connection reset/);
    await engine.commit(new WriteBatch().put("b", enc("2")));
    await engine.checkpoint();
    await engine.commit(new WriteBatch().put("c", enc("3")));
    await engine.checkpoint();
    await engine.close();
    const reopened = await Engine.open(store, opts);
    expect(["a", "b", "c"].map((k) => dec(reopened.get(k)))).toEqual(["1", "2", "3"]);
    await reopened.close();
  });
});
