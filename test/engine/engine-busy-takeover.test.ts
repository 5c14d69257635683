/**
 * @module Taking over from a live writer that checkpoints all the time: the
 * opener must win in bounded time. Loading the state takes longer than the
 * old writer's gap between checkpoints, so an open that loads first and
 * claims after always finds the manifest number taken; it has to claim
 * first (the old writer's next manifest then fails) and load a state that
 * no longer moves.
 */
import { describe, expect, it } from "vitest";
import { Engine, FencedError, LocalStore, StoreCorruptedError, WriteBatch, type ObjectStore } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const tempDir = useTempDirs("taquba-busy-takeover-");

/** `inner`, running `beforeRead` (awaited) before each read of a segment or WAL object. */
function onLoadReads(inner: ObjectStore, beforeRead: () => Promise<void>): ObjectStore {
  return {
    get: async (k: string) => {
      if (k.startsWith("seg/") || k.startsWith("wal/")) await beforeRead();
      return inner.get(k);
    },
    put: inner.put.bind(inner),
    delete: inner.delete.bind(inner),
    list: inner.list.bind(inner),
  };
}

describe("opening over a writer that keeps checkpointing", () => {
  it("the opener wins against a checkpoint landing during every read of its load, and the old writer is fenced", async () => {
    const dir = await tempDir();
    const old = await Engine.open(new LocalStore(dir), { checkpointWalObjects: 0 });
    for (let i = 0; i < 20; i++) await old.commit(new WriteBatch().put(`k${i}`, enc(String(i))));
    await old.checkpoint();

    const acked: number[] = [];
    let n = 0;
    let oldError: unknown;
    // The old writer commits and checkpoints while the opener reads: every load sees a newer manifest.
    const busy = async () => {
      if (oldError !== undefined) return;
      const i = n++;
      try {
        await old.commit(new WriteBatch().put(`busy${i}`, enc(String(i))));
        acked.push(i);
        await old.checkpoint();
      } catch (err) {
        oldError = err;
      }
    };
    const opened = await Engine.open(onLoadReads(new LocalStore(dir), busy));
    expect(oldError).toBeInstanceOf(FencedError);
    expect(opened.epoch).toBe(old.epoch + 1);
    // Every commit the old writer acknowledged is in the new writer's state.
    expect(acked.length).toBeGreaterThan(1);
    for (const i of acked) expect(dec(opened.get(`busy${i}`))).toBe(String(i));
    expect(dec(opened.get("k19"))).toBe("19");
    await opened.commit(new WriteBatch().put("after", enc("x")));
    await opened.close();
    await old.close();

    const again = await Engine.open(new LocalStore(dir));
    expect(dec(again.get("after"))).toBe("x");
    for (const i of acked) expect(dec(again.get(`busy${i}`))).toBe(String(i));
    await again.close();
  });

  it("a refusal found after claiming first leaves the claim: the old writer is fenced at its next checkpoint, and the next open has every acknowledged commit", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const old = await Engine.open(store, { checkpointWalObjects: 0 });
    await old.commit(new WriteBatch().put("a", enc("1")));
    await old.checkpoint();
    let claimed: string | undefined;
    let checkpoints = 0;
    const opener: ObjectStore = {
      get: async (k: string) => {
        // The first load meets a checkpoint; once claimed, the segment it loads is gone.
        if (k.startsWith("seg/") && claimed === undefined && checkpoints++ === 0) {
          await old.commit(new WriteBatch().put("b", enc("2")));
          await old.checkpoint();
        }
        if (k.startsWith("seg/") && claimed !== undefined) return null;
        return store.get(k);
      },
      put: async (k, body, opts) => {
        const done = await store.put(k, body, opts);
        if (k.startsWith("manifest/")) claimed = k;
        return done;
      },
      delete: store.delete.bind(store),
      list: store.list.bind(store),
    };
    const manifests = async () => {
      const keys: string[] = [];
      for await (const o of store.list("manifest/")) keys.push(o.key);
      return keys;
    };
    await expect(Engine.open(opener)).rejects.toBeInstanceOf(StoreCorruptedError);
    expect(claimed).toBeDefined();
    // Another opener may have read the claim as the newest manifest: it stays.
    expect(await manifests()).toContain(claimed);
    await old.commit(new WriteBatch().put("c", enc("3")));
    await expect(old.checkpoint()).rejects.toBeInstanceOf(FencedError);
    await old.close();
    const again = await Engine.open(store);
    for (const [k, v] of [
      ["a", "1"],
      ["b", "2"],
      ["c", "3"],
    ] as const)
      expect(dec(again.get(k)), k).toBe(v);
    await again.close();
  });
});
