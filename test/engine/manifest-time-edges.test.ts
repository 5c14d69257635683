/**
 * @module A manifest's time at the clock's edges: a mock clock moved
 * backwards between checkpoints and opens, at the earliest and latest
 * times it takes, and a clock of the application's that starts answering
 * NaN, Infinity or 1e30 after the open (each checkpoint still publishes,
 * dated by the system, and the bad reading is reported) or that answers so
 * at the open (refused, nothing written). Every store reopens with its data.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, MockClock, ValidationError, WriteBatch, type Clock } from "taquba";
import { parseNumberedKey } from "../../runtime/engine/layout.js";
import { decodeManifest, type Manifest } from "../../runtime/engine/manifest.js";
import { keysUnder } from "../support/store-keys.js";

const MANUAL = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 } as const;
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const enc = (s: string) => new TextEncoder().encode(s);

async function newestManifest(store: MemoryStore): Promise<Manifest> {
  const key = (await keysUnder(store, "manifest/")).at(-1)!;
  return decodeManifest(key, (await store.get(key))!.body, parseNumberedKey("", "manifest", key)!);
}

describe("a manifest's time at the clock's edges", () => {
  it("a mock clock set backwards, to its earliest and its latest time: each manifest carries that time and every open reads the data", async () => {
    const store = new MemoryStore();
    const clock = new MockClock(2_000_000);
    const times = [1_000_000, 0, -8.64e15, 8.64e15, 5];
    let engine = await Engine.open(store, { ...MANUAL, clock });
    for (const [i, t] of times.entries()) {
      clock.set(t);
      await engine.commit(new WriteBatch().put(`k${i}`, enc(String(t))));
      await engine.checkpoint();
      expect((await newestManifest(store)).createdAt, `checkpoint at ${t}`).toBe(t);
      await engine.close();
      clock.set(t - 1 >= -8.64e15 ? t - 1 : t);
      engine = await Engine.open(store, { ...MANUAL, clock });
      expect((await newestManifest(store)).createdAt, `claim after ${t}`).toBe(clock.now());
      for (let j = 0; j <= i; j++) expect(dec(engine.get(`k${j}`)), `k${j}`).toBe(String(times[j]));
    }
    await engine.close();
  });

  for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, 1e30, -1]) {
    it(`a clock that answers ${bad} after the open: the checkpoint is dated by the system and the reading reported; one that answers it at the open is refused`, async () => {
      const store = new MemoryStore();
      let reading = 1_000_000;
      const clock: Clock = { now: () => reading };
      const reported: unknown[] = [];
      const engine = await Engine.open(store, { ...MANUAL, clock, onBackgroundError: (e) => reported.push(e) });
      await engine.commit(new WriteBatch().put("a", enc("1")));
      reading = bad;
      const before = Date.now();
      await engine.checkpoint();
      const createdAt = (await newestManifest(store)).createdAt;
      expect(createdAt).toBeGreaterThanOrEqual(before);
      expect(createdAt).toBeLessThanOrEqual(Date.now());
      expect(reported.some((e) => e instanceof ValidationError && /clock's now\(\) must return milliseconds/.test(e.message))).toBe(true);
      await engine.commit(new WriteBatch().put("b", enc("2")));
      await engine.close();
      // Opened under the same clock: refused before anything is written.
      const manifests = await keysUnder(store, "manifest/");
      const wal = await keysUnder(store, "wal/");
      const refused = await Engine.open(store, { ...MANUAL, clock }).then(
        async (e) => {
          await e.close();
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(refused).toBeInstanceOf(ValidationError);
      expect((refused as ValidationError).message + ((refused as ValidationError).issues ?? []).join("\n")).toMatch(/clock/);
      expect(await keysUnder(store, "manifest/")).toEqual(manifests);
      expect(await keysUnder(store, "wal/")).toEqual(wal);
      reading = 1_000_000;
      const again = await Engine.open(store, { ...MANUAL, clock });
      expect([dec(again.get("a")), dec(again.get("b"))]).toEqual(["1", "2"]);
      expect((await newestManifest(store)).createdAt).toBe(1_000_000);
      await again.close();
    });
  }
});
