/**
 * @module The refusals of an open that claims first (open-writer.ts),
 * each driven in one process over a real directory: the store changing
 * under the claimed load with no newer writer (objects vanish: the open
 * fails as unavailable, and its claim stays, so the owner is fenced at its
 * next checkpoint with every acknowledged commit kept for the next open), a
 * newer writer opening during the claimed load (this open is fenced; its
 * claim, the newer writer's base, stays), and a live writer whose
 * checkpoints take the number at every claim (the open gives up once its
 * patience ran out by the engine's clock, leaving no claim). Each refusal
 * says what happened in the caller's terms, and loses nothing acknowledged.
 */
import { describe, expect, it } from "vitest";
import { Engine, FencedError, LocalStore, MockClock, StoreUnavailableError, WriteBatch, type ObjectStore } from "taquba";
import { CLAIM_PATIENCE_MS } from "../../runtime/engine/open-claim.js";
import { manifestKey, parseNumberedKey } from "../../runtime/engine/layout.js";
import { decodeManifest } from "../../runtime/engine/manifest.js";
import { keysUnder } from "../support/store-keys.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-open-claim-");
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;
const FAST_RETRY = { retry: { attempts: 2, baseDelayMs: 0, maxDelayMs: 1 } } as const;

/**
 * `inner` with its gets and puts passed through `hooks`: `get` and `put`
 * before the call, `landed` once a put is stored (a put-if-absent that
 * finds its key taken never lands).
 */
function hooked(
  inner: ObjectStore,
  hooks: { get?: (key: string) => Promise<"missing" | undefined>; put?: (key: string) => Promise<void>; landed?: (key: string) => void },
): ObjectStore {
  return {
    get: async (k) => ((await hooks.get?.(k)) === "missing" ? null : inner.get(k)),
    put: async (k, body, opts) => {
      await hooks.put?.(k);
      const done = await inner.put(k, body, opts);
      hooks.landed?.(k);
      return done;
    },
    delete: (k) => inner.delete(k),
    list: (prefix, opts) => inner.list(prefix, opts),
  };
}

/** The epochs of the manifests in `store`, by key. */
async function manifestEpochs(store: ObjectStore): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const key of await keysUnder(store, "manifest/")) {
    const got = await store.get(key);
    if (got !== null) out.set(key, decodeManifest(key, got.body, parseNumberedKey("", "manifest", key)!).epoch);
  }
  return out;
}

/** A store with a writer that committed `a`, checkpointed, and committed `a2` past it. */
async function ownedStore(): Promise<{ dir: string; store: LocalStore; old: Engine }> {
  const dir = await tempDir();
  const store = new LocalStore(dir);
  const old = await Engine.open(store, MANUAL);
  await old.commit(new WriteBatch().put("a", enc("1")));
  await old.checkpoint();
  await old.commit(new WriteBatch().put("a2", enc("2")));
  return { dir, store, old };
}

