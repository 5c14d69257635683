/**
 * @module A healthy store that holds a segment no manifest lists, left by an
 * older writer's checkpoint that a close stopped before it published, next
 * to a newer writer's manifest that lists no segment at all (its checkpoint
 * found the state empty) and whose garbage collection a close stopped too.
 * Opening must not take the leftover for the sign of a deleted manifest.
 * Replays a counterexample the engine model test found (fast-check seed
 * -285012652): put, reopen, reopen, delete, reopen, with every value paged
 * out and a checkpoint due every three WAL objects; the gates make the
 * timing of the two closes deterministic.
 */
import { describe, expect, it } from "vitest";
import { Engine, EngineReader, MemoryStore, WriteBatch, type EngineOptions, type ObjectStore } from "taquba";
import { GatedStore } from "../support/gated-store.js";

const RETRY = { attempts: 30, baseDelayMs: 0, maxDelayMs: 0 };
const PAGED: EngineOptions = { pageValues: { keyPrefixes: [""], minBytes: 0, cacheBytes: 0 } };
const OPTS: EngineOptions = { ...PAGED, flushIntervalMs: 0, checkpointWalObjects: 3, retry: RETRY };
const pad = (n: number) => String(n).padStart(20, "0");

async function keysUnder(store: ObjectStore, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.list(prefix)) keys.push(o.key);
  return keys;
}

/** Closes `engine` while the put `store` holds is pending, then lets that put land. */
async function closeWhileHeld(store: GatedStore, engine: Engine): Promise<void> {
  await store.waitHeld(1);
  const closing = engine.close();
  store.release(store.held[0]!.key);
  await closing;
}

describe("a reopen next to an older writer's unpublished segment", () => {
  it("opens, with the state the commits left, after a newer writer's empty checkpoint stopped before collecting it", async () => {
    const mem = new MemoryStore();
    let hold: (key: string) => boolean = () => false;
    const store = new GatedStore(mem, (key) => hold(key));

    // Writer 1 puts b/2 (WAL 65 after its fence at 1); writer 2 only fences (66).
    let engine = await Engine.open(store, OPTS);
    await engine.commit(new WriteBatch().put("b/2", new Uint8Array([0, 0, 0, 0])), { durable: false });
    await engine.close();
    engine = await Engine.open(store, OPTS);
    await engine.close();

    // Writer 3 (fence at 130): three WAL objects since the last checkpoint, so
    // its open starts one; it deletes b/2 (WAL 194) and closes while the
    // checkpoint's segment is in flight, so that segment is never published.
    hold = (key) => key.startsWith("seg/");
    engine = await Engine.open(store, OPTS);
    await store.waitHeld(1);
    await engine.commit(new WriteBatch().delete("b/2"), { durable: false });
    await closeWhileHeld(store, engine);
    expect(engine.stats.checkpoints).toBe(0);
    const leftover = `seg/${pad(3)}-${pad(1)}`;
    expect(await keysUnder(mem, "seg/")).toEqual([leftover]);

    // Writer 4 (epoch 4, fence at 195): its open's checkpoint is a full one
    // of an empty state, so manifest 5 lists no segment; it closes before
    // that checkpoint's garbage collection deletes anything.
    hold = (key) => key === `manifest/${pad(5)}`;
    engine = await Engine.open(store, OPTS);
    await closeWhileHeld(store, engine);
    hold = () => false;
    expect(engine.stats.checkpoints).toBe(1);
    expect(engine.stats.manifestId).toBe(5);
    expect(await keysUnder(mem, "seg/")).toEqual([leftover]);
    expect(await keysUnder(mem, "wal/")).toEqual([1, 65, 66, 130, 194, 195].map((s) => `wal/${pad(s)}`));

    // Nothing is lost or missing: b/2 was deleted, and every writer and reader opens.
    const reader = await EngineReader.open(store, { retry: RETRY });
    expect([...reader.scan()]).toEqual([]);
    const final = await Engine.open(store, { ...PAGED, retry: RETRY });
    expect([...final.scan()]).toEqual([]);
    await final.commit(new WriteBatch().put("b/2", new Uint8Array([1])));
    await final.checkpoint();
    await final.close();
    // That writer's checkpoint collected the leftover.
    expect(await keysUnder(mem, "seg/")).not.toContain(leftover);
    const again = await Engine.open(store, { ...PAGED, retry: RETRY });
    for (let p = again.warm(["b/2"]); p; p = again.warm(["b/2"])) await p;
    expect(again.get("b/2")).toEqual(new Uint8Array([1]));
    await again.close();
  });
});
