/**
 * @module One retry policy for store calls on the engine path: every call
 * the engine makes, checkpoint deletions included, goes through the same
 * backoff loop as S3Store's requests (runtime/store/retry.ts). Before, a
 * checkpoint's deletions were tried once and a transient failure left the
 * covered WAL behind.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch, withFaults } from "taquba";
import { keysUnder, RETRY, useBackends } from "./backends.js";

const enc = new TextEncoder();
const backends = useBackends();

describe("store calls on the engine path", () => {
  it("a checkpoint's deletions are retried: transient delete failures leave no covered WAL object behind", async () => {
    const raw = new MemoryStore();
    const store = withFaults(raw, { failureRate: 0, seed: 7, ops: ["delete"] });
    const engine = await Engine.open(store, { flushIntervalMs: 0, checkpointWalObjects: 0, retry: RETRY });
    for (let i = 0; i < 20; i++) await engine.commit(new WriteBatch().put(`k/${i}`, enc.encode(String(i))));
    store.failureRate = 0.5;
    await engine.checkpoint();
    store.failureRate = 0;
    expect(store.injected).toBeGreaterThan(0);
    // Only the fence at sequence 1 stays: fences are never deleted.
    expect(await keysUnder(raw, "wal/")).toEqual([`wal/${"1".padStart(20, "0")}`]);
    await engine.close();
  });

  it.each(backends)("commits, checkpoints and reopens through transient faults on $name", async (backend) => {
    const { store } = await backend.make();
    const engine = await Engine.open(store, { flushIntervalMs: 0, checkpointWalObjects: 3, retry: RETRY });
    for (let i = 0; i < 8; i++) await engine.commit(new WriteBatch().put(`k/${i}`, enc.encode(String(i))));
    await engine.close();
    const reopened = await Engine.open(store, { retry: RETRY });
    expect([...reopened.scan()]).toHaveLength(8);
    await reopened.close();
  });
});
