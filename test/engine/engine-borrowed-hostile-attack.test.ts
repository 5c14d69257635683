/**
 * @module A hostile store's borrowed reads (`ObjectStore.getBorrowed`) at
 * reopen: a store that writes over the bytes it lent once the open is done
 * (as one reusing a pooled buffer would) changes no value the engine
 * answers, before or after later commits and a checkpoint (the engine kept
 * no view of them); lent bytes cut short or with a byte flipped give
 * `StoreCorruptedError` naming the segment, never other data; a borrowed read that keeps failing gives
 * `StoreUnavailableError`; and none of them changes what is stored: the
 * next open over the plain store reads every committed value.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, StoreCorruptedError, StoreUnavailableError, WriteBatch, type StoredObject } from "taquba";
import { ForwardingStore } from "../support/forwarding-store.js";
import { testRandom } from "../support/seed.js";

const OPTS = {
  checkpointWalObjects: 0,
  checkpointWalBytes: 0,
  maxSegmentBytes: 8 * 1024,
  segmentBlockBytes: 1024,
  maxSegmentRuns: 3,
  onBackgroundError: () => {},
  retry: { attempts: 2, baseDelayMs: 0, maxDelayMs: 1 },
};
const PAGED = { pageValues: { keyPrefixes: ["k/"], minBytes: 200, cacheBytes: 8 * 1024 } };

/** `inner` (with its ranged reads) whose borrowed reads `lend` answers. */
class Lending extends ForwardingStore {
  constructor(
    inner: MemoryStore,
    readonly lend: (key: string, found: StoredObject | null) => StoredObject | null | Promise<StoredObject | null>,
  ) {
    super(inner);
  }
  getRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
    return (this.inner as MemoryStore).getRange(key, offset, length);
  }
  async getBorrowed(key: string): Promise<StoredObject | null> {
    return this.lend(key, await (this.inner as MemoryStore).getBorrowed(key));
  }
}

/** A store holding a few checkpoints' segments of `model`'s values (short and long, some paged), and what it holds. */
async function filled(seed: string): Promise<{ inner: MemoryStore; model: Map<string, string> }> {
  const rnd = testRandom(seed);
  const inner = new MemoryStore();
  const model = new Map<string, string>();
  const engine = await Engine.open(inner, OPTS);
  for (let round = 0; round < 4; round++) {
    const b = new WriteBatch();
    for (let i = 0; i < 200; i++) {
      const key = `k/${String(rnd.int(600)).padStart(4, "0")}`;
      if (rnd.int(8) === 0) {
        b.delete(key);
        model.delete(key);
      } else {
        const v = `${key} round ${round} `.repeat(rnd.int(6) === 0 ? 70 + rnd.int(40) : 1 + rnd.int(6));
        b.put(key, new TextEncoder().encode(v));
        model.set(key, v);
      }
    }
    await engine.commit(b);
    await engine.checkpoint();
  }
  await engine.close();
  return { inner, model };
}

async function expectModel(db: Engine | EngineReader, model: Map<string, string>, what: string): Promise<void> {
  if (db instanceof Engine) {
    const keys = [...model.keys()];
    for (let p = db.warm(keys); p !== undefined; p = db.warm(keys)) await p;
  }
  const got = new Map([...db.scan()].map(([k, v]) => [k, Buffer.from(v).toString()]));
  expect(got, what).toEqual(model);
}

describe("a hostile store's borrowed reads at reopen", () => {
  it.each([
    ["a writer", {}],
    ["a writer with paged values", PAGED],
    ["a reader", undefined],
  ] as const)("written over by the store after the open: %s answers every value as committed", async (_name, mode) => {
    const { inner, model } = await filled("borrowed scribbled");
    // The store lends copies of its own, and writes over every one once the open is done.
    const lent: Uint8Array[] = [];
    const store = new Lending(inner, (_k, found) => {
      if (found === null) return null;
      const body = Uint8Array.from(found.body);
      lent.push(body);
      return { body, etag: found.etag };
    });
    const db = mode === undefined ? await EngineReader.open(store) : await Engine.open(store, { ...OPTS, ...mode });
    expect(lent.length).toBeGreaterThan(0);
    for (const body of lent) body.fill(0xa5);
    await expectModel(db, model, "after the store wrote over what it lent");
    if (db instanceof Engine) {
      // A commit and a checkpoint (which writes the state again) after it, then a reopen over the plain store.
      await db.commit(new WriteBatch().put("k/after", new TextEncoder().encode("after")));
      model.set("k/after", "after");
      await db.checkpoint();
      await expectModel(db, model, "after a checkpoint");
    }
    await db.close();
    const again = await Engine.open(inner, OPTS);
    await expectModel(again, model, "reopened over the plain store");
    await again.close();
  });

  it.each([
    ["cut short by a byte", (body: Uint8Array) => body.subarray(0, body.length - 1)],
    ["a byte flipped in a value of its first block", (body: Uint8Array) => Uint8Array.from(body, (b, i) => (i === 200 ? b ^ 0x10 : b))],
    ["a byte flipped in its tail", (body: Uint8Array) => Uint8Array.from(body, (b, i) => (i === body.length - 5 ? b ^ 0x01 : b))],
  ])("lent bytes %s: the open refuses with StoreCorruptedError naming the segment, and nothing stored changes", async (_name, damage) => {
    const { inner, model } = await filled("borrowed damaged");
    const store = new Lending(inner, (key, found) => (found === null || !key.startsWith("seg/") ? found : { body: damage(found.body), etag: found.etag }));
    for (const open of [() => Engine.open(store, OPTS), () => EngineReader.open(store)]) {
      const err = await open().then(
        (db) => db.close().then(() => new Error("the open took damaged segments")),
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(StoreCorruptedError);
      expect((err as Error).message).toMatch(/seg\//);
    }
    const again = await Engine.open(inner, OPTS);
    await expectModel(again, model, "reopened over the plain store");
    await again.close();
  });

  it("a borrowed read that keeps failing: the open gives StoreUnavailableError naming the segment, and nothing stored changes", async () => {
    const { inner, model } = await filled("borrowed failing");
    const store = new Lending(inner, (key, found) => {
      if (key.startsWith("seg/")) throw new Error("connection reset");
      return found;
    });
    const err = await Engine.open(store, OPTS).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as Error).message).toMatch(/seg\/.*connection reset/);
    const again = await Engine.open(inner, OPTS);
    await expectModel(again, model, "reopened over the plain store");
    await again.close();
  });
});
