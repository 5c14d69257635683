/**
 * @module The commits of one WAL object are released by groups once it is
 * durable: the first group's next commits leave in their own object while
 * the later groups wait their turn, commits still resolve in commit order,
 * and a group already durable resolves even when the engine is poisoned
 * before its turn.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { RELEASE_GROUP, releaseTuning } from "../../runtime/engine/wal-writer.js";
import { GatedStore } from "../support/gated-store.js";

const enc = (s: string) => new TextEncoder().encode(s);
const N = 2 * RELEASE_GROUP + 10;

describe("engine release by groups", () => {
  // Held puts land within microseconds of their release: every put counts as slow here, so releases go by groups.
  const slowPutMs = releaseTuning.slowPutMs;
  beforeAll(() => {
    releaseTuning.slowPutMs = 0;
  });
  afterAll(() => {
    releaseTuning.slowPutMs = slowPutMs;
  });

  it("releases every commit of an object at once after a fast put", async () => {
    releaseTuning.slowPutMs = Number.POSITIVE_INFINITY;
    try {
      const gated = new GatedStore(new MemoryStore());
      const engine = await Engine.open(gated, { flushIntervalMs: 10_000 });
      gated.hold = (k) => k.startsWith("wal/");
      const sentWhenRun: number[] = [];
      const followUps: Promise<void>[] = [];
      const commits = Array.from({ length: N }, (_, i) =>
        engine.commit(new WriteBatch().put(`k/${i}`, enc(String(i)))).then(() => {
          sentWhenRun.push(gated.held.length);
          followUps.push(engine.commit(new WriteBatch().put(`next/${i}`, enc(String(i)))));
        }),
      );
      await gated.waitHeld(1);
      gated.release(gated.held[0]!.key);
      await Promise.all(commits);
      // One wave: every continuation ran before any follow-up was sent, and they all left in one object.
      expect(sentWhenRun).toEqual(Array.from({ length: N }, () => 0));
      gated.hold = () => false;
      await Promise.all(followUps);
      expect(engine.stats.walPuts).toBe(2);
      await engine.close();
    } finally {
      releaseTuning.slowPutMs = 0;
    }
  });

  it("sends the first group's next commits before the later groups of the same object run", async () => {
    const gated = new GatedStore(new MemoryStore());
    // A long flush window: the follow-ups leave because a group step seals them, not because a window ended.
    const engine = await Engine.open(gated, { flushIntervalMs: 10_000 });
    gated.hold = (k) => k.startsWith("wal/");
    // Each continuation notes how many WAL puts were on their way to the store when it ran, then commits again.
    const sentWhenRun: number[] = [];
    const followUps: Promise<void>[] = [];
    const commits = Array.from({ length: N }, (_, i) =>
      engine.commit(new WriteBatch().put(`k/${i}`, enc(String(i)))).then(() => {
        sentWhenRun.push(gated.held.length);
        followUps.push(engine.commit(new WriteBatch().put(`next/${i}`, enc(String(i)))));
      }),
    );
    await gated.waitHeld(1);
    expect(engine.stats.walPuts).toBe(1);
    gated.release(gated.held[0]!.key);
    await Promise.all(commits);
    // Group 1 ran with nothing in flight; group 2 after group 1's follow-ups were sealed and sent; group 3 after group 2's.
    const expected = Array.from({ length: N }, (_, i) => Math.floor(i / RELEASE_GROUP));
    expect(sentWhenRun).toEqual(expected);
    gated.hold = () => false;
    for (const h of [...gated.held]) gated.release(h.key);
    await Promise.all(followUps);
    await engine.close();
    const reopened = await Engine.open(gated.inner);
    expect([...reopened.scan({ prefix: "next/" })]).toHaveLength(N);
    await reopened.close();
  });

  it("resolves commits in commit order across groups and objects that land out of order, and a flush after them", async () => {
    const gated = new GatedStore(new MemoryStore());
    const engine = await Engine.open(gated, { flushIntervalMs: 0 });
    gated.hold = (k) => k.startsWith("wal/");
    const order: number[] = [];
    const commitMany = (from: number) =>
      Array.from({ length: N }, (_, i) => engine.commit(new WriteBatch().put(`k/${from + i}`, enc("v"))).then(() => void order.push(from + i)));
    const first = commitMany(0);
    await gated.waitHeld(1);
    const second = commitMany(N);
    await gated.waitHeld(2);
    const [k1, k2] = gated.held.map((h) => h.key);
    gated.release(k2!);
    await gated.landed(k2!);
    expect(order).toEqual([]);
    gated.release(k1!);
    // Durable, but the first object's groups are still being released: the flush resolves after them.
    await gated.landed(k1!);
    let flushed = -1;
    const flush = engine.flush().then(() => void (flushed = order.length));
    await Promise.all([...first, ...second, flush]);
    expect(order).toEqual(Array.from({ length: 2 * N }, (_, i) => i));
    expect(flushed).toBe(2 * N);
    await engine.close();
  });

  it("releases more groups than the queue keeps before dropping its released head, in order and each once", async () => {
    const engine = await Engine.open(new MemoryStore(), { flushIntervalMs: 0 });
    const n = 1100 * RELEASE_GROUP;
    const order: number[] = [];
    const b = (i: number) => new WriteBatch().put(`k/${i % 100}`, enc("v"));
    await Promise.all(Array.from({ length: n }, (_, i) => engine.commit(b(i)).then(() => void order.push(i))));
    expect(order.length).toBe(n);
    expect(order.every((v, i) => v === i)).toBe(true);
    await engine.close();
  });

  it("resolves groups already durable when the engine is poisoned before their turn", async () => {
    const gated = new GatedStore(new MemoryStore());
    const engine = await Engine.open(gated, { flushIntervalMs: 0 });
    gated.hold = (k) => k.startsWith("wal/");
    const outcomes: string[] = [];
    const durable = Array.from({ length: N }, (_, i) =>
      engine.commit(new WriteBatch().put(`k/${i}`, enc("v"))).then(
        () => void outcomes.push("ok"),
        () => void outcomes.push("rejected"),
      ),
    );
    await gated.waitHeld(1);
    const doomed = engine.commit(new WriteBatch().put("doomed", enc("x")));
    await gated.waitHeld(2);
    const [k1, k2] = gated.held.map((h) => h.key);
    // Something else takes the second object's name: its put fails and poisons the engine.
    await gated.inner.put(k2!, enc("not a WAL object"));
    gated.release(k1!);
    gated.release(k2!);
    await expect(doomed).rejects.toThrow();
    await Promise.all(durable);
    expect(outcomes).toEqual(Array.from({ length: N }, () => "ok"));
    expect(engine.closed).toBe(true);
  });
});
