/**
 * @module Engine commits and durability: atomic batches, invalid batches, what
 * a reopen finds (from WAL and checkpoints), Unicode keys, shared prefixes.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, Engine, MemoryStore, ValidationError, WriteBatch } from "taquba";
import { until } from "../support/until.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));

function dump(engine: Engine): Record<string, string> {
  return Object.fromEntries([...engine.scan()].map(([k, v]) => [k, dec(v)!]));
}

describe("engine durability and reopen", () => {
  it("applies a batch atomically and in op order, visible before durability", async () => {
    const engine = await Engine.open(new MemoryStore());
    const b = new WriteBatch().put("a", enc("1")).put("b", enc("2")).delete("a").put("c", enc("3")).put("c", enc("4"));
    const done = engine.commit(b);
    // Visible synchronously, before the promise settles.
    expect(dump(engine)).toEqual({ b: "2", c: "4" });
    await done;
    await engine.close();
  });

  it("rejects an invalid batch without applying any of it", async () => {
    const engine = await Engine.open(new MemoryStore());
    const b = new WriteBatch().put("ok", enc("1")).put("bad\uD800", enc("2"));
    await expect(engine.commit(b)).rejects.toBeInstanceOf(ValidationError);
    const c = new WriteBatch().put("ok", enc("1")).put("x", "not bytes" as unknown as Uint8Array);
    await expect(engine.commit(c)).rejects.toBeInstanceOf(ValidationError);
    expect(engine.has("ok")).toBe(false);
    await engine.close();
  });

  it("recovers every commit after close and reopen, from WAL and from checkpoints", async () => {
    const store = new MemoryStore();
    let engine = await Engine.open(store, { checkpointWalObjects: 0 });
    const expected: Record<string, string> = {};
    for (let i = 0; i < 50; i++) {
      const b = new WriteBatch().put(`k/${i % 7}`, enc(`v${i}`)).put(`n/${i}`, enc(String(i)));
      if (i % 5 === 0) b.delete(`n/${i - 5}`);
      await engine.commit(b);
      expected[`k/${i % 7}`] = `v${i}`;
      expected[`n/${i}`] = String(i);
      if (i % 5 === 0) delete expected[`n/${i - 5}`];
    }
    expect(dump(engine)).toEqual(expected);
    await engine.close();
    const late = await engine.commit(new WriteBatch().put("late", enc("x"))).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(ClosedError);
    expect((late as ClosedError).message).toBe("the engine is closed; reopen it to recover the durable state");

    engine = await Engine.open(store, { checkpointWalObjects: 0 });
    expect(dump(engine)).toEqual(expected);
    await engine.checkpoint();
    await engine.commit(new WriteBatch().put("after", enc("cp")).delete("k/0"));
    expected.after = "cp";
    delete expected["k/0"];
    await engine.close();

    engine = await Engine.open(store);
    expect(dump(engine)).toEqual(expected);
    expect(engine.epoch).toBe(3);
    await engine.close();
  });

  it("counts the WAL it replayed toward its next automatic checkpoint", async () => {
    const store = new MemoryStore();
    const off = { checkpointWalObjects: 0, checkpointWalBytes: 0 };
    let engine = await Engine.open(store, off);
    for (let i = 0; i < 5; i++) await engine.commit(new WriteBatch().put(`k/${i}`, enc("v".repeat(100))));
    const written = engine.stats.walBytes;
    expect(engine.stats.walObjectsSinceCheckpoint).toBe(5);
    await engine.close();

    // The previous writer's WAL objects are still to be checkpointed: its five
    // commits and the fence it wrote when it opened.
    engine = await Engine.open(store, off);
    expect(engine.stats.walObjectsSinceCheckpoint).toBe(6);
    await engine.close();

    // Its bytes count too: one more small commit passes a threshold just
    // above what was replayed, and a checkpoint follows.
    engine = await Engine.open(store, { checkpointWalObjects: 0, checkpointWalBytes: written + 1 });
    expect(engine.stats.checkpoints).toBe(0);
    await engine.commit(new WriteBatch().put("one", enc("more")));
    await until("the automatic checkpoint", () => engine.stats.checkpoints === 1);
    await engine.close();
  });

  it("non-durable commits and empty batches follow the same WAL order", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store);
    await engine.commit(new WriteBatch().put("a", enc("1")), { durable: false });
    await engine.commit(new WriteBatch());
    await engine.close();
    const again = await Engine.open(store);
    expect(dec(again.get("a"))).toBe("1");
    await again.close();
  });

  it("round-trips keys across the whole Unicode range and empty values", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, { checkpointWalObjects: 0 });
    const keys = ["", "a", "\u00e9", "\uFFFD", "\u{1F600}", "\uE000", "z".repeat(3000)];
    const b = new WriteBatch();
    for (const k of keys) b.put(k, k === "a" ? new Uint8Array(0) : enc(k));
    await engine.commit(b);
    const before = [...engine.scan()].map(([k]) => k);
    await engine.close();
    const reopened = await Engine.open(store);
    expect([...reopened.scan()].map(([k]) => k)).toEqual(before);
    expect(reopened.get("a")?.byteLength).toBe(0);
    await reopened.checkpoint();
    await reopened.close();
    const third = await Engine.open(store);
    expect([...third.scan()].map(([k]) => k)).toEqual(before);
    await third.close();
  });

  it("engines under different prefixes share a store without fencing each other", async () => {
    const store = new MemoryStore();
    const a = await Engine.open(store, { prefix: "tenant-a/" });
    const b = await Engine.open(store, { prefix: "tenant-b/" });
    await a.commit(new WriteBatch().put("k", enc("a")));
    await b.commit(new WriteBatch().put("k", enc("b")));
    await a.checkpoint();
    await Promise.all([a.close(), b.close()]);
    for await (const o of store.list("")) expect(o.key).toMatch(/^tenant-[ab]\/(wal|manifest|seg)\//);
    const a2 = await Engine.open(store, { prefix: "tenant-a/" });
    expect(dec(a2.get("k"))).toBe("a");
    await a2.close();
    await expect(Engine.open(store, { prefix: "no-slash" })).rejects.toBeInstanceOf(ValidationError);
    const before = store.size;
    await expect(Engine.open(store, { flushIntervalMs: -1, retry: { attempts: 0 } })).rejects.toThrow(/flushIntervalMs.*\n.*retry.attempts/s);
    expect(store.size).toBe(before);
  });
});
