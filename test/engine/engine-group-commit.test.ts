/**
 * @module Engine group commit (shared WAL objects, in-order durability, gaps at
 * recovery) and checkpoints (bounded object count, segments, failure backoff).
 */
import { describe, expect, it } from "vitest";
import { Engine, FencedError, MemoryStore, WriteBatch, withCounting } from "taquba";
import { failWhen } from "../support/failing-store.js";
import { GatedStore } from "../support/gated-store.js";

const enc = (s: string) => new TextEncoder().encode(s);

describe("engine group commit", () => {
  it("many concurrent commits share one WAL object", async () => {
    const store = withCounting(new MemoryStore());
    const engine = await Engine.open(store, { flushIntervalMs: 5 });
    store.reset();
    const commits = Array.from({ length: 500 }, (_, i) => engine.commit(new WriteBatch().put(`k/${i}`, enc(String(i)))));
    await Promise.all(commits);
    expect(engine.stats.walBatches).toBe(500);
    expect(engine.stats.walPuts).toBe(1);
    expect(store.counts.puts).toBe(1);
    await engine.close();
    const reopened = await Engine.open(store);
    expect([...reopened.scan({ prefix: "k/" })]).toHaveLength(500);
    await reopened.close();
  });

  it("an empty batch writes nothing and resolves once every earlier commit is durable", async () => {
    const gated = new GatedStore(withCounting(new MemoryStore()));
    const engine = await Engine.open(gated, { flushIntervalMs: 0 });
    const before = engine.stats.walPuts;
    // Idle: nothing to wait for and nothing to write.
    await engine.commit(new WriteBatch());
    await engine.commit(new WriteBatch(), { durable: false });
    expect(engine.stats.walPuts).toBe(before);
    gated.hold = (k) => k.startsWith("wal/");
    const first = engine.commit(new WriteBatch().put("a", enc("1")));
    await gated.waitHeld(1);
    let emptyDone = false;
    const empty = engine.commit(new WriteBatch()).then(() => (emptyDone = true));
    // The held put cannot land before it is released, so no wait can be too short here.
    for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
    expect(emptyDone).toBe(false);
    gated.hold = () => false;
    gated.release(gated.held[0]!.key);
    await Promise.all([first, empty]);
    expect(engine.stats.walPuts).toBe(before + 1);
    expect(engine.stats.walBatches).toBe(1);
    await engine.close();
  });

  it("close waits for a non-durable commit to be stored before it resolves", async () => {
    const gated = new GatedStore(new MemoryStore());
    const engine = await Engine.open(gated, { flushIntervalMs: 0 });
    gated.hold = (k) => k.startsWith("wal/");
    await engine.commit(new WriteBatch().put("a", enc("1")), { durable: false });
    await gated.waitHeld(1);
    let closed = false;
    const closing = engine.close().then(() => (closed = true));
    // The held put cannot land before it is released, so no wait can be too short here.
    for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
    expect(closed).toBe(false);
    gated.hold = () => false;
    gated.release(gated.held[0]!.key);
    await closing;
    const reopened = await Engine.open(gated.inner);
    expect(reopened.get("a")).toEqual(enc("1"));
    await reopened.close();
  });

  it("a non-durable commit nobody waits for lands without error, and later commits carry on", async () => {
    const gated = new GatedStore(new MemoryStore());
    const engine = await Engine.open(gated, { flushIntervalMs: 0 });
    gated.hold = (k) => k.startsWith("wal/");
    await engine.commit(new WriteBatch().put("a", enc("1")), { durable: false });
    await gated.waitHeld(1);
    const key = gated.held[0]!.key;
    gated.hold = () => false;
    gated.release(key);
    // Its object has no waiter when it lands: releasing it must not throw (an unhandled rejection).
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on("unhandledRejection", onUnhandled);
    await gated.landed(key);
    await engine.commit(new WriteBatch().put("b", enc("2")));
    for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
    process.off("unhandledRejection", onUnhandled);
    expect(unhandled).toEqual([]);
    await engine.close();
    const reopened = await Engine.open(gated.inner);
    expect([reopened.get("a"), reopened.get("b")]).toEqual([enc("1"), enc("2")]);
    await reopened.close();
  });

  it("flushes early at maxWalBytes", async () => {
    const engine = await Engine.open(new MemoryStore(), { flushIntervalMs: 1000, maxWalBytes: 2048 });
    const big = new Uint8Array(700);
    const commits = Array.from({ length: 9 }, (_, i) => engine.commit(new WriteBatch().put(`k/${i}`, big)));
    await Promise.all(commits);
    expect(engine.stats.walPuts).toBeGreaterThanOrEqual(3);
    await engine.close();
  });

  it("resolves commits in WAL order even when a later object lands first", async () => {
    const gated = new GatedStore(new MemoryStore());
    const engine = await Engine.open(gated, { flushIntervalMs: 0 });
    gated.hold = (k) => k.startsWith("wal/");
    const order: string[] = [];
    const first = engine.commit(new WriteBatch().put("a", enc("1"))).then(() => order.push("a"));
    await gated.waitHeld(1);
    const second = engine.commit(new WriteBatch().put("b", enc("2"))).then(() => order.push("b"));
    await gated.waitHeld(2);
    const [k1, k2] = gated.held.map((h) => h.key);
    expect(k1! < k2!).toBe(true);
    gated.release(k2!);
    // The later object is stored and its put has returned to the engine, but
    // its commit waits for the earlier one.
    await gated.landed(k2!);
    expect(await gated.inner.get(k2!)).not.toBeNull();
    expect(order).toEqual([]);
    const flushed = engine.flush().then(() => order.push("flush"));
    gated.release(k1!);
    await Promise.all([first, second, flushed]);
    expect(order).toEqual(["a", "b", "flush"]);
    gated.hold = () => false;
    await engine.close();
  });

  it("a crash with a later WAL object but not an earlier one recovers only up to the gap", async () => {
    const inner = new MemoryStore();
    const gated = new GatedStore(inner);
    const engine = await Engine.open(gated, { flushIntervalMs: 0 });
    await engine.commit(new WriteBatch().put("before", enc("0")));
    gated.hold = (k) => k.startsWith("wal/");
    void engine.commit(new WriteBatch().put("a", enc("1"))).catch(() => {});
    await gated.waitHeld(1);
    const lost = engine.commit(new WriteBatch().put("b", enc("2")));
    await gated.waitHeld(2);
    gated.release(gated.held[1]!.key); // "b" lands, "a" never does: the process "crashes"
    // Reopen while the first object is still missing.
    const reopened = await Engine.open(inner);
    expect([...reopened.scan()].map(([k]) => k)).toEqual(["before"]);
    await reopened.commit(new WriteBatch().put("c", enc("3")));
    await reopened.close();
    const third = await Engine.open(inner);
    expect([...third.scan()].map(([k]) => k)).toEqual(["before", "c"]);
    await third.close();
    gated.release(gated.held[0]!.key);
    // The first writer learns, when its held object finally lands, that a newer writer owns the store.
    const err = await lost.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FencedError);
    expect(engine.closed).toBe(true);
  });
});

