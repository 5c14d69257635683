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
import { decodeManifest, encodeManifest } from "../../runtime/engine/manifest.js";
import { GatedStore } from "../support/gated-store.js";
import { keysUnder } from "../support/store-keys.js";

const RETRY = { attempts: 30, baseDelayMs: 0, maxDelayMs: 0 };
const PAGED: EngineOptions = { pageValues: { keyPrefixes: [""], minBytes: 0, cacheBytes: 0 } };
const OPTS: EngineOptions = { ...PAGED, flushIntervalMs: 0, checkpointWalObjects: 3, retry: RETRY };
const pad = (n: number) => String(n).padStart(20, "0");

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

  it("opens after its own writer's empty checkpoint failed to delete the segment an earlier checkpoint listed", async () => {
    // Found with injected faults (engine model test, fast-check seed 854220612).
    const mem = new MemoryStore();
    let failDeletes = false;
    const store: ObjectStore = {
      get: (key) => mem.get(key),
      put: (key, body, opts) => mem.put(key, body, opts),
      delete: (key) => (failDeletes ? Promise.reject(new Error("delete refused")) : mem.delete(key)),
      list: (prefix, opts) => mem.list(prefix, opts),
    };
    const opts: EngineOptions = { flushIntervalMs: 0, checkpointWalObjects: 0, retry: { attempts: 2, baseDelayMs: 0, maxDelayMs: 0 } };
    const engine = await Engine.open(store, opts);
    await engine.commit(new WriteBatch().put("a", new Uint8Array([1])));
    await engine.checkpoint(); // manifest 2 lists segment 1-1
    await engine.commit(new WriteBatch().delete("a"));
    failDeletes = true;
    await engine.checkpoint(); // manifest 3, same writer: an empty state, no segment; its garbage collection fails
    await engine.close();
    failDeletes = false;
    expect(await keysUnder(mem, "seg/")).toEqual([`seg/${pad(1)}-${pad(1)}`]);
    expect(await keysUnder(mem, "manifest/")).toEqual([1, 2, 3].map((n) => `manifest/${pad(n)}`));

    const again = await Engine.open(store, opts);
    expect([...again.scan()]).toEqual([]);
    await again.close();
  });

  it.each([
    ["this version", false],
    ["an earlier version (no last segment number)", true],
  ])("still refuses a segment written after the newest manifest when the WAL that manifest replays from is gone, manifest by %s", async (_, earlier) => {
    const mem = new MemoryStore();
    const opts: EngineOptions = { flushIntervalMs: 0, checkpointWalObjects: 0, retry: RETRY };
    const engine = await Engine.open(mem, opts);
    const many = new WriteBatch();
    for (let i = 0; i < 8; i++) many.put(`k/${i}`, new Uint8Array([i]));
    await engine.commit(many);
    await engine.checkpoint(); // manifest 2 lists segment 1-1
    await engine.commit(new WriteBatch().put("b", new Uint8Array([2])));
    await engine.checkpoint(); // manifest 3 adds segment 1-2 as a new run and deletes the WAL after manifest 2
    await engine.close();
    await mem.delete(`manifest/${pad(3)}`);
    if (earlier) {
      const key = `manifest/${pad(2)}`;
      const { lastSegment, ...older } = decodeManifest(key, (await mem.get(key))!.body, 2);
      expect(lastSegment).toBe(1);
      await mem.delete(key);
      await mem.put(key, encodeManifest(older));
    }
    const refused = Engine.open(mem, opts);
    await expect(refused).rejects.toThrow(new RegExp(`seg/${pad(1)}-${pad(2)}.*written after manifest 2`));
    expect(await keysUnder(mem, "manifest/")).toEqual([1, 2].map((n) => `manifest/${pad(n)}`));
  });

  it("writes no segment for a checkpoint that covers only fence markers, so stopping it leaves nothing a reopen refuses", async () => {
    const mem = new MemoryStore();
    let hold: (key: string) => boolean = () => false;
    const store = new GatedStore(mem, (key) => hold(key));
    // One run at most: every checkpoint is a full one (a compaction).
    const opts: EngineOptions = { flushIntervalMs: 0, checkpointWalObjects: 1, maxSegmentRuns: 1, retry: RETRY };
    let engine = await Engine.open(store, opts);
    await engine.commit(new WriteBatch().put("a", new Uint8Array([1])));
    await engine.checkpoint();
    await engine.close();
    const segments = await keysUnder(mem, "seg/");

    // Writer 2's open replays only its own fence, which makes a checkpoint due.
    hold = (key) => key.startsWith("seg/");
    engine = await Engine.open(store, opts);
    const checkpoint = engine.checkpoint().catch((err: unknown) => err);
    await Promise.race([store.waitHeld(1), checkpoint]);
    const closing = engine.close();
    // A segment in flight now would land after the close, never published: a crash's leftover.
    for (const held of [...store.held]) store.release(held.key);
    await closing;
    await checkpoint;
    hold = () => false;
    expect(await keysUnder(mem, "seg/")).toEqual(segments);

    const again = await Engine.open(store, opts);
    expect(again.get("a")).toEqual(new Uint8Array([1]));
    await again.close();
  });
});
