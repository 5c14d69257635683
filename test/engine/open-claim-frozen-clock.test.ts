/**
 * @module An open whose engine clock never moves (a `MockClock` nobody
 * advances) against a live writer that is always a manifest ahead: the
 * patience counts only the clock's forward steps, so the open must still
 * give up, by the number of the writer's manifests it had to get past,
 * with a `StoreUnavailableError` saying what kept winning. Once when every
 * claim loses to a checkpoint of a real owner (which loses nothing it
 * acknowledged, and the open leaves no claim), once when the walk to the
 * next free number never ends.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, MockClock, PreconditionFailedError, StoreUnavailableError, WriteBatch, type ObjectStore, type StoredObject } from "taquba";
import { MAX_MANIFESTS_PASSED, MIN_LOST_CLAIMS } from "../../runtime/engine/open-claim.js";
import { parseNumberedKey } from "../../runtime/engine/layout.js";
import { decodeManifest, encodeManifest } from "../../runtime/engine/manifest.js";
import { ForwardingStore } from "../support/forwarding-store.js";
import { keysUnder, manifestEpochs } from "../support/store-keys.js";
import { HEAVY_TEST_MS } from "../support/load.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;
const FAST_RETRY = { retry: { attempts: 2, baseDelayMs: 0, maxDelayMs: 1 } } as const;
/** How far past the bound the test lets an open go before calling it hung. */
const HUNG_AFTER = 2 * MAX_MANIFESTS_PASSED;
const GAVE_UP = new RegExp(
  `^object store open of "manifest/" failed: another writer published ${MAX_MANIFESTS_PASSED} manifests while this open tried to claim the next number ` +
    `\\(the most an open gets past; it lost \\d+ claims\\), in 0 s by the engine's clock; another process keeps checkpointing this store: stop it, or open again$`,
);

class OpenHung extends Error {}

/** Before each manifest put (an open's claim) runs `before`. */
class BeforeManifestPuts extends ForwardingStore {
  constructor(
    inner: ObjectStore,
    readonly before: () => Promise<void>,
  ) {
    super(inner);
  }
  override async put(key: string, body: Uint8Array, opts?: { ifNoneMatch?: "*" }) {
    if (key.startsWith("manifest/")) await this.before();
    return super.put(key, body, opts);
  }
}

describe("an open whose clock never moves", () => {
  // A thousand checkpoints of the owner: about 20 s at load 40.
  it("losing every claim to a live owner's checkpoint: gives up after the most manifests it gets past, leaving no claim and losing nothing", {
    timeout: HEAVY_TEST_MS,
  }, async () => {
    const store = new MemoryStore();
    const old = await Engine.open(store, MANUAL);
    await old.commit(new WriteBatch().put("a", enc("1")));
    await old.checkpoint();
    const clock = new MockClock();
    const frozenAt = clock.now();
    let claims = 0;
    let committed = 0;
    // Right before each claim lands, the owner publishes a checkpoint under that number.
    const opener = new BeforeManifestPuts(store, async () => {
      if (++claims > HUNG_AFTER) throw new OpenHung(`the open made ${claims} claims and did not give up`);
      await old.commit(new WriteBatch().put(`busy/${committed++}`, enc("x")));
      await old.checkpoint();
    });
    const err = await Engine.open(opener, { ...MANUAL, ...FAST_RETRY, clock }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as Error).message).toMatch(GAVE_UP);
    expect(clock.now()).toBe(frozenAt);
    // Every loss is one manifest passed: it gave up at the bound, well past the least number of claims.
    expect(claims).toBe(MAX_MANIFESTS_PASSED);
    expect(claims).toBeGreaterThan(MIN_LOST_CLAIMS);
    expect(await manifestEpochs(store)).toEqual(new Set([old.epoch]));
    await old.commit(new WriteBatch().put("after", enc("y")));
    await old.checkpoint();
    await old.close();
    const again = await Engine.open(store, MANUAL);
    for (let i = 0; i < committed; i++) expect(dec(again.get(`busy/${i}`))).toBe("x");
    expect(dec(again.get("a"))).toBe("1");
    expect(dec(again.get("after"))).toBe("y");
    await again.close();
  });

  it("whose walk to the next free number always finds a newer manifest: gives up after the most manifests it gets past", async () => {
    const store = new MemoryStore();
    const old = await Engine.open(store, MANUAL);
    await old.commit(new WriteBatch().put("a", enc("1")));
    await old.checkpoint();
    await old.close();
    const stored = await keysUnder(store, "manifest/");
    const newestKey = stored.at(-1)!;
    const newestId = parseNumberedKey("", "manifest", newestKey)!;
    const newest = decodeManifest(newestKey, (await store.get(newestKey))!.body, newestId);
    let endless = false;
    let reads = 0;
    // From the first claim on, every number past the stored manifests is taken by one of the same writer.
    const ahead = new (class extends ForwardingStore {
      override async put(key: string, body: Uint8Array, opts?: { ifNoneMatch?: "*" }) {
        if (key.startsWith("manifest/") && parseNumberedKey("", "manifest", key)! > newestId) {
          endless = true;
          throw new PreconditionFailedError(key);
        }
        return super.put(key, body, opts);
      }
      override async get(key: string): Promise<StoredObject | null> {
        const id = key.startsWith("manifest/") ? parseNumberedKey("", "manifest", key) : undefined;
        if (!endless || id === undefined || id <= newestId) return super.get(key);
        if (++reads > HUNG_AFTER) throw new OpenHung(`the open read ${reads} manifests and did not give up`);
        const body = encodeManifest({ ...newest, id, createdAt: newest.createdAt + id });
        return { body, etag: `e${id}` };
      }
    })(store);
    const clock = new MockClock();
    const err = await Engine.open(ahead, { ...MANUAL, ...FAST_RETRY, clock }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as Error).message).toMatch(GAVE_UP);
    expect((err as Error).message).toContain("it lost 1 claims");
    expect(reads).toBeLessThanOrEqual(MAX_MANIFESTS_PASSED + 1);
    // No claim landed.
    expect(await keysUnder(store, "manifest/")).toEqual(stored);
  });
});
