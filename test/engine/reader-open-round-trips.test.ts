/**
 * @module The round trips a reader's open spends on manifests. The open
 * lists the manifests, reads the number after the newest (a listing may
 * lag) and the newest itself; once its walk ended it lists the numbers
 * after the one it loaded, reads the next number again and checks the
 * loaded one is still there. Each probe goes out beside the read that
 * follows it, so over S3 the open waits on four manifest round trips, not
 * six. A store that answers its requests in rounds (everything asked
 * before the round is answered goes out together) counts them.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, WriteBatch, type ListOptions, type ObjectStore, type PutOptions } from "taquba";

/** Answers requests in rounds: those asked before a round is answered share it, as requests in flight together share a round trip. */
class RoundStore implements ObjectStore {
  readonly rounds: string[][] = [];
  #pending: Array<{ what: string; go: () => void }> = [];
  constructor(readonly inner: ObjectStore) {}

  #turn(what: string): Promise<void> {
    return new Promise<void>((go) => {
      if (this.#pending.length === 0) setTimeout(() => this.#answer(), 0);
      this.#pending.push({ what, go });
    });
  }

  #answer(): void {
    const round = this.#pending.splice(0);
    this.rounds.push(round.map((r) => r.what));
    for (const r of round) r.go();
  }

  async get(key: string) {
    await this.#turn(`get ${key}`);
    return this.inner.get(key);
  }
  async put(key: string, body: Uint8Array, opts?: PutOptions) {
    await this.#turn(`put ${key}`);
    return this.inner.put(key, body, opts);
  }
  async delete(key: string) {
    await this.#turn(`delete ${key}`);
    return this.inner.delete(key);
  }
  async *list(prefix: string, opts?: ListOptions) {
    await this.#turn(`list ${prefix}`);
    yield* this.inner.list(prefix, opts);
  }
}

describe("a reader's open", () => {
  it("reads the newer-manifest probe beside the read that follows it: four manifest round trips", async () => {
    const inner = new MemoryStore();
    const writer = await Engine.open(inner, { checkpointWalObjects: 0 });
    for (let i = 0; i < 3; i++) {
      const b = new WriteBatch();
      b.put(`k/${i}`, new Uint8Array([i]));
      await writer.commit(b);
      await writer.checkpoint();
    }
    await writer.commit(new WriteBatch().put("k/tail", new Uint8Array([9])));
    await writer.close();

    const store = new RoundStore(inner);
    const reader = await EngineReader.open(store);
    expect(reader.get("k/2")).toEqual(new Uint8Array([2]));
    expect(reader.get("k/tail")).toEqual(new Uint8Array([9]));
    const manifestRounds = store.rounds.filter((r) => r.some((what) => what.includes("manifest/")));
    const newest = reader.manifestId;
    const key = (id: number) => `manifest/${String(id).padStart(20, "0")}`;
    expect(manifestRounds.map((r) => r.filter((what) => what.includes("manifest/")).sort())).toEqual([
      ["list manifest/"],
      [`get ${key(newest)}`, `get ${key(newest + 1)}`],
      ["list manifest/"],
      [`get ${key(newest)}`, `get ${key(newest + 1)}`],
    ]);
    await reader.close();
  });

  it("still starts over from a newer manifest the probe finds past a listing that missed it", async () => {
    const inner = new MemoryStore();
    const writer = await Engine.open(inner, { checkpointWalObjects: 0 });
    await writer.commit(new WriteBatch().put("a", new Uint8Array([1])));
    await writer.checkpoint();
    await writer.commit(new WriteBatch().put("b", new Uint8Array([2])));
    await writer.checkpoint();
    await writer.close();
    // A listing that lags by the newest manifest: the probe must find it, and the open load it.
    let newestKey = "";
    for await (const o of inner.list("manifest/")) newestKey = o.key;
    const lagging: ObjectStore = {
      get: (k) => inner.get(k),
      put: (k, b, o) => inner.put(k, b, o),
      delete: (k) => inner.delete(k),
      async *list(prefix, opts) {
        for await (const o of inner.list(prefix, opts)) if (o.key !== newestKey) yield o;
      },
    };
    const reader = await EngineReader.open(new RoundStore(lagging));
    expect(`manifest/${String(reader.manifestId).padStart(20, "0")}`).toBe(newestKey);
    expect(reader.get("b")).toEqual(new Uint8Array([2]));
    await reader.close();
  });
});
