/**
 * @module A reader against a writer that checkpoints and deletes what its
 * manifests cover, over a store whose listings lag (a listing is not a
 * snapshot: it may answer from before puts that landed). A refresh reads
 * the manifests past the listing's newest by number, so it never reports
 * "nothing new" while a checkpoint took commits out of the log; a reload
 * whose listing lags starts from the manifest this reader serves or a newer
 * one, instead of refusing the store as corrupt; and a reload whose log
 * listing misses an object this reader already served loads again, so the
 * reader never moves back. Over MemoryStore, LocalStore and S3.
 */
import { describe, expect, it } from "vitest";
import {
  Engine,
  EngineReader,
  LocalStore,
  MemoryStore,
  S3Store,
  WriteBatch,
  type ListedObject,
  type ListOptions,
  type ObjectStore,
  type PutOptions,
  type StoredObject,
} from "taquba";
import { GatedStore } from "../support/gated-store.js";
import { useS3Server } from "../support/use-s3-server.js";
import { useTempDirs } from "../support/temp-dirs.js";

const server = useS3Server();
const tempDir = useTempDirs("taquba-lagging-listings-");
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;

let buckets = 0;
const stores: [string, () => Promise<ObjectStore>][] = [
  ["MemoryStore", async () => new MemoryStore()],
  ["LocalStore", async () => new LocalStore(await tempDir())],
  ["S3", async () => new S3Store({ bucket: server.bucket, prefix: `lagging-${++buckets}`, clientConfig: server.clientConfig })],
];

/** A view of `inner` whose listings of a folder answer, while told to, the keys it held earlier; reads are live, writes counted. */
class LaggingListings implements ObjectStore {
  writes = 0;
  readonly #lagging = new Map<string, { keys: readonly string[]; left: number }>();
  constructor(readonly inner: ObjectStore) {}

  /** The keys under `folder` now, to answer later listings with. */
  async snapshot(folder: string): Promise<string[]> {
    const keys: string[] = [];
    for await (const o of this.inner.list(folder)) keys.push(o.key);
    return keys;
  }

  /** The next `times` listings of `folder` answer `keys` (those after their `startAfter`). */
  lag(folder: string, keys: readonly string[], times = Number.POSITIVE_INFINITY): void {
    this.#lagging.set(folder, { keys, left: times });
  }

  /** Runs once, before the first read of a segment answers. */
  beforeSegmentRead: (() => Promise<void>) | undefined;

  async get(key: string): Promise<StoredObject | null> {
    const before = this.beforeSegmentRead;
    if (before !== undefined && key.startsWith("seg/")) {
      this.beforeSegmentRead = undefined;
      await before();
    }
    return this.inner.get(key);
  }

  put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    this.writes++;
    return this.inner.put(key, body, opts);
  }

  delete(key: string): Promise<void> {
    this.writes++;
    return this.inner.delete(key);
  }

  list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    const lag = this.#lagging.get(prefix);
    if (lag === undefined || lag.left <= 0) return this.inner.list(prefix, opts);
    lag.left--;
    const after = opts?.startAfter;
    const keys = lag.keys.filter((k) => after === undefined || k > after);
    return (async function* () {
      for (const key of keys) yield { key, size: 0 };
    })();
  }
}

/**
 * A writer over `writeTo` (by default `inner`) that committed `a` and
 * checkpointed it, and a lagging view of `inner` for a reader.
 */
async function checkpointedA(inner: ObjectStore, writeTo: ObjectStore = inner): Promise<{ writer: Engine; view: LaggingListings }> {
  const writer = await Engine.open(writeTo, MANUAL);
  await writer.commit(new WriteBatch().put("a", enc("1")));
  await writer.checkpoint();
  return { writer, view: new LaggingListings(inner) };
}

