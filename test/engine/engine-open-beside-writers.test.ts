/**
 * @module An open racing a live writer's checkpoint, and an open overtaken
 * by a newer one, each driven in one order of events by hooks on a real
 * directory. The first found a checkpoint's segment that covered a commit
 * stored after the open had listed the WAL, and refused the store as
 * corrupt; the second planted its fence past a newer writer's and
 * acknowledged commits that every later open skips as an older epoch's.
 */
import { describe, expect, it } from "vitest";
import { Engine, FencedError, LocalStore, WriteBatch } from "taquba";
import { GatedStore } from "../support/gated-store.js";
import { ClaimNoted, ListHook } from "../support/open-hooks.js";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("taquba-open-beside-");
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;

/** `engine` holds the three commits each case makes and keeps: a, b and c. */
function expectABC(engine: Engine): void {
  for (const [k, v] of [
    ["a", "1"],
    ["b", "2"],
    ["c", "3"],
  ] as const)
    expect(dec(engine.get(k)), k).toBe(v);
}

describe("an open beside other writers", () => {
  it("a live writer commits and writes its checkpoint's segment between the open's listings: the open takes the commit, not the store for corrupt", async () => {
    const dir = await tempDir();
    const ownerStore = new GatedStore(new LocalStore(dir));
    const owner = await Engine.open(ownerStore, MANUAL);
    await owner.commit(new WriteBatch().put("a", enc("1")));
    await owner.checkpoint();
    // The owner's next manifest is held before it lands: its checkpoint has written its segment, not published it.
    ownerStore.hold = (key) => key.startsWith("manifest/");
    let checkpointing: Promise<unknown> | undefined;
    const opener = new ListHook(
      new LocalStore(dir),
      "seg/",
      () => true,
      async () => {
        await owner.commit(new WriteBatch().put("b", enc("2")));
        checkpointing = owner.checkpoint().catch((e: unknown) => e);
        await ownerStore.waitHeld(1);
      },
    );
    // The hook runs at the open's segment listing, whichever side of its WAL walk that is.
    const opened = await Engine.open(opener, MANUAL);
    expect(checkpointing).toBeDefined();
    expect(dec(opened.get("a"))).toBe("1");
    expect(dec(opened.get("b")), "the owner's acknowledged commit").toBe("2");
    // The owner's manifest lands on the number the open claimed: the owner is fenced, its commit stays.
    ownerStore.release(ownerStore.held[0]!.key);
    expect(await checkpointing).toBeInstanceOf(FencedError);
    await opened.commit(new WriteBatch().put("c", enc("3")));
    await opened.checkpoint();
    await opened.close();
    await owner.close().catch(() => {});
    const again = await Engine.open(new LocalStore(dir), MANUAL);
    expectABC(again);
    await again.close();
  });

  it("a newer writer opens on an open's claim and fences the log before that open's fence walk: the open is fenced, the newer writer's commits stay", async () => {
    const dir = await tempDir();
    const first = await Engine.open(new LocalStore(dir), MANUAL);
    await first.commit(new WriteBatch().put("a", enc("1")));
    await first.checkpoint();
    await first.close();
    const claimed = new ClaimNoted(new LocalStore(dir));
    let newer: Engine | undefined;
    // Once the open's claim landed, its walk to the end of the log waits while a newer writer opens on the claim and commits.
    const opener = new ListHook(
      claimed,
      "wal/",
      () => claimed.claimed,
      async () => {
        newer = await Engine.open(new LocalStore(dir), MANUAL);
        await newer.commit(new WriteBatch().put("b", enc("2")));
      },
    );
    const err = await Engine.open(opener, MANUAL).then(
      async (e) => {
        // Unfixed, the open wins too: what it acknowledges, every later open skips.
        await e.commit(new WriteBatch().put("lost", enc("x"))).catch(() => {});
        await e.close().catch(() => {});
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(newer).toBeDefined();
    expect(err).toBeInstanceOf(FencedError);
    expect((err as Error).message).toMatch(/another writer \(epoch 3\) fenced the store while this one was opening/);
    await newer!.commit(new WriteBatch().put("c", enc("3")));
    await newer!.close();
    const again = await Engine.open(new LocalStore(dir), MANUAL);
    expectABC(again);
    expect(again.has("lost")).toBe(false);
    await again.close();
  });
});
