/**
 * @module A checkpoint's manifest is dated by the engine's clock, as an
 * open's claim is, so a store written under a mock clock reads the same
 * whatever day the test runs; a clock that broke since the open falls back
 * to the system's time and is reported.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, MockClock, WriteBatch, type Clock } from "taquba";
import { parseNumberedKey } from "../../runtime/engine/layout.js";
import { decodeManifest, type Manifest } from "../../runtime/engine/manifest.js";
import { keysUnder } from "../support/store-keys.js";

const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;

async function newestManifest(store: MemoryStore): Promise<Manifest> {
  const key = (await keysUnder(store, "manifest/")).at(-1)!;
  return decodeManifest(key, (await store.get(key))!.body, parseNumberedKey("", "manifest", key)!);
}

describe("a manifest's time", () => {
  it("a checkpoint's manifest and an open's claim carry the engine clock's time", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(1_000_000);
    const first = await Engine.open(store, { ...MANUAL, clock });
    expect((await newestManifest(store)).createdAt).toBe(1_000_000);
    clock.advance(5_000);
    await first.commit(new WriteBatch().put("a", new Uint8Array([1])));
    await first.checkpoint();
    expect((await newestManifest(store)).createdAt).toBe(1_005_000);
    await first.close();
    clock.advance(1);
    const again = await Engine.open(store, { ...MANUAL, clock });
    expect((await newestManifest(store)).createdAt).toBe(1_005_001);
    await again.close();
  });

  it("a clock that fails after the open: the manifest takes the system's time and the failure is reported", async () => {
    const store = new MemoryStore();
    let broken = false;
    const clock: Clock = {
      now: () => {
        if (broken) throw new Error("the clock broke");
        return 1_000_000;
      },
    };
    const reported: unknown[] = [];
    const engine = await Engine.open(store, { ...MANUAL, clock, onBackgroundError: (e) => reported.push(e) });
    await engine.commit(new WriteBatch().put("a", new Uint8Array([1])));
    broken = true;
    const before = Date.now();
    await engine.checkpoint();
    const createdAt = (await newestManifest(store)).createdAt;
    expect(createdAt).toBeGreaterThanOrEqual(before);
    expect(createdAt).toBeLessThanOrEqual(Date.now());
    expect(reported.some((e) => e instanceof Error && /the clock broke/.test(e.message))).toBe(true);
    broken = false;
    await engine.close();
  });
});
