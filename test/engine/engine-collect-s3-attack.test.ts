/**
 * @module The garbage collection after an incremental checkpoint over the
 * S3 protocol (s3rver on loopback), attacked with a take-over: the first
 * writer's collection is held at a delete while a newer collection queues
 * behind it, the writer idles (no write of its own tells it it was
 * fenced), a second writer opens, commits and checkpoints past a
 * compaction, and only then the first writer's deletes go on and its
 * queued collection lists the store the second writer left. A third open
 * must hold every acknowledged commit of both and every segment the newest
 * manifest lists.
 */
import { missingListedSegments } from "../support/crash-output.js";
import { describe, expect, it } from "vitest";
import { Engine, S3Store, WriteBatch, type ListOptions, type ListedObject, type ObjectStore, type PutOptions, type StoredObject } from "taquba";
import { useS3Server } from "../support/use-s3-server.js";

const server = useS3Server();
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const opts = { checkpointWalObjects: 2, checkpointWalBytes: 0, checkpointBacklog: 0, maxSegmentRuns: 2 };

/** A store whose deletes hang while `holding`, counted. */
class HeldDeletes implements ObjectStore {
  holding = false;
  held = 0;
  done = 0;
  #waiting: Array<() => void> = [];
  constructor(readonly inner: ObjectStore) {}
  get(key: string): Promise<StoredObject | null> {
    return this.inner.get(key);
  }
  put(key: string, body: Uint8Array, o?: PutOptions): Promise<{ etag: string }> {
    return this.inner.put(key, body, o);
  }
  async delete(key: string): Promise<void> {
    if (this.holding) {
      this.held++;
      await new Promise<void>((r) => this.#waiting.push(r));
    }
    await this.inner.delete(key);
    this.done++;
  }
  list(prefix: string, o?: ListOptions): AsyncIterable<ListedObject> {
    return this.inner.list(prefix, o);
  }
  release(): void {
    this.holding = false;
    for (const r of this.#waiting.splice(0)) r();
  }
}

async function turnsUntil(done: () => boolean): Promise<void> {
  for (let i = 0; i < 20_000 && !done(); i++) await new Promise<void>((r) => setImmediate(r));
}

describe("collection after a checkpoint over s3rver, across a take-over", () => {
  it("the old writer's held and queued collections delete nothing the new writer lists", { timeout: 30_000 }, async () => {
    const base = new S3Store({ bucket: server.bucket, prefix: "collect-takeover", clientConfig: server.clientConfig });
    const oldStore = new HeldDeletes(base);
    const old = await Engine.open(oldStore, opts);
    const seed = new WriteBatch();
    for (let i = 0; i < 50; i++) seed.put(`s/${String(i).padStart(3, "0")}`, enc("seed"));
    await old.commit(seed);
    await old.checkpoint();
    const acked: string[] = [];
    const commit = async (e: Engine, k: string) => {
      await e.commit(new WriteBatch().put(k, enc(k)));
      acked.push(k);
    };
    // The next collection hangs at its first delete; two more checkpoints publish meanwhile (one collection queued).
    oldStore.holding = true;
    const before = old.stats.checkpoints;
    for (let i = 0; old.stats.checkpoints < before + 3 && i < 200; i++) await commit(old, `o/${String(i).padStart(3, "0")}`);
    await turnsUntil(() => oldStore.held > 0);
    expect(oldStore.held).toBeGreaterThan(0);
    expect(old.stats.checkpoints).toBeGreaterThanOrEqual(before + 3);

    // A second writer takes over, commits and checkpoints (compacting: two runs at most) while the old one idles.
    const next = await Engine.open(base, opts);
    for (let i = 0; i < 12; i++) {
      await commit(next, `n/${String(i).padStart(3, "0")}`);
      if (i % 3 === 2) await next.checkpoint();
    }
    expect(next.stats.compactions).toBeGreaterThan(0);

    // The old writer's deletes go on: its checkpoint() waits for its collections, then is refused (fenced).
    const heldBefore = oldStore.done;
    oldStore.release();
    await old.checkpoint().catch(() => undefined);
    expect(oldStore.done).toBeGreaterThan(heldBefore + 1);
    expect(await missingListedSegments(base)).toEqual([]);
    await old.close().catch(() => undefined);
    await next.close();

    const reopened = await Engine.open(base);
    try {
      for (const k of acked) expect(dec(reopened.get(k)), k).toBe(k);
      expect([...reopened.scan({ prefix: "s/" })]).toHaveLength(50);
    } finally {
      await reopened.close();
    }
  });
});