describe("engine checkpoints", () => {
  it("keep the object count bounded in a long commit loop", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, { checkpointWalObjects: 40, flushIntervalMs: 0 });
    let maxObjects = 0;
    for (let i = 0; i < 2000; i++) {
      await engine.commit(new WriteBatch().put(`k/${i % 300}`, enc(`v${i}`)).put(`counter`, enc(String(i))));
      maxObjects = Math.max(maxObjects, store.size);
    }
    await engine.checkpoint();
    expect(engine.stats.checkpoints).toBeGreaterThan(20);
    // WAL objects between checkpoints, a few manifests, one fence, the segments.
    expect(maxObjects).toBeLessThan(120);
    await engine.close();
    expect(store.size).toBeLessThan(10);
    const reopened = await Engine.open(store);
    expect(new TextDecoder().decode(reopened.get("counter"))).toBe("1999");
    expect([...reopened.scan({ prefix: "k/" })]).toHaveLength(300);
    await reopened.close();
  });

  it("split the state into several segments and keep commits flowing while writing them", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, { checkpointWalObjects: 0, maxSegmentBytes: 64 * 1024, segmentBlockBytes: 4096 });
    const b = new WriteBatch();
    for (let i = 0; i < 20_000; i++) b.put(`k/${String(i).padStart(6, "0")}`, enc(`value-${i}`));
    await engine.commit(b);
    const cp = engine.checkpoint();
    // Commits made during the checkpoint are durable and survive it.
    await engine.commit(new WriteBatch().put("during", enc("x")).delete("k/000000"));
    await cp;
    const segs: string[] = [];
    for await (const o of store.list("seg/")) segs.push(o.key);
    expect(segs.length).toBeGreaterThan(3);
    await engine.close();
    const reopened = await Engine.open(store);
    expect([...reopened.scan({ prefix: "k/" })]).toHaveLength(19_999);
    expect(reopened.has("during")).toBe(true);
    await reopened.close();
  });

  it("a failing background checkpoint is reported, backs off, and never blocks commits", async () => {
    const inner = new MemoryStore();
    let failSegments = true;
    const store = failWhen(inner, (call, key) =>
      failSegments && call === "put" && key.startsWith("seg/") ? new Error("segment bucket unavailable") : undefined,
    );
    const errors: unknown[] = [];
    const engine = await Engine.open(store, {
      checkpointWalObjects: 5,
      flushIntervalMs: 0,
      retry: { attempts: 2, baseDelayMs: 1 },
      onBackgroundError: (e) => errors.push(e),
    });
    for (let i = 0; i < 100; i++) await engine.commit(new WriteBatch().put(`k/${i}`, enc("v")));
    // Attempts failed, but the back-off (1 s, doubling) held off one per WAL put.
    expect(errors.length).toBeGreaterThanOrEqual(1);
    expect(errors.length).toBeLessThanOrEqual(3);
    expect(String(errors[0])).toMatch(/segment bucket unavailable/);
    failSegments = false;
    await engine.checkpoint();
    const wal: string[] = [];
    for await (const o of inner.list("wal/")) wal.push(o.key);
    expect(wal).toHaveLength(1); // only the fence marker remains
    await engine.close();
    const reopened = await Engine.open(inner);
    expect([...reopened.scan()]).toHaveLength(100);
    await reopened.close();
  });
});