describe.each(stores)("a reader whose listings lag, over %s", (_name, makeStore) => {
  it("a refresh reads the manifests past a lagging listing by number and serves the checkpointed commits", async () => {
    const inner = await makeStore();
    const { writer, view } = await checkpointedA(inner);
    const reader = await EngineReader.open(view);
    view.lag("manifest/", await view.snapshot("manifest/"));
    // Two checkpoints: the log they cover is deleted, so only the manifests hold b and c.
    await writer.commit(new WriteBatch().put("b", enc("2")));
    await writer.checkpoint();
    await writer.commit(new WriteBatch().put("c", enc("3")));
    await writer.checkpoint();
    expect(await reader.refresh()).toBe(true);
    expect([dec(reader.get("a")), dec(reader.get("b")), dec(reader.get("c"))]).toEqual(["1", "2", "3"]);
    const newest = await EngineReader.open(inner);
    expect(reader.manifestId).toBe(newest.manifestId);
    expect(view.writes).toBe(0);
    await newest.close();
    await reader.close();
    await writer.close();
  });

  it("a reload whose manifest listing lags loads the newest manifest, not a corruption error", async () => {
    const inner = await makeStore();
    const { writer, view } = await checkpointedA(inner);
    const reader = await EngineReader.open(view);
    view.lag("manifest/", await view.snapshot("manifest/"));
    await writer.commit(new WriteBatch().put("b", enc("2")));
    await writer.checkpoint();
    // A commit past the checkpoint: the log the reader walks has a gap where the covered objects were.
    await writer.commit(new WriteBatch().put("c", enc("3")));
    expect(await reader.refresh()).toBe(true);
    expect([dec(reader.get("a")), dec(reader.get("b")), dec(reader.get("c"))]).toEqual(["1", "2", "3"]);
    expect(view.writes).toBe(0);
    await reader.close();
    await writer.close();
  });

  it("a reload whose log listing misses an object the reader served loads again instead of moving back", async () => {
    const inner = await makeStore();
    const gated = new GatedStore(inner);
    const { writer, view } = await checkpointedA(inner, gated);
    const reader = await EngineReader.open(view);
    // A checkpoint whose manifest is held: its cut covers x, not b, committed after the cut.
    await writer.commit(new WriteBatch().put("x", enc("x")));
    gated.hold = (key) => key.includes("manifest/");
    const checkpoint = writer.checkpoint();
    await gated.waitHeld(1);
    const [held] = gated.held;
    const beforeB = await view.snapshot("wal/");
    await writer.commit(new WriteBatch().put("b", enc("2")));
    await reader.refresh();
    expect(dec(reader.get("b"))).toBe("2");
    // The refresh's log listing and the reload's answer from before b's object: the reload's walk ends before it.
    view.lag("wal/", beforeB, 2);
    gated.hold = () => false;
    gated.release(held!.key);
    await checkpoint;
    expect(await reader.refresh()).toBe(true);
    expect([dec(reader.get("a")), dec(reader.get("x")), dec(reader.get("b"))]).toEqual(["1", "x", "2"]);
    expect(view.writes).toBe(0);
    await reader.close();
    await writer.close();
  });

  it("an open whose manifest is deleted while it loads, with the newer ones a lagging listing missed, loads again", async () => {
    const inner = await makeStore();
    const { writer, view } = await checkpointedA(inner);
    // Its first two listings of manifests (the open's, and its check for a newer one) answer from before four more
    // checkpoints, made while it reads the first segment: the writer keeps three manifests, so the one the open
    // loads and the next one are deleted by then.
    view.lag("manifest/", await view.snapshot("manifest/"), 2);
    view.beforeSegmentRead = async () => {
      for (let i = 0; i < 4; i++) {
        await writer.commit(new WriteBatch().put(`busy/${i}`, enc(String(i))));
        await writer.checkpoint();
      }
    };
    const reader = await EngineReader.open(view);
    expect(view.beforeSegmentRead).toBeUndefined();
    expect(dec(reader.get("a"))).toBe("1");
    for (let i = 0; i < 4; i++) expect(dec(reader.get(`busy/${i}`))).toBe(String(i));
    expect(view.writes).toBe(0);
    await reader.close();
    await writer.close();
  });
});
