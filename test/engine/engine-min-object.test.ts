/**
 * @module While many commits wait for a slow store, the WAL writer seals
 * objects of at least `MIN_OBJECT_BATCHES` commits: the follow-ups of a
 * released wave leave in objects of two groups instead of one each; a
 * smaller object goes once fewer commits wait (no timer needed); a window of
 * 0 holds nothing; a failed put rejects what was held behind it.
 */
import { describe, expect, it } from "vitest";
import { Engine, FencedError, MemoryStore, WriteBatch } from "taquba";
import { MIN_OBJECT_BATCHES, RELEASE_GROUP } from "../../runtime/engine/wal-writer.js";
import { everyPutSlow } from "../support/every-put-slow.js";
import { GatedStore } from "../support/gated-store.js";
import { batchesPerObject } from "../support/wal-objects.js";

const enc = (s: string) => new TextEncoder().encode(s);

/** An engine over a store that holds every WAL put until the test releases it. */
async function holdingWal(flushIntervalMs: number): Promise<{ gated: GatedStore; engine: Engine }> {
  const gated = new GatedStore(new MemoryStore());
  const engine = await Engine.open(gated, { flushIntervalMs });
  gated.hold = (k) => k.startsWith("wal/");
  return { gated, engine };
}

describe("engine WAL objects while many commits wait", () => {
  // Held puts land within microseconds of their release: every put counts as slow, so releases go by groups.
  everyPutSlow();

  it("seals a released wave's follow-ups in objects of two groups, not one each", async () => {
    expect(MIN_OBJECT_BATCHES).toBe(2 * RELEASE_GROUP);
    // A long window: only the release steps and the object size seal here.
    const { gated, engine } = await holdingWal(10_000);
    const wave = 4 * RELEASE_GROUP;
    const followUps: Promise<void>[] = [];
    const commits = Array.from({ length: wave }, (_, i) =>
      engine.commit(new WriteBatch().put(`k/${i}`, enc("v"))).then(() => {
        followUps.push(engine.commit(new WriteBatch().put(`next/${i}`, enc("v"))));
      }),
    );
    await gated.waitHeld(1);
    gated.release(gated.held[0]!.key);
    await Promise.all(commits);
    await gated.waitHeld(2);
    // Each group's follow-ups alone would have left in four objects of 25.
    expect(engine.stats.walPuts).toBe(3);
    gated.hold = () => false;
    for (const h of [...gated.held]) gated.release(h.key);
    await Promise.all(followUps);
    expect(await batchesPerObject(gated.inner as MemoryStore, 1)).toEqual([MIN_OBJECT_BATCHES, MIN_OBJECT_BATCHES]);
    await engine.close();
    const reopened = await Engine.open(gated.inner);
    expect([...reopened.scan({ prefix: "next/" })]).toHaveLength(wave);
    await reopened.close();
  });

  it("sends a small object once fewer than two groups' commits wait, without waiting for its window", async () => {
    const { gated, engine } = await holdingWal(10_000);
    const wave = MIN_OBJECT_BATCHES + 10;
    const order: string[] = [];
    const commits = Array.from({ length: wave }, (_, i) => engine.commit(new WriteBatch().put(`k/${i}`, enc("v"))).then(() => void order.push(`k/${i}`)));
    await gated.waitHeld(1);
    const late = engine.commit(new WriteBatch().put("late", enc("v"))).then(() => void order.push("late"));
    gated.release(gated.held[0]!.key);
    // Sixty commits released, none committing again: after the first group fewer than fifty wait and the held one goes.
    await gated.waitHeld(1);
    gated.release(gated.held[0]!.key);
    await Promise.all([...commits, late]);
    expect(await batchesPerObject(gated.inner as MemoryStore, 0)).toEqual([wave, 1]);
    expect(order.at(-1)).toBe("late");
    expect(order).toHaveLength(wave + 1);
    await engine.close();
  });

  it("rejects a held object's commits, without waiting, when the put it waits behind fails", async () => {
    const { gated, engine } = await holdingWal(10_000);
    const wave = Array.from({ length: MIN_OBJECT_BATCHES + 10 }, (_, i) => engine.commit(new WriteBatch().put(`k/${i}`, enc("v"))));
    await gated.waitHeld(1);
    const late = engine.commit(new WriteBatch().put("late", enc("v")));
    // Something else takes the held object's name: its put fails and poisons the engine.
    const k1 = gated.held[0]!.key;
    await gated.inner.put(k1, enc("not a WAL object"));
    gated.release(k1);
    await expect(late).rejects.toThrow();
    for (const c of wave) await expect(c).rejects.toThrow();
    expect(engine.stats.walPuts).toBe(1);
    expect(engine.closed).toBe(true);
  });

  for (const how of ["close", "flush"] as const) {
    it(`sends a held object at once on ${how}, and every commit in it is durable`, async () => {
      const { gated, engine } = await holdingWal(10_000);
      const wave = Array.from({ length: MIN_OBJECT_BATCHES + 10 }, (_, i) => engine.commit(new WriteBatch().put(`k/${i}`, enc("v"))));
      await gated.waitHeld(1);
      // Held behind the wave's put: no landing, no release step and no window end comes to send it.
      const late = engine.commit(new WriteBatch().put("late", enc("v")));
      const ended = how === "close" ? engine.close() : engine.flush();
      await gated.waitHeld(2);
      expect(gated.held.map((h) => h.key)).toHaveLength(2);
      gated.hold = () => false;
      for (const h of [...gated.held]) gated.release(h.key);
      await Promise.all([...wave, late, ended]);
      expect(await batchesPerObject(gated.inner as MemoryStore, 0)).toEqual([MIN_OBJECT_BATCHES + 10, 1]);
      if (how === "flush") await engine.close();
      const reopened = await Engine.open(gated.inner);
      expect(reopened.get("late")).toEqual(enc("v"));
      expect([...reopened.scan({ prefix: "k/" })]).toHaveLength(MIN_OBJECT_BATCHES + 10);
      await reopened.close();
    });
  }

  it("a newer writer opening while an object is held fences this one: the held commits reject, the newer writer has every commit that resolved", async () => {
    const { gated, engine } = await holdingWal(10_000);
    const wave = Array.from({ length: MIN_OBJECT_BATCHES + 10 }, (_, i) =>
      engine.commit(new WriteBatch().put(`k/${i}`, enc("v"))).then(
        () => true,
        () => false,
      ),
    );
    await gated.waitHeld(1);
    const late = engine.commit(new WriteBatch().put("late", enc("v"))).then(
      () => true,
      (e: unknown) => e,
    );
    const newer = await Engine.open(gated.inner);
    gated.hold = () => false;
    for (const h of [...gated.held]) gated.release(h.key);
    const lateResult = await late;
    const waveResults = await Promise.all(wave);
    await engine.close();
    // Every commit that resolved is in the store once the newer writer is gone too.
    await newer.close();
    const reopened = await Engine.open(gated.inner);
    // The held object goes out under the fenced epoch once the wave lands: refused as fenced, never durable.
    expect(lateResult).toBeInstanceOf(FencedError);
    expect(reopened.get("late")).toBeUndefined();
    for (const [i, ok] of waveResults.entries()) if (ok) expect(reopened.get(`k/${i}`), `k/${i}`).toEqual(enc("v"));
    await reopened.close();
  });

  it("holds nothing with a window of 0", async () => {
    const { gated, engine } = await holdingWal(0);
    const commits = Array.from({ length: MIN_OBJECT_BATCHES + 10 }, (_, i) => engine.commit(new WriteBatch().put(`k/${i}`, enc("v"))));
    await gated.waitHeld(1);
    const late = engine.commit(new WriteBatch().put("late", enc("v")));
    // Sent beside the object still held, as before.
    await gated.waitHeld(2);
    gated.hold = () => false;
    for (const h of [...gated.held]) gated.release(h.key);
    await Promise.all([...commits, late]);
    expect(await batchesPerObject(gated.inner as MemoryStore, 0)).toEqual([MIN_OBJECT_BATCHES + 10, 1]);
    await engine.close();
  });
});
