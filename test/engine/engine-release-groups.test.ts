/**
 * @module The commits of one WAL object are released by groups once it is
 * durable: the first group's next commits leave in their own object while
 * the later groups wait their turn, commits still resolve in commit order,
 * and a group already durable resolves even when the engine is poisoned
 * before its turn.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { RELEASE_GROUP, releaseTuning } from "../../runtime/engine/wal-writer.js";
import { everyPutSlow } from "../support/every-put-slow.js";
import { GatedStore } from "../support/gated-store.js";
import { WAVE, heldWave } from "../support/held-wave.js";

const enc = (s: string) => new TextEncoder().encode(s);
const N = WAVE;

/** An engine over a store that holds every WAL put until the test releases it. */
async function holdingWal(flushIntervalMs: number, walCohorts?: number): Promise<{ gated: GatedStore; engine: Engine }> {
  const gated = new GatedStore(new MemoryStore());
  const engine = await Engine.open(gated, walCohorts === undefined ? { flushIntervalMs } : { flushIntervalMs, walCohorts });
  gated.hold = (k) => k.startsWith("wal/");
  return { gated, engine };
}

/** The commits `first` makes, held in one WAL object, then those `second` makes, held in the next: both objects' keys, in put order. */
async function twoHeldObjects(
  gated: GatedStore,
  first: () => Promise<void>[],
  second: () => Promise<void>[],
): Promise<{ firsts: Promise<void>[]; seconds: Promise<void>[]; k1: string; k2: string }> {
  const firsts = first();
  await gated.waitHeld(1);
  const seconds = second();
  await gated.waitHeld(2);
  const [k1, k2] = gated.held.map((h) => h.key);
  return { firsts, seconds, k1: k1!, k2: k2! };
}

describe("engine release by groups", () => {
  // Held puts land within microseconds of their release: every put counts as slow here, so releases go by groups.
  everyPutSlow();

  it("releases every commit of an object at once after a fast put", async () => {
    releaseTuning.slowPutMs = Number.POSITIVE_INFINITY;
    try {
      // One cohort: the wave's follow-ups stay together (engine-wal-cohorts.test.ts splits them).
      const { gated, engine } = await holdingWal(10_000, 1);
      const { commits, sentWhenRun, followUps } = await heldWave(engine, gated);
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
    // A long flush window: the follow-ups leave because a group step seals them, not because a window ended.
    const { gated, engine } = await holdingWal(10_000);
    const { commits, sentWhenRun, followUps } = await heldWave(engine, gated);
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
    const { gated, engine } = await holdingWal(0);
    const order: number[] = [];
    const commitMany = (from: number) =>
      Array.from({ length: N }, (_, i) => engine.commit(new WriteBatch().put(`k/${from + i}`, enc("v"))).then(() => void order.push(from + i)));
    const { firsts, seconds, k1, k2 } = await twoHeldObjects(
      gated,
      () => commitMany(0),
      () => commitMany(N),
    );
    gated.release(k2);
    await gated.landed(k2);
    expect(order).toEqual([]);
    gated.release(k1);
    // Durable, but the first object's groups are still being released: the flush resolves after them.
    await gated.landed(k1);
    let flushed = -1;
    const flush = engine.flush().then(() => void (flushed = order.length));
    await Promise.all([...firsts, ...seconds, flush]);
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
    const { gated, engine } = await holdingWal(0);
    const outcomes: string[] = [];
    const {
      firsts: durable,
      seconds: [doomed],
      k1,
      k2,
    } = await twoHeldObjects(
      gated,
      () =>
        Array.from({ length: N }, (_, i) =>
          engine.commit(new WriteBatch().put(`k/${i}`, enc("v"))).then(
            () => void outcomes.push("ok"),
            () => void outcomes.push("rejected"),
          ),
        ),
      () => [engine.commit(new WriteBatch().put("doomed", enc("x")))],
    );
    // Something else takes the second object's name: its put fails and poisons the engine.
    await gated.inner.put(k2, enc("not a WAL object"));
    gated.release(k1);
    gated.release(k2);
    await expect(doomed).rejects.toThrow();
    await Promise.all(durable);
    expect(outcomes).toEqual(Array.from({ length: N }, () => "ok"));
    expect(engine.closed).toBe(true);
  });
});
