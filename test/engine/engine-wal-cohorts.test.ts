/**
 * @module `walCohorts`: with nothing on its way to the store, the open WAL
 * object is sealed as soon as it holds its share of the last wave, so its
 * put starts while the rest of the wave still runs; the split keeps the
 * WAL's order (a later cohort's object that lands first waits for the
 * earlier one), a failed early put rejects what it and later objects hold,
 * small waves and one committer at a time are not split, and 1 keeps the
 * wave in one object.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, ValidationError, WriteBatch } from "taquba";
import { MAX_WAL_COHORTS, MIN_COHORT_COMMITS } from "../../runtime/engine/wal-cohorts.js";
import { declarePutsContend } from "../../runtime/store/put-contention.js";
import { GatedStore } from "../support/gated-store.js";
import { batchesPerObject } from "../support/wal-objects.js";

const enc = (s: string) => new TextEncoder().encode(s);

/** An engine over a store that holds every WAL put until released and, like a local disk, releases a stored object's commits at once. */
async function holdingWal(walCohorts?: number): Promise<{ gated: GatedStore; engine: Engine }> {
  const gated = new GatedStore(new MemoryStore());
  declarePutsContend(gated);
  // A long window: objects go because a landing or the cohort's share sealed them, never because a window ended.
  const engine = await Engine.open(gated, walCohorts === undefined ? { flushIntervalMs: 10_000 } : { flushIntervalMs: 10_000, walCohorts });
  gated.hold = (k) => k.startsWith("wal/");
  return { gated, engine };
}

/**
 * `size` commits in one held object; once released, each continuation notes how many WAL puts were held when it
 * ran and commits again. Resolves when the wave ran, with the follow-ups still waiting.
 */
async function releasedWave(gated: GatedStore, engine: Engine, size: number): Promise<{ sentWhenRun: number[]; followUps: Promise<void>[] }> {
  const sentWhenRun: number[] = [];
  const followUps: Promise<void>[] = [];
  const commits = Array.from({ length: size }, (_, i) =>
    engine.commit(new WriteBatch().put(`k/${i}`, enc(String(i)))).then(() => {
      sentWhenRun.push(gated.held.length);
      followUps.push(engine.commit(new WriteBatch().put(`next/${i}`, enc(String(i)))));
    }),
  );
  await gated.waitHeld(1);
  gated.release(gated.held[0]!.key);
  await Promise.all(commits);
  return { sentWhenRun, followUps };
}

async function releaseAll(gated: GatedStore): Promise<void> {
  gated.hold = () => false;
  for (const h of [...gated.held]) gated.release(h.key);
}

