/**
 * @module A writer whose create-if-absent puts find their key taken:
 * something else sits where its next WAL object or its checkpoint's
 * segment belongs (a fence of the same, a newer or no readable epoch, an
 * object that appears and vanishes). Each must fail the commit or
 * checkpoint that met it with a typed error saying what was found, never
 * acknowledge it, publish no manifest, and leave a store whose reopen
 * holds every acknowledged commit, or refuses naming what it cannot
 * explain (bytes that are no WAL object; a newer epoch's WAL without its
 * manifest) instead of skipping what might be acknowledged.
 * Real directories; the squatting object is put just before the writer's
 * own put.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, Engine, FencedError, LocalStore, StoreCorruptedError, TaqubaError, WriteBatch, type PutOptions } from "taquba";
import { parseNumberedKey } from "../../runtime/engine/layout.js";
import { encodeFence } from "../../runtime/engine/wal-format.js";
import { ForwardingStore } from "../support/forwarding-store.js";
import { keysUnder } from "../support/store-keys.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-store-conflicts-");
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const OPTS = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0, retry: { attempts: 2, baseDelayMs: 0, maxDelayMs: 1 } } as const;

/** What sits at the key first: bytes put there, or an object that is there for the put and gone for the read after it. */
type Squatter = { bytes: (key: string) => Uint8Array } | "vanishing";

/** `inner`, where the next create-if-absent put under `prefix` finds `squatter` at its key. */
class Squatted extends ForwardingStore {
  next: { prefix: string; squatter: Squatter } | undefined;
  /** The key the squatter took. */
  taken: string | undefined;

  override async put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    const next = this.next;
    if (next === undefined || !key.startsWith(next.prefix) || opts?.ifNoneMatch !== "*") return this.inner.put(key, body, opts);
    this.next = undefined;
    this.taken = key;
    if (next.squatter !== "vanishing") {
      await this.inner.put(key, next.squatter.bytes(key));
      return this.inner.put(key, body, opts);
    }
    await this.inner.put(key, enc("briefly"));
    try {
      return await this.inner.put(key, body, opts);
    } finally {
      await this.inner.delete(key);
    }
  }
}

const walSeq = (key: string) => parseNumberedKey("", "wal", key)!;

/** How the commit that met the squatter fails: the error, then (for a failure the engine closes on) its cause. */
interface Expected {
  error: typeof FencedError | typeof ClosedError;
  says: RegExp;
  cause?: typeof StoreCorruptedError;
  /** Whether a reopen goes on, or refuses with StoreCorruptedError (a newer epoch's WAL without its manifest, bytes that are no WAL object). */
  reopen: "goes on" | { refusesNaming: "the taken key" | RegExp };
}

const walCases: [string, (epoch: number) => Squatter, Expected][] = [
  [
    "a fence of the same epoch",
    (epoch) => ({ bytes: (key) => encodeFence(epoch, walSeq(key), walSeq(key) + 1) }),
    { error: FencedError, says: /WAL object "wal\/\d+" already exists \(epoch \d+\); another process is writing to this store/, reopen: "goes on" },
  ],
  [
    "a fence of a newer epoch, its manifest missing",
    (epoch) => ({ bytes: (key) => encodeFence(epoch + 1, walSeq(key), walSeq(key) + 1) }),
    {
      error: FencedError,
      says: /WAL object "wal\/\d+" was written by writer epoch \d+, this writer has epoch \d+/,
      reopen: { refusesNaming: /^manifest\// },
    },
  ],
  [
    "bytes that are no WAL object",
    () => ({ bytes: () => enc("not a WAL object at all, but long enough to have a header") }),
    {
      error: ClosedError,
      says: /the engine is closed after: object "wal\/\d+" is corrupted/,
      cause: StoreCorruptedError,
      reopen: { refusesNaming: "the taken key" },
    },
  ],
  [
    "an object that appears and vanishes",
    () => "vanishing",
    { error: FencedError, says: /WAL object "wal\/\d+" appeared and vanished while this writer was creating it/, reopen: "goes on" },
  ],
];

describe("a writer whose next WAL object's key is taken", () => {
  it.each(walCases)("by %s: the commit fails typed and unacknowledged, and the reopen loses no acknowledged commit", async (_name, squatter, expected) => {
    const dir = await tempDir();
    const store = new Squatted(new LocalStore(dir));
    const e = await Engine.open(store, OPTS);
    await e.commit(new WriteBatch().put("k1", enc("1")));
    store.next = { prefix: "wal/", squatter: squatter(e.epoch) };
    const err = await e.commit(new WriteBatch().put("k2", enc("2"))).then(
      () => "acknowledged",
      (x: unknown) => x,
    );
    expect(err).toBeInstanceOf(expected.error);
    expect((err as Error).message).toMatch(expected.says);
    if (expected.cause !== undefined) {
      const cause = (err as Error).cause;
      expect(cause).toBeInstanceOf(expected.cause);
      expect((cause as StoreCorruptedError).objectKey).toBe(store.taken);
    }
    // The writer stops: nothing after is acknowledged either.
    await expect(e.commit(new WriteBatch().put("k3", enc("3")))).rejects.toBeInstanceOf(TaqubaError);
    await e.close();

    const opened = Engine.open(new LocalStore(dir), OPTS);
    if (expected.reopen !== "goes on") {
      const refused = await opened.then(
        (x) => x.close().then(() => "opened"),
        (x: unknown) => x,
      );
      expect(refused).toBeInstanceOf(StoreCorruptedError);
      const naming = expected.reopen.refusesNaming;
      if (naming === "the taken key") expect((refused as StoreCorruptedError).objectKey).toBe(store.taken);
      else expect((refused as StoreCorruptedError).objectKey).toMatch(naming);
      return;
    }
    const again = await opened;
    expect(dec(again.get("k1"))).toBe("1");
    expect(again.get("k2")).toBeUndefined();
    expect(again.get("k3")).toBeUndefined();
    await again.commit(new WriteBatch().put("k4", enc("4")));
    await again.close();
  });
});

describe("a checkpoint whose segment key is taken", () => {
  it("fails with FencedError saying another process writes with this epoch, publishes no manifest, and loses no acknowledged commit", async () => {
    const dir = await tempDir();
    const store = new Squatted(new LocalStore(dir));
    const e = await Engine.open(store, OPTS);
    await e.commit(new WriteBatch().put("k1", enc("1")));
    await e.commit(new WriteBatch().put("k2", enc("2")));
    const manifests = await keysUnder(store, "manifest/");
    store.next = { prefix: "seg/", squatter: { bytes: () => enc("someone else's segment") } };
    const err = await e.checkpoint().catch((x: unknown) => x);
    expect(err).toBeInstanceOf(FencedError);
    expect((err as Error).message).toMatch(/segment "seg\/[^"]+" already exists; another process is writing with this epoch/);
    expect(await keysUnder(store, "manifest/")).toEqual(manifests);
    await e.close();

    const again = await Engine.open(new LocalStore(dir), OPTS);
    expect(dec(again.get("k1"))).toBe("1");
    expect(dec(again.get("k2"))).toBe("2");
    await again.commit(new WriteBatch().put("k3", enc("3")));
    await again.checkpoint();
    await again.close();
    const third = await Engine.open(new LocalStore(dir), OPTS);
    expect(dec(third.get("k3"))).toBe("3");
    await third.close();
  });
});
