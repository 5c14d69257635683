/**
 * @module A claim, once it landed, is never deleted by the open that made
 * it. Another opener may already have read it as the newest manifest and
 * be about to claim the number after it; deleting it frees its number, the
 * old writer's next checkpoint takes that number (and deletes the WAL it
 * covers), and the other opener then claims on top of a state that no
 * longer is the store's. Each case drives that order of events with hooks
 * on a real directory: a refusal under the claim, and a claim whose put is
 * answered only after a newer writer opened on it.
 */
import { describe, expect, it } from "vitest";
import { Engine, FencedError, LocalStore, StoreUnavailableError, WriteBatch, type ObjectStore } from "taquba";
import { ForwardingStore } from "../support/forwarding-store.js";
import { HeldManifestPuts } from "../support/held-manifest-puts.js";
import { keysUnder } from "../support/store-keys.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-claim-kept-");
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;
const FAST_RETRY = { retry: { attempts: 2, baseDelayMs: 0, maxDelayMs: 1 } } as const;

/** A promise with its resolver outside. */
function signal(): { promise: Promise<void>; fire: () => void } {
  let fire = () => {};
  const promise = new Promise<void>((r) => (fire = r));
  return { promise, fire };
}

/** `inner`, each get of a key under `seg/` first awaiting `onSegmentGet`, which may also fail it. */
class SegmentGetHook extends ForwardingStore {
  constructor(
    inner: ObjectStore,
    readonly onSegmentGet: (key: string) => Promise<void>,
  ) {
    super(inner);
  }

  override async get(key: string) {
    if (key.startsWith("seg/")) await this.onSegmentGet(key);
    return this.inner.get(key);
  }
}

/** A store whose owner committed `a` (among 100 keys, so later checkpoints stay incremental), checkpointed, and committed `a2` past it. */
async function ownedStore(): Promise<{ dir: string; store: LocalStore; old: Engine }> {
  const dir = await tempDir();
  const store = new LocalStore(dir);
  const old = await Engine.open(store, MANUAL);
  const first = new WriteBatch().put("a", enc("1"));
  for (let i = 0; i < 100; i++) first.put(`base/${i}`, enc(String(i)));
  await old.commit(first);
  await old.checkpoint();
  await old.commit(new WriteBatch().put("a2", enc("2")));
  return { dir, store, old };
}

describe("an open's claim, once landed, stays", () => {
  it("a refusal under the claim while another opener has read it: the claim stays, the owner's next checkpoint is fenced, and the other opener loses no acknowledged commit", async () => {
    const { dir, store, old } = await ownedStore();
    const manifestsBefore = await keysUnder(store, "manifest/");
    // The other opener has read the newest manifest (the claim) and waits at its first segment read.
    const otherReading = signal();
    const otherGoOn = signal();
    let otherHeld = false;
    const otherStore = new SegmentGetHook(new LocalStore(dir), async () => {
      if (otherHeld) return;
      otherHeld = true;
      otherReading.fire();
      await otherGoOn.promise;
    });
    let other: Promise<Engine> | undefined;
    let loads = 0;
    const opener = new SegmentGetHook(store, async () => {
      loads++;
      // The first load meets a checkpoint, so the open claims first and loads again under its claim.
      if (loads === 1) {
        await old.commit(new WriteBatch().put("b", enc("3")));
        await old.checkpoint();
        return;
      }
      // Under the claim: the other opener starts and reads the claim; then this load's reads fail.
      if (other === undefined) {
        other = Engine.open(otherStore, MANUAL);
        other.catch(() => {});
        await otherReading.promise;
      }
      throw new Error("injected read fault");
    });
    const err = await Engine.open(opener, { ...MANUAL, ...FAST_RETRY }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as Error).message).toMatch(/injected read fault/);
    const claim = (await keysUnder(store, "manifest/")).filter((k) => !manifestsBefore.includes(k)).at(-1);
    // The owner's checkpoint during the first load, and the claim after it.
    expect((await keysUnder(store, "manifest/")).length).toBe(manifestsBefore.length + 2);
    expect(claim).toBeDefined();

    // The owner acknowledges a commit; its checkpoint cannot take the claim's number, so the WAL holding the commit stays.
    await old.commit(new WriteBatch().put("x", enc("acked")));
    await expect(old.checkpoint()).rejects.toBeInstanceOf(FencedError);
    expect(await keysUnder(store, "manifest/")).toContain(claim);

    otherGoOn.fire();
    const opened = await other!;
    for (const [k, v] of [
      ["a", "1"],
      ["a2", "2"],
      ["b", "3"],
      ["x", "acked"],
    ] as const)
      expect(dec(opened.get(k)), k).toBe(v);
    await opened.commit(new WriteBatch().put("n", enc("n")));
    await opened.checkpoint();
    await opened.close();
    await old.close();
    const again = await Engine.open(new LocalStore(dir), MANUAL);
    expect(dec(again.get("x"))).toBe("acked");
    expect(dec(again.get("n"))).toBe("n");
    await again.close();
  });

  it("a claim answered only after a newer writer opened on it: the open is fenced, and the claim stays as that writer's base", async () => {
    const { dir, store, old } = await ownedStore();
    const held = new HeldManifestPuts(store);
    let loads = 0;
    const opener = new SegmentGetHook(held, async () => {
      // The first load meets a checkpoint, so the open claims first; that claim's put is held once it landed.
      if (++loads > 1) return;
      await old.commit(new WriteBatch().put("b", enc("3")));
      await old.checkpoint();
      held.holding = true;
    });
    const opening = Engine.open(opener, { ...MANUAL, ...FAST_RETRY }).catch((e: unknown) => e);
    const claim = await held.waitLanded();
    const newer = await Engine.open(new LocalStore(dir), MANUAL);
    held.release();
    const err = await opening;
    expect(err).toBeInstanceOf(FencedError);
    expect((err as Error).message).toMatch(/another writer opened the store at the same time \(manifest \d+ has epoch \d+\)/);
    expect(await keysUnder(store, "manifest/")).toContain(claim);
    await newer.commit(new WriteBatch().put("n", enc("n")));
    await newer.checkpoint();
    await newer.close();
    await old.close();
    const again = await Engine.open(new LocalStore(dir), MANUAL);
    for (const [k, v] of [
      ["a", "1"],
      ["a2", "2"],
      ["b", "3"],
      ["n", "n"],
    ] as const)
      expect(dec(again.get(k)), k).toBe(v);
    await again.close();
  });
});