describe("WAL cohorts", () => {
  it("with walCohorts 2 sends the first half of a released wave's next commits while the other half still runs", async () => {
    const { gated, engine } = await holdingWal(2);
    const { sentWhenRun, followUps } = await releasedWave(gated, engine, 60);
    // The first 30 follow-ups went before the last continuations ran; the rest gather behind that put.
    expect(sentWhenRun.slice(0, 30)).toEqual(Array.from({ length: 30 }, () => 0));
    expect(sentWhenRun.at(-1)).toBe(1);
    expect(gated.held).toHaveLength(1);
    await releaseAll(gated);
    await Promise.all(followUps);
    expect(await batchesPerObject(gated.inner as MemoryStore)).toEqual([60, 30, 30]);
    await engine.close();
    const reopened = await Engine.open(gated.inner);
    expect([...reopened.scan({ prefix: "next/" })]).toHaveLength(60);
    await reopened.close();
  });

  it("keeps the wave in one object by default (walCohorts 1)", async () => {
    const { gated, engine } = await holdingWal();
    const { sentWhenRun, followUps } = await releasedWave(gated, engine, 60);
    expect(sentWhenRun).toEqual(Array.from({ length: 60 }, () => 0));
    await releaseAll(gated);
    await Promise.all(followUps);
    expect(await batchesPerObject(gated.inner as MemoryStore)).toEqual([60, 60]);
    await engine.close();
  });

  it("splits into more cohorts with more objects on their way", async () => {
    const { gated, engine } = await holdingWal(3);
    const { followUps } = await releasedWave(gated, engine, 60);
    await releaseAll(gated);
    await Promise.all(followUps);
    expect(await batchesPerObject(gated.inner as MemoryStore)).toEqual([60, 20, 20, 20]);
    await engine.close();
  });

  it("does not split a wave whose share would be under the smallest cohort", async () => {
    const { gated, engine } = await holdingWal(2);
    const size = 2 * MIN_COHORT_COMMITS - 2;
    const { followUps } = await releasedWave(gated, engine, size);
    await releaseAll(gated);
    await Promise.all(followUps);
    expect(await batchesPerObject(gated.inner as MemoryStore)).toEqual([size, size]);
    await engine.close();
  });

  it("sends one commit per put to one committer at a time", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, { flushIntervalMs: 10_000, walCohorts: 2 });
    for (let i = 0; i < 40; i++) await engine.commit(new WriteBatch().put(`k/${i}`, enc("v")));
    // With a window of 10 s, any commit that waited for company would have taken that long.
    expect(await batchesPerObject(store)).toEqual(Array.from({ length: 40 }, () => 1));
    await engine.close();
  });

  it("resolves a later cohort's commits only once the earlier cohort's object is stored", async () => {
    const { gated, engine } = await holdingWal(2);
    const resolved: string[] = [];
    const followUps: Promise<void>[] = [];
    const commits = Array.from({ length: 60 }, (_, i) =>
      engine.commit(new WriteBatch().put(`k/${i}`, enc("v"))).then(() => {
        followUps.push(engine.commit(new WriteBatch().put(`next/${i}`, enc("v"))).then(() => void resolved.push(`next/${i}`)));
      }),
    );
    await gated.waitHeld(1);
    gated.release(gated.held[0]!.key);
    await Promise.all(commits);
    // The first cohort's object is held; a flush sends the second beside it, and the test lets that one land first.
    const [first] = gated.held.map((h) => h.key);
    const flushed = engine.flush();
    await gated.waitHeld(2);
    const second = gated.held[1]!.key;
    gated.release(second);
    await gated.landed(second);
    expect(resolved).toEqual([]);
    gated.release(first!);
    await Promise.all(followUps);
    await flushed;
    expect(resolved).toEqual(Array.from({ length: 60 }, (_, i) => `next/${i}`));
    await engine.close();
  });

  it("rejects the commits of an early-sealed object whose put fails, and of every object after it", async () => {
    const { gated, engine } = await holdingWal(2);
    const outcomes: Promise<unknown>[] = [];
    const commits = Array.from({ length: 60 }, (_, i) =>
      engine.commit(new WriteBatch().put(`k/${i}`, enc("v"))).then(() => {
        outcomes.push(
          engine.commit(new WriteBatch().put(`next/${i}`, enc("v"))).then(
            () => "stored",
            (e: unknown) => e,
          ),
        );
      }),
    );
    await gated.waitHeld(1);
    gated.release(gated.held[0]!.key);
    await Promise.all(commits);
    await gated.waitHeld(1);
    // Something else takes the early object's name: its put fails and poisons the engine.
    const early = gated.held[0]!.key;
    await gated.inner.put(early, enc("not a WAL object"));
    gated.release(early);
    const results = await Promise.all(outcomes);
    expect(results.filter((r) => r === "stored")).toEqual([]);
    expect(engine.closed).toBe(true);
    // Nothing after the failed object was sent.
    expect(engine.stats.walPuts).toBe(2);
    const reopened = await Engine.open(gated.inner).catch((e: unknown) => e);
    if (reopened instanceof Engine) {
      expect([...reopened.scan({ prefix: "next/" })]).toEqual([]);
      await reopened.close();
    }
  });

  for (const contend of [true, false]) {
    it(`${contend ? "gathers behind the first cohort's put until it lands" : "sends beside the first cohort's put when its window ends"} over a store whose puts ${contend ? "contend" : "overlap"}`, async () => {
      const gated = new GatedStore(new MemoryStore());
      if (contend) declarePutsContend(gated);
      // The flush window runs on real timers: 1 ms here, against a wait of 100 ms below.
      const engine = await Engine.open(gated, { flushIntervalMs: 1, walCohorts: 2 });
      gated.hold = (k) => k.startsWith("wal/");
      const { followUps } = await releasedWave(gated, engine, 60);
      if (contend) {
        await new Promise((r) => setTimeout(r, 100));
        expect(gated.held).toHaveLength(1);
      } else {
        await gated.waitHeld(2);
      }
      await releaseAll(gated);
      await Promise.all(followUps);
      expect(await batchesPerObject(gated.inner as MemoryStore)).toEqual([60, 30, 30]);
      await engine.close();
    });
  }

  it.each([
    [0, /walCohorts must be .*>= 1/],
    [MAX_WAL_COHORTS + 1, new RegExp(`walCohorts must be .*<= ${MAX_WAL_COHORTS}`)],
    [1.5, /walCohorts must be a whole number/],
    [Number.NaN, /walCohorts/],
    [Number.POSITIVE_INFINITY, /walCohorts/],
    [1e30, /walCohorts/],
    ["2", /walCohorts/],
  ])("refuses walCohorts %s before any store request", async (value, message) => {
    const gated = new GatedStore(new MemoryStore(), () => true);
    const opened = Engine.open(gated, { walCohorts: value as number });
    await expect(opened).rejects.toBeInstanceOf(ValidationError);
    await expect(opened).rejects.toThrow(message);
    expect(gated.held).toEqual([]);
  });
});
