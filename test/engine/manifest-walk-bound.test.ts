/**
 * @module A store that answers a read of every manifest number (a broken
 * proxy or test double answering every read, or a hostile store): an open
 * and a reader read the manifests past their listing's newest by number
 * until one is absent, and such a store never gives one. Each read gives up
 * after `MAX_MANIFESTS_PAST_LISTING` of them with StoreUnavailableError
 * saying what the store did, writing nothing. The store here stops
 * answering after 5,000 reads past its listing, so the read without a bound
 * of its own ends (and opens) instead of hanging the test.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, StoreUnavailableError, WriteBatch, type PutOptions, type StoredObject } from "taquba";
import { MAX_MANIFESTS_PAST_LISTING } from "../../runtime/engine/recovery.js";
import { ForwardingStore } from "../support/forwarding-store.js";

const enc = (s: string) => new TextEncoder().encode(s);
const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;
/** Reads past the listing this store answers before it gives up answering. */
const ANSWERED = 5_000;

/** Once `answering`, a read of any manifest number nothing is stored under answers a copy of `copied`, up to ANSWERED reads. */
class EveryNumberAnswered extends ForwardingStore {
  answering = false;
  copied: Uint8Array | undefined;
  invented = 0;
  writes = 0;
  override async get(key: string): Promise<StoredObject | null> {
    const found = await this.inner.get(key);
    if (found !== null || !this.answering || !key.startsWith("manifest/") || this.invented >= ANSWERED) return found;
    this.invented++;
    return { body: new Uint8Array(this.copied!), etag: `"${this.invented}"` };
  }
  override put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    // The writer's own capability check under probe/ is no write of the store's state.
    if (!key.startsWith("probe/")) this.writes++;
    return this.inner.put(key, body, opts);
  }
  override delete(key: string): Promise<void> {
    if (!key.startsWith("probe/")) this.writes++;
    return this.inner.delete(key);
  }
}

async function answeringStore(): Promise<EveryNumberAnswered> {
  const inner = new MemoryStore();
  const engine = await Engine.open(inner, MANUAL);
  await engine.commit(new WriteBatch().put("k", enc("v")));
  await engine.checkpoint();
  await engine.close();
  const keys: string[] = [];
  for await (const o of inner.list("manifest/")) keys.push(o.key);
  const store = new EveryNumberAnswered(inner);
  store.copied = (await inner.get(keys[keys.length - 1]!))!.body;
  return store;
}

async function failure(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => undefined,
    (e: unknown) => e,
  );
}

function expectBounded(err: unknown, store: EveryNumberAnswered): void {
  expect(err).toBeInstanceOf(StoreUnavailableError);
  expect((err as Error).message).toMatch(
    new RegExp(`the store answered ${MAX_MANIFESTS_PAST_LISTING} manifests in a row past the newest it listed \\(up to number \\d+\\) and still had another`),
  );
  expect((err as Error).message).toMatch(/check that the store answers a read of a missing object as absent/);
  expect(store.invented).toBeLessThanOrEqual(MAX_MANIFESTS_PAST_LISTING + 1);
}

describe("a store answering every manifest number", () => {
  it("a writer's open gives up after the bound with StoreUnavailableError, writing nothing", async () => {
    const store = await answeringStore();
    store.answering = true;
    expectBounded(await failure(Engine.open(store, MANUAL)), store);
    expect(store.writes).toBe(0);
  });

  it("a reader's open gives up after the bound with StoreUnavailableError", async () => {
    const store = await answeringStore();
    store.answering = true;
    expectBounded(await failure(EngineReader.open(store)), store);
  });

  it("a reader's refresh gives up after the bound, and the reader keeps serving what it read", async () => {
    const store = await answeringStore();
    const reader = await EngineReader.open(store);
    store.answering = true;
    expectBounded(await failure(reader.refresh()), store);
    expect(new TextDecoder().decode(await reader.get("k"))).toBe("v");
    await reader.close();
  });
});
