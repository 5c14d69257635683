/**
 * @module EngineReader: a read-only view that follows the writer through refreshes
 * and checkpoints.
 */
import { describe, expect, it } from "vitest";
import {
  Engine,
  EngineReader,
  MemoryStore,
  WriteBatch,
  withCounting,
  type ListOptions,
  type ListedObject,
  type ObjectStore,
  type PutOptions,
  type StoredObject,
} from "taquba";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const entries = (e: { scan(): IterableIterator<[string, Uint8Array]> }) => [...e.scan()].map(([k, v]) => `${k}=${dec(v)}`);

/** A store whose next listing of manifests waits until released: holds a reader's refresh after its WAL walk. */
class ManifestListGate implements ObjectStore {
  #armed = false;
  #release: (() => void) | undefined;
  #onHeld: (() => void) | undefined;
  constructor(readonly inner: ObjectStore) {}
  /** Resolves once the next manifest listing is being held. */
  holdNext(): Promise<void> {
    this.#armed = true;
    return new Promise((r) => (this.#onHeld = r));
  }
  release(): void {
    this.#release?.();
  }
  get(key: string): Promise<StoredObject | null> {
    return this.inner.get(key);
  }
  put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    return this.inner.put(key, body, opts);
  }
  delete(key: string): Promise<void> {
    return this.inner.delete(key);
  }
  async *list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    if (this.#armed && prefix.includes("manifest")) {
      this.#armed = false;
      await new Promise<void>((r) => {
        this.#release = r;
        this.#onHeld?.();
      });
    }
    yield* this.inner.list(prefix, opts);
  }
}

describe("engine reader", () => {
  it("a refresh asked for while another is under way reflects commits made before it was asked for", async () => {
    const store = new MemoryStore();
    const writer = await Engine.open(store, { checkpointWalObjects: 0 });
    await writer.commit(new WriteBatch().put("a", enc("1")));
    const gate = new ManifestListGate(store);
    const reader = await EngineReader.open(gate);
    await writer.commit(new WriteBatch().put("b", enc("2")));
    // The first refresh has walked the WAL (it saw b) and waits on its manifest listing...
    const held = gate.holdNext();
    const first = reader.refresh();
    await held;
    // ... when c commits and a second refresh is asked for: it must see c.
    await writer.commit(new WriteBatch().put("c", enc("3")));
    const second = reader.refresh();
    const third = reader.refresh();
    expect(third).toBe(second);
    gate.release();
    expect(await first).toBe(true);
    expect(entries(reader)).toContain("b=2");
    expect(await second).toBe(true);
    expect(entries(reader)).toEqual(["a=1", "b=2", "c=3"]);
    expect(await reader.refresh()).toBe(false);
    await writer.close();
  });

  it("sees new commits, checkpoints and new writers after refresh()", async () => {
    const store = new MemoryStore();
    const reader0 = await EngineReader.open(store);
    expect(entries(reader0)).toEqual([]);

    const writer = await Engine.open(store, { checkpointWalObjects: 0 });
    await writer.commit(new WriteBatch().put("a", enc("1")));
    const reader = await EngineReader.open(store);
    expect(entries(reader)).toEqual(["a=1"]);

    await writer.commit(new WriteBatch().put("b", enc("2")).delete("a"));
    expect(entries(reader)).toEqual(["a=1"]);
    expect(await reader.refresh()).toBe(true);
    expect(entries(reader)).toEqual(["b=2"]);
    expect(await reader.refresh()).toBe(false);

    // A checkpoint replaces the segments and deletes the WAL the reader read.
    await writer.commit(new WriteBatch().put("c", enc("3")));
    await writer.checkpoint();
    await writer.commit(new WriteBatch().put("d", enc("4")));
    await reader.refresh();
    expect(entries(reader)).toEqual(["b=2", "c=3", "d=4"]);

    // A new writer fences the old one; the reader follows the new epoch.
    await writer.close();
    const writer2 = await Engine.open(store);
    await writer2.commit(new WriteBatch().put("e", enc("5")));
    await reader.refresh();
    expect(entries(reader)).toEqual(["b=2", "c=3", "d=4", "e=5"]);
    expect(entries(reader0)).toEqual([]);
    await reader0.refresh();
    expect(entries(reader0)).toEqual(entries(reader));
    await writer2.close();
    await reader.close();
  });

  it("starts over when a checkpoint deletes a WAL object between its listing and its read", async () => {
    const inner = new MemoryStore();
    const writer = await Engine.open(inner, { checkpointWalObjects: 0 });
    await writer.commit(new WriteBatch().put("a", enc("1")));
    let interfere = false;
    // Runs the writer's checkpoint just before the reader's first WAL read.
    const racing: ObjectStore = {
      get: async (key: string): Promise<StoredObject | null> => {
        if (interfere && key.startsWith("wal/")) {
          interfere = false;
          await writer.commit(new WriteBatch().put("c", enc("3")));
          await writer.checkpoint();
        }
        return inner.get(key);
      },
      put: (k, b, o) => inner.put(k, b, o),
      delete: (k) => inner.delete(k),
      list: (p, o) => inner.list(p, o),
    };
    const reader = await EngineReader.open(racing);
    expect(entries(reader)).toEqual(["a=1"]);
    await writer.commit(new WriteBatch().put("b", enc("2")));
    interfere = true;
    await reader.refresh();
    expect(interfere).toBe(false);
    expect(entries(reader)).toEqual(["a=1", "b=2", "c=3"]);
    await writer.close();
  });

  it("never writes to the store", async () => {
    const store = withCounting(new MemoryStore());
    const writer = await Engine.open(store, { checkpointWalObjects: 2 });
    await writer.commit(new WriteBatch().put("a", enc("1")));
    store.reset();
    const reader = await EngineReader.open(store);
    await reader.refresh();
    expect(store.counts).toMatchObject({ puts: 0, deletes: 0 });
    expect(store.counts.gets).toBeGreaterThan(0);
    // Nor while it follows a writer that checkpoints and deletes under it.
    for (let i = 0; i < 6; i++) await writer.commit(new WriteBatch().put(`k${i}`, enc(String(i))));
    await writer.checkpoint();
    const writes = { puts: store.counts.puts, deletes: store.counts.deletes };
    await reader.refresh();
    expect(store.counts).toMatchObject(writes);
    expect(reader.get("k5")).toEqual(enc("5"));
    await writer.close();
  });
});
