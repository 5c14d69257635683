/**
 * @module The engine's default WAL cohorts (`walCohorts` not given): over a
 * store whose puts contend, many writers' waves go in two objects while a
 * put is shorter than the wave's work and in one once puts take longer;
 * over a store whose puts overlap, in one. The measurements run on a clock
 * the test moves (`cohortTiming`): a continuation's work and a put's wall
 * time are what the test says. Over a LocalStore with 64 writers the split
 * keeps every writer's commits in order in the WAL, and all of them are
 * read back after a reopen.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Engine, LocalStore, MemoryStore, WriteBatch } from "taquba";
import { cohortTiming } from "../../runtime/engine/wal-cohorts.js";
import { releaseTuning } from "../../runtime/engine/wal-writer.js";
import { declarePutsContend } from "../../runtime/store/put-contention.js";
import { GatedStore } from "../support/gated-store.js";
import { useTempDirs } from "../support/temp-dirs.js";
import { batchesPerObject, keysPerObject } from "../support/wal-objects.js";

const enc = (s: string) => new TextEncoder().encode(s);
const tempDir = useTempDirs("taquba-wal-cohorts-chosen-");

let now = 0;
const realNow = cohortTiming.now;
const slowPutMs = releaseTuning.slowPutMs;
beforeEach(() => {
  now = 0;
  cohortTiming.now = () => now;
  // No put counts as slow, however long the test held it: a store whose puts overlap releases at once too.
  releaseTuning.slowPutMs = Number.POSITIVE_INFINITY;
});
afterEach(() => {
  cohortTiming.now = realNow;
  releaseTuning.slowPutMs = slowPutMs;
});

/** `writers` writers, each committing `rounds` times one after another; each continuation works `workMs` first. */
function writers(engine: Engine, count: number, rounds: number, workMs: number): Promise<void[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, w) => {
      for (let i = 0; i < rounds; i++) {
        await engine.commit(new WriteBatch().put(`w/${w}/${String(i).padStart(3, "0")}`, enc(String(i))).put(`last/${w}`, enc(String(i))));
        now += workMs;
      }
    }),
  );
}

/** Releases the store's held WAL puts one at a time, each after `putMs`, until `done` settles. */
async function putsTaking(gated: GatedStore, putMs: number, done: Promise<unknown>): Promise<void> {
  let finished = false;
  void done.finally(() => (finished = true));
  while (!finished) {
    await Promise.race([gated.waitHeld(1), done]);
    if (gated.held.length === 0) continue;
    now += putMs;
    gated.release(gated.held[0]!.key);
  }
}

async function run(contend: boolean, putMs: number, workMs: number): Promise<number[]> {
  const gated = new GatedStore(new MemoryStore());
  if (contend) declarePutsContend(gated);
  // A long window: objects go at a landing, a cohort's share or the end of a turn, never because a window ended.
  const engine = await Engine.open(gated, { flushIntervalMs: 10_000 });
  gated.hold = (k) => k.startsWith("wal/");
  const done = writers(engine, 60, 12, workMs);
  await putsTaking(gated, putMs, done);
  await done;
  await engine.close();
  const reopened = await Engine.open(gated.inner);
  expect([...reopened.scan({ prefix: "w/" })]).toHaveLength(60 * 12);
  await reopened.close();
  return batchesPerObject(gated.inner);
}

describe("the engine's default WAL cohorts", () => {
  it("splits each wave in two over a store whose puts contend while a put is shorter than the wave's work", async () => {
    // 1 ms puts against 60 x 0.1 ms of work.
    const objects = await run(true, 1, 0.1);
    expect(objects.slice(1).every((n) => n <= 31)).toBe(true);
    expect(objects.filter((n) => n >= 29 && n <= 31).length).toBeGreaterThanOrEqual(20);
  });

  it("goes to one object per wave once the puts take longer than the wave's work", async () => {
    // 20 ms puts against 6 ms of work: after the first puts measured in two cohorts, lock step, the halves one again.
    const objects = await run(true, 20, 0.1);
    expect(objects.slice(-6)).toEqual([60, 60, 60, 60, 60, 60]);
    expect(objects.length).toBeLessThan(18);
  });

  it("keeps each wave in one object over a store whose puts overlap", async () => {
    const objects = await run(false, 1, 0.1);
    expect(objects).toEqual(Array.from({ length: 12 }, () => 60));
  });

  it("over a LocalStore with 64 writers, splits the waves and keeps each writer's commits in order and durable", async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const engine = await Engine.open(store);
    // A put's wall time as the clock sees it is nothing; each continuation works 0.1 ms.
    await writers(engine, 64, 10, 0.1);
    await engine.close();
    const objects = await keysPerObject(store);
    const sizes = objects.map((keys) => keys.length / 2);
    // Split: objects of about half the writers, none of all 64 after the first waves.
    expect(sizes.filter((n) => n >= 24 && n <= 40).length).toBeGreaterThanOrEqual(8);
    // Each writer's commits in the WAL in the order it made them, each once.
    const seen = new Map<string, number>();
    for (const keys of objects) {
      for (const key of keys) {
        const m = /^w\/(\d+)\/(\d+)$/.exec(key);
        if (m === null) continue;
        const i = Number(m[2]);
        expect(i).toBe((seen.get(m[1]!) ?? -1) + 1);
        seen.set(m[1]!, i);
      }
    }
    expect(seen.size).toBe(64);
    const reopened = await Engine.open(new LocalStore(dir));
    expect([...reopened.scan({ prefix: "w/" })]).toHaveLength(640);
    for (let w = 0; w < 64; w++) expect(new TextDecoder().decode(reopened.get(`last/${w}`)!)).toBe("9");
    await reopened.close();
  });
});