describe("an open that claims first, refused", () => {
  it("objects vanishing under the claimed load with no newer writer: the open fails as unavailable, its claim stays, the owner is fenced with nothing lost", async () => {
    const { dir, store, old } = await ownedStore();
    let claimed: string | undefined;
    let firstLoadMet = false;
    const opener = hooked(store, {
      get: async (k) => {
        // The first load meets a checkpoint (and a commit after it), so the open claims first and loads again.
        if (k.startsWith("seg/") && !firstLoadMet) {
          firstLoadMet = true;
          await old.commit(new WriteBatch().put("b", enc("2")));
          await old.checkpoint();
          await old.commit(new WriteBatch().put("c", enc("3")));
        }
        // Under the claim, every WAL object the load reads is gone, and no newer manifest explains it.
        return claimed !== undefined && k.startsWith("wal/") ? "missing" : undefined;
      },
      landed: (k) => {
        if (k.startsWith("manifest/")) claimed = k;
      },
    });
    const before = await manifestEpochs(store);
    const err = (await Engine.open(opener, { ...MANUAL, ...FAST_RETRY }).catch((e: unknown) => e)) as StoreUnavailableError;
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(err.message).toMatch(/objects it needs vanished while they were read; check that nothing else deletes objects under this prefix, then open again/);
    expect(claimed).toBeDefined();
    // The claim stays: another opener may have read it as the newest manifest.
    const after = await manifestEpochs(store);
    expect(after.get(claimed!)).toBe(Math.max(...before.values()) + 1);
    // The owner acknowledges a commit, then its checkpoint cannot take the claim's number; the commit stays in the WAL.
    await old.commit(new WriteBatch().put("d", enc("4")));
    await expect(old.checkpoint()).rejects.toBeInstanceOf(FencedError);
    await old.close();
    const again = await Engine.open(new LocalStore(dir), MANUAL);
    for (const [k, v] of [
      ["a", "1"],
      ["a2", "2"],
      ["b", "2"],
      ["c", "3"],
      ["d", "4"],
    ] as const)
      expect(dec(again.get(k)), k).toBe(v);
    await again.close();
  });

  it("a newer writer opening during the claimed load: this open is fenced, its claim stays under the newer writer, which goes on", async () => {
    const { dir, store, old } = await ownedStore();
    let claimed: string | undefined;
    let firstLoadMet = false;
    let opening: Promise<Engine> | undefined;
    const opener = hooked(store, {
      get: async (k) => {
        if (k.startsWith("seg/") && !firstLoadMet) {
          firstLoadMet = true;
          await old.commit(new WriteBatch().put("b", enc("2")));
          await old.checkpoint();
        }
        // Under the claim, a third process opens on it, and the segments this load reads are gone meanwhile.
        // One open for every read: the load reads segments ahead, so several reads wait here at once.
        if (k.startsWith("seg/") && claimed !== undefined) {
          opening ??= Engine.open(new LocalStore(dir), MANUAL);
          await opening;
          return "missing";
        }
        return undefined;
      },
      landed: (k) => {
        if (k.startsWith("manifest/")) claimed = k;
      },
    });
    const err = (await Engine.open(opener, { ...MANUAL, ...FAST_RETRY }).catch((e: unknown) => e)) as FencedError;
    expect(err).toBeInstanceOf(FencedError);
    expect(err.message).toMatch(/another writer \(manifest \d+, epoch \d+\) opened the store while this one was opening/);
    const newer = await opening!;
    // The claim that landed is the newer writer's base: the manifest after it is the newer writer's.
    const epochs = await manifestEpochs(store);
    const claimId = parseNumberedKey("", "manifest", claimed!)!;
    expect(epochs.get(claimed!)).toBe(old.epoch + 1);
    expect(epochs.get(manifestKey("", claimId + 1))).toBe(newer.epoch);
    expect(newer.epoch).toBe(old.epoch + 2);
    await expect(old.commit(new WriteBatch().put("old", enc("x")))).rejects.toBeInstanceOf(FencedError);
    await newer.commit(new WriteBatch().put("n", enc("n")));
    await newer.checkpoint();
    await newer.close();
    await old.close();
    const again = await Engine.open(new LocalStore(dir), MANUAL);
    expect(dec(again.get("a"))).toBe("1");
    expect(dec(again.get("a2"))).toBe("2");
    expect(dec(again.get("b"))).toBe("2");
    expect(dec(again.get("n"))).toBe("n");
    expect(again.get("old")).toBeUndefined();
    await again.close();
  });

  it("a live writer's checkpoint taking the number at every claim: the open gives up once its patience ran out by its clock, leaves no claim, and the owner goes on", async () => {
    const { dir, store, old } = await ownedStore();
    const clock = new MockClock();
    const startedAt = clock.now();
    const claims: string[] = [];
    let committed = 0;
    const opener = hooked(store, {
      // Right before each claim lands, the owner publishes a checkpoint under that number, and 2 s pass.
      put: async (k) => {
        if (!k.startsWith("manifest/")) return;
        claims.push(k);
        await old.commit(new WriteBatch().put(`busy/${committed++}`, enc("x")));
        await old.checkpoint();
        clock.advance(2_000);
      },
    });
    const err = (await Engine.open(opener, { ...MANUAL, ...FAST_RETRY, clock }).catch((e: unknown) => e)) as StoreUnavailableError;
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(err.message).toMatch(
      /another writer published a manifest before each of this open's 15 claims, for 30 s; another process keeps checkpointing this store: stop it, or open again/,
    );
    // Past the fixed count of earlier versions (8): the bound is the patience, by the engine's clock.
    expect(claims).toHaveLength(CLAIM_PATIENCE_MS / 2_000);
    expect(clock.now() - startedAt).toBe(CLAIM_PATIENCE_MS);
    // Every manifest is the owner's: the open left none of its own.
    expect(new Set((await manifestEpochs(store)).values())).toEqual(new Set([old.epoch]));
    await old.commit(new WriteBatch().put("after", enc("y")));
    await old.checkpoint();
    await old.close();
    const again = await Engine.open(new LocalStore(dir), MANUAL);
    for (let i = 0; i < committed; i++) expect(dec(again.get(`busy/${i}`))).toBe("x");
    expect(dec(again.get("after"))).toBe("y");
    await again.close();
  });
});
