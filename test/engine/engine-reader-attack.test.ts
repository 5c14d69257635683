/**
 * @module EngineReader against closes and store faults: a refresh after
 * close never refills the dropped state with a part of the log, and a store
 * fault in the middle of a refresh leaves no half-applied or stale view.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, Engine, EngineReader, MemoryStore, WriteBatch, withFaults } from "taquba";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));

describe("EngineReader under closes and faults", () => {
  it("refresh after close rejects with ClosedError and leaves the closed view empty", async () => {
    const store = new MemoryStore();
    const writer = await Engine.open(store, { checkpointWalObjects: 0 });
    await writer.commit(new WriteBatch().put("a", enc("1")).put("b", enc("1")));
    const reader = await EngineReader.open(store);
    await writer.commit(new WriteBatch().put("b", enc("2")));
    await reader.close();
    await expect(reader.refresh()).rejects.toBeInstanceOf(ClosedError);
    // Never a view holding only the commits since the last load.
    expect(reader.get("b")).toBeUndefined();
    expect(reader.get("a")).toBeUndefined();
    await writer.close();
  });

  it("a store fault in the middle of refreshes: each either fails or gives the writer's state", async () => {
    for (let seed = 1; seed <= 30; seed++) {
      const faulty = withFaults(new MemoryStore(), { failureRate: 0, seed });
      const writer = await Engine.open(faulty, { checkpointWalObjects: 0, retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } });
      const reader = await EngineReader.open(faulty, { retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } });
      const model = new Map<string, string>();
      for (let i = 0; i < 12; i++) {
        const k = `k${i % 5}`;
        await writer.commit(new WriteBatch().put(k, enc(`${seed}-${i}`)));
        model.set(k, `${seed}-${i}`);
        if (i % 4 === 3) await writer.checkpoint().catch(() => {});
        faulty.failureRate = 0.3;
        const results = await Promise.allSettled([reader.refresh(), reader.refresh(), reader.refresh()]);
        faulty.failureRate = 0;
        if (results[2]!.status === "fulfilled") {
          for (const [k, v] of model) expect(dec(reader.get(k)), `seed ${seed} step ${i} key ${k}`).toBe(v);
        }
      }
      await reader.refresh();
      for (const [k, v] of model) expect(dec(reader.get(k)), `seed ${seed} final ${k}`).toBe(v);
      await reader.close();
      await writer.close();
    }
  });
});
