/**
 * @module Engine fencing: a second writer opening the store stops the first from
 * acknowledging anything again.
 */
import { describe, expect, it } from "vitest";
import { ClosedError, Engine, EngineReader, FencedError, MemoryStore, WriteBatch, withCounting } from "taquba";
import { GatedStore } from "../support/gated-store.js";

const enc = (s: string) => new TextEncoder().encode(s);
const keys = (e: { scan(): IterableIterator<[string, Uint8Array]> }) => [...e.scan()].map(([k]) => k);

describe("engine fencing", () => {
  it("a second writer fences the first, which never writes again", async () => {
    const store = new MemoryStore();
    const s1 = withCounting(store);
    const e1 = await Engine.open(s1);
    await e1.commit(new WriteBatch().put("a", enc("1")));

    const e2 = await Engine.open(store);
    expect(e2.epoch).toBe(e1.epoch + 1);
    expect(keys(e2)).toEqual(["a"]);

    await expect(e1.commit(new WriteBatch().put("b", enc("stale")))).rejects.toBeInstanceOf(FencedError);
    expect(e1.closed).toBe(true);
    const putsAfterFence = s1.counts.puts;
    await expect(e1.commit(new WriteBatch().put("c", enc("stale")))).rejects.toBeInstanceOf(FencedError);
    await expect(e1.checkpoint()).rejects.toBeInstanceOf(FencedError);
    await expect(e1.flush()).rejects.toBeInstanceOf(FencedError);
    await e1.close();
    expect(s1.counts.puts).toBe(putsAfterFence);

    await e2.commit(new WriteBatch().put("d", enc("2")));
    await e2.close();
    const e3 = await Engine.open(store);
    expect(keys(e3)).toEqual(["a", "d"]);
    await e3.close();
  });

  it("an idle fenced writer fails its next checkpoint", async () => {
    const store = new MemoryStore();
    const e1 = await Engine.open(store, { checkpointWalObjects: 0 });
    await e1.commit(new WriteBatch().put("a", enc("1")));
    const e2 = await Engine.open(store);
    await e1.commit(new WriteBatch().put("b", enc("1")), { durable: false }).catch(() => {});
    await expect(e1.checkpoint()).rejects.toBeInstanceOf(FencedError);
    await e2.close();
  });

  it("at most one of two writers opening at once can commit", async () => {
    for (let round = 0; round < 5; round++) {
      const store = new MemoryStore();
      const opened = await Promise.allSettled([Engine.open(store), Engine.open(store)]);
      const engines = opened.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
      expect(engines.length).toBeGreaterThan(0);
      for (const r of opened) if (r.status === "rejected") expect(r.reason).toBeInstanceOf(FencedError);
      const commits = await Promise.allSettled(engines.map((e, i) => e.commit(new WriteBatch().put(`w${i}`, enc("x")))));
      expect(commits.filter((c) => c.status === "fulfilled")).toHaveLength(1);
      await Promise.all(engines.map((e) => e.close()));
    }
  });

  it("late WAL puts of a fenced writer land in the skipped range and are never replayed", async () => {
    const inner = new MemoryStore();
    const gated = new GatedStore(inner);
    const e1 = await Engine.open(gated, { flushIntervalMs: 0 });
    gated.hold = (k) => k.startsWith("wal/");
    const first = e1.commit(new WriteBatch().put("x1", enc("1")));
    await gated.waitHeld(1);
    const second = e1.commit(new WriteBatch().put("x2", enc("2")));
    await gated.waitHeld(2);
    const [k1, k2] = gated.held.map((h) => h.key);

    // The new writer sees neither object and fences at the first one's sequence.
    const e2 = await Engine.open(inner);
    gated.release(k2!); // lands past the fence, inside the skipped range
    gated.release(k1!); // collides with the fence
    await expect(first).rejects.toBeInstanceOf(FencedError);
    await expect(second).rejects.toBeInstanceOf(FencedError);

    await e2.commit(new WriteBatch().put("y", enc("3")));
    await e2.close();
    const e3 = await Engine.open(inner);
    expect(keys(e3)).toEqual(["y"]);
    const reader = await EngineReader.open(inner);
    expect(keys(reader)).toEqual(["y"]);
    await e3.close();
  });

  it("commits on a closed engine reject and change nothing", async () => {
    const e = await Engine.open(new MemoryStore());
    await e.close();
    await expect(e.commit(new WriteBatch().put("a", enc("1")))).rejects.toBeInstanceOf(ClosedError);
    expect(e.has("a")).toBe(false);
  });
});
