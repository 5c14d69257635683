/**
 * @module An open's claim racing a live writer that publishes a checkpoint
 * in every window between the open's read of the newest manifest and its
 * claim of the next number (open-claim.ts), driven in one process over a
 * real directory with the engine's clock mocked. The open must keep
 * claiming past any fixed count of losses, rebasing on the manifest that
 * beat it without listing the manifests again, and then win and fence the
 * old writer with every commit it acknowledged kept; it gives up only after
 * both a least number of losses and the patience by its clock.
 */
import { describe, expect, it } from "vitest";
import { Engine, FencedError, LocalStore, MockClock, StoreUnavailableError, WriteBatch, type ListOptions, type ListedObject, type PutOptions } from "taquba";
import { CLAIM_PATIENCE_MS, MIN_LOST_CLAIMS } from "../../runtime/engine/open-claim.js";
import { ForwardingStore } from "../support/forwarding-store.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-claim-race-busy-");
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;

/** Before each manifest put (an open's claim) runs `beforeClaim`; counts listings of the manifests. */
class ClaimWindow extends ForwardingStore {
  claims = 0;
  manifestListings = 0;

  constructor(
    inner: LocalStore,
    readonly beforeClaim: (claim: number) => Promise<void>,
  ) {
    super(inner);
  }

  override async put(key: string, body: Uint8Array, opts?: PutOptions): Promise<{ etag: string }> {
    if (key.startsWith("manifest/")) await this.beforeClaim(++this.claims);
    return this.inner.put(key, body, opts);
  }

  override list(prefix: string, opts?: ListOptions): AsyncIterable<ListedObject> {
    if (prefix.startsWith("manifest/")) this.manifestListings++;
    return this.inner.list(prefix, opts);
  }
}

/** A store with a live writer that committed and checkpointed once. */
async function ownedStore(): Promise<{ dir: string; old: Engine }> {
  const dir = await tempDir();
  const old = await Engine.open(new LocalStore(dir), MANUAL);
  await old.commit(new WriteBatch().put("a", enc("1")));
  await old.checkpoint();
  return { dir, old };
}

describe("an open's claim against a writer that checkpoints in every window before it", () => {
  it("loses more claims than any fixed count, rebases without listing, then wins and fences the old writer with nothing lost", async () => {
    const { dir, old } = await ownedStore();
    const clock = new MockClock();
    const losses = 3 * MIN_LOST_CLAIMS;
    const acked: string[] = [];
    let listingsWhileLosing = 0;
    const store = new ClaimWindow(new LocalStore(dir), async (claim) => {
      if (claim === 1) listingsWhileLosing = -store.manifestListings;
      if (claim > losses) {
        listingsWhileLosing += store.manifestListings;
        return;
      }
      // The live writer publishes the number this claim is about to take; time moves, within the open's patience.
      await old.commit(new WriteBatch().put(`busy/${claim}`, enc(String(claim))));
      acked.push(`busy/${claim}`);
      await old.checkpoint();
      clock.advance(Math.floor(CLAIM_PATIENCE_MS / (losses + 1)));
    });
    const opened = await Engine.open(store, { ...MANUAL, clock });
    expect(store.claims).toBe(losses + 1);
    // Each loss told the open which manifest took the number: it read that one, never the listing.
    expect(listingsWhileLosing).toBe(0);
    expect(opened.epoch).toBe(old.epoch + 1);
    // Fenced: the old writer's next log write meets the fence, its next checkpoint the claim.
    await expect(old.commit(new WriteBatch().put("late", enc("x")))).rejects.toBeInstanceOf(FencedError);
    await expect(old.checkpoint()).rejects.toBeInstanceOf(FencedError);
    await old.close();
    expect(dec(opened.get("a"))).toBe("1");
    for (const k of acked) expect(opened.has(k), k).toBe(true);
    expect(opened.has("late")).toBe(false);
    await opened.commit(new WriteBatch().put("after", enc("y")));
    await opened.close();

    const again = await Engine.open(new LocalStore(dir), MANUAL);
    for (const k of [...acked, "a", "after"]) expect(again.has(k), k).toBe(true);
    await again.close();
  });

  it("a clock set far forward at the first loss still leaves the open its least number of claims, then the typed refusal", async () => {
    const { dir, old } = await ownedStore();
    const clock = new MockClock();
    const store = new ClaimWindow(new LocalStore(dir), async (claim) => {
      await old.commit(new WriteBatch().put(`busy/${claim}`, enc("x")));
      await old.checkpoint();
      if (claim === 1) clock.advance(10 * CLAIM_PATIENCE_MS);
    });
    const err = await Engine.open(store, { ...MANUAL, clock }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as Error).message).toMatch(
      new RegExp(
        `another writer published a manifest before each of this open's ${MIN_LOST_CLAIMS} claims, for 300 s; another process keeps checkpointing this store: stop it, or open again`,
      ),
    );
    expect(store.claims).toBe(MIN_LOST_CLAIMS);
    await old.commit(new WriteBatch().put("after", enc("y")));
    await old.checkpoint();
    await old.close();
  });
  it("another open claiming past the checkpoint that took this open's number: this open is fenced, the other goes on", async () => {
    const { dir, old } = await ownedStore();
    let other: Engine | undefined;
    const store = new ClaimWindow(new LocalStore(dir), async (claim) => {
      if (claim > 1) return;
      // The live writer takes this claim's number, and another process opens on its manifest before this open reads it.
      await old.commit(new WriteBatch().put("b", enc("2")));
      await old.checkpoint();
      other = await Engine.open(new LocalStore(dir), MANUAL);
    });
    const err = await Engine.open(store, MANUAL).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FencedError);
    expect((err as Error).message).toMatch(/another writer opened the store at the same time \(manifest \d+ has epoch \d+\)/);
    // This open read past the manifest that took its number, found the other's claim there, and claimed nothing.
    expect(store.claims).toBe(1);
    expect(other!.epoch).toBe(old.epoch + 1);
    await expect(old.commit(new WriteBatch().put("late", enc("x")))).rejects.toBeInstanceOf(FencedError);
    await old.close();
    expect(dec(other!.get("b"))).toBe("2");
    await other!.commit(new WriteBatch().put("after", enc("y")));
    await other!.checkpoint();
    await other!.close();
  });
});
