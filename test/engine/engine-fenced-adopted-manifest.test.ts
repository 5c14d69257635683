/**
 * @module A writer paused right after its checkpoint's manifest landed, and
 * before its put returned: a new writer opens meanwhile, loads that
 * manifest as the newest and claims the number after it, so its state and
 * its manifests list the segments the paused checkpoint wrote. When the
 * paused writer goes on, its listing finds the newer claim: it is fenced,
 * but its manifest was taken over, not overtaken, so it must delete
 * neither that manifest nor its segments (the newer writer's newest lists
 * them). Deleting them left a store whose newest manifest listed a missing
 * segment: every later open refused it with `StoreCorruptedError`.
 */
import { describe, expect, it } from "vitest";
import { Engine, FencedError, LocalStore, MemoryStore, WriteBatch, type ObjectStore } from "taquba";
import { parseNumberedKey } from "../../runtime/engine/layout.js";
import { decodeManifest } from "../../runtime/engine/manifest.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { keysUnder, missingListed } from "../support/store-keys.js";
import { HeldManifestPuts } from "../support/held-manifest-puts.js";

const tempDir = useTempDirs("taquba-fenced-adopted-");

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
/** Only explicit checkpoints, so the test decides when each manifest is published. */
const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;

const stores: [string, () => Promise<ObjectStore>][] = [
  ["MemoryStore", async () => new MemoryStore()],
  ["LocalStore", async () => new LocalStore(await tempDir())],
];

describe.each(stores)("a fenced writer whose landed manifest a newer writer opened on (%s)", (_name, makeStore) => {
  it("fails with FencedError and deletes neither that manifest nor the segments the newer writer lists", async () => {
    const inner = await makeStore();
    const held = new HeldManifestPuts(inner);
    const e1 = await Engine.open(held, MANUAL);
    await e1.commit(new WriteBatch().put("a", enc("1")));
    await e1.checkpoint();
    await e1.commit(new WriteBatch().put("b", enc("2")));

    held.holding = true;
    const outcome = e1.checkpoint().then(
      () => "resolved" as const,
      (err: unknown) => err,
    );
    const landed = await held.waitLanded();
    const segmentsOfLanded = decodeManifest(landed!, (await inner.get(landed!))!.body, parseNumberedKey("", "manifest", landed!)!).segments.map((s) => s.name);
    expect(segmentsOfLanded.length).toBeGreaterThan(0);

    // The new writer opens on the landed manifest: its claim lists the same segments.
    const e2 = await Engine.open(inner, MANUAL);
    expect(e2.epoch).toBe(e1.epoch + 1);
    held.release();
    expect(await outcome).toBeInstanceOf(FencedError);

    expect(await keysUnder(inner, "manifest/")).toContain(landed);
    const segments = await keysUnder(inner, "seg/");
    for (const name of segmentsOfLanded) expect(segments).toContain(name);
    expect(await missingListed(inner)).toEqual([]);
    expect(dec(e2.get("b"))).toBe("2");
    await e2.commit(new WriteBatch().put("c", enc("3")));
    await e1.close();
    await e2.close();

    const reopened = await Engine.open(inner, MANUAL);
    expect(dec(reopened.get("a"))).toBe("1");
    expect(dec(reopened.get("b"))).toBe("2");
    expect(dec(reopened.get("c"))).toBe("3");
    await reopened.close();
  });
});
