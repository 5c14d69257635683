/**
 * @module A reader whose every load meets a checkpoint of the live writer
 * (the writer commits and checkpoints while the reader reads each
 * segment): its open, and a refresh that has to load again, give up after
 * their reloads with a retryable StoreUnavailableError saying the store
 * kept changing, instead of looping or handing out a state mixed from two
 * checkpoints. The reader writes nothing, the writer loses nothing, and
 * once the writer pauses the same reader refreshes to its newest commit.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, LocalStore, StoreUnavailableError, WriteBatch, type ObjectStore } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-reader-reload-");
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;

/** The reader's view of `inner`: while `busy`, `writer` commits and checkpoints before each segment read; puts are counted. */
function readerStore(inner: ObjectStore, writer: Engine) {
  const s = {
    busy: false,
    checkpoints: 0,
    puts: 0,
    deletes: 0,
    get: async (k: string) => {
      if (s.busy && k.startsWith("seg/")) {
        // Taken before the awaits: segment reads run side by side.
        const i = s.checkpoints++;
        await writer.commit(new WriteBatch().put(`busy/${i}`, enc(String(i))));
        await writer.checkpoint();
      }
      return inner.get(k);
    },
    put: async (...args: Parameters<ObjectStore["put"]>) => {
      s.puts++;
      return inner.put(...args);
    },
    delete: async (k: string) => {
      s.deletes++;
      return inner.delete(k);
    },
    list: (...args: Parameters<ObjectStore["list"]>) => inner.list(...args),
  };
  return s;
}

async function writerWithSegment(dir: string): Promise<Engine> {
  const writer = await Engine.open(new LocalStore(dir), MANUAL);
  await writer.commit(new WriteBatch().put("a", enc("1")));
  await writer.checkpoint();
  return writer;
}

describe("a reader whose every load meets a checkpoint", () => {
  it("fails its open with a retryable StoreUnavailableError after its reloads, writing nothing", async () => {
    const dir = await tempDir();
    const writer = await writerWithSegment(dir);
    const store = readerStore(new LocalStore(dir), writer);
    store.busy = true;
    const err = (await EngineReader.open(store).catch((e: unknown) => e)) as StoreUnavailableError;
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(err.retryable).toBe(true);
    expect(err.message).toMatch(/the store changed under the reader 10 times in a row/);
    expect(store.checkpoints).toBeGreaterThanOrEqual(10);
    expect([store.puts, store.deletes]).toEqual([0, 0]);
    // Opened again once the writer pauses, it sees every commit the writer made meanwhile.
    store.busy = false;
    const reader = await EngineReader.open(store);
    for (let i = 0; i < store.checkpoints; i++) expect(dec(reader.get(`busy/${i}`))).toBe(String(i));
    await reader.close();
    await writer.close();
  });

  it("fails a refresh that has to load again the same way; the reader then refreshes to the newest commit", async () => {
    const dir = await tempDir();
    const writer = await writerWithSegment(dir);
    const store = readerStore(new LocalStore(dir), writer);
    const reader = await EngineReader.open(store);
    expect(dec(reader.get("a"))).toBe("1");
    // A checkpoint since the open makes the refresh load again, and every load meets another.
    await writer.commit(new WriteBatch().put("b", enc("2")));
    await writer.checkpoint();
    store.busy = true;
    const err = await reader.refresh().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as Error).message).toMatch(/the store changed under the reader 10 times in a row/);
    // Each load met one checkpoint at least: it tried them all before giving up.
    expect(store.checkpoints).toBeGreaterThanOrEqual(10);
    store.busy = false;
    await writer.commit(new WriteBatch().put("c", enc("3")));
    await reader.refresh();
    expect(dec(reader.get("a"))).toBe("1");
    expect(dec(reader.get("b"))).toBe("2");
    expect(dec(reader.get("c"))).toBe("3");
    for (let i = 0; i < store.checkpoints; i++) expect(dec(reader.get(`busy/${i}`))).toBe(String(i));
    expect([store.puts, store.deletes]).toEqual([0, 0]);
    await reader.close();
    await writer.close();
  });
});
