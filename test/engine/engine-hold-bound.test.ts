/**
 * @module Against a slow store the group commit holds a small WAL object
 * for more commits only up to a bound (a share of the put latency, never
 * under the flush window): a commit made while many wait in flight goes
 * out beside them instead of waiting for their landing; an object that
 * holds enough commits takes the last few of the release in progress
 * rather than leave them an object of their own; order and the first fatal
 * error still hold for what went out early.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { MIN_OBJECT_BATCHES, RELEASE_GROUP } from "../../runtime/engine/wal-writer.js";
import { everyPutSlow } from "../support/every-put-slow.js";
import { GatedStore } from "../support/gated-store.js";
import { until } from "../support/until.js";
import { batchesPerObject } from "../support/wal-objects.js";

const enc = (s: string) => new TextEncoder().encode(s);

/** An engine over a store that holds every WAL put until the test releases it, after one put landed (slow, so a hold is bounded). */
async function afterSlowPut(flushIntervalMs: number): Promise<{ gated: GatedStore; engine: Engine }> {
  const gated = new GatedStore(new MemoryStore());
  const engine = await Engine.open(gated, { flushIntervalMs });
  gated.hold = (k) => k.startsWith("wal/");
  const first = engine.commit(new WriteBatch().put("first", enc("v")));
  await gated.waitHeld(1);
  gated.release(gated.held[0]!.key);
  await first;
  return { gated, engine };
}

function releaseAll(gated: GatedStore): void {
  gated.hold = () => false;
  for (const h of [...gated.held]) gated.release(h.key);
}

describe("the group commit's hold against a slow store", () => {
  // Held puts land within microseconds of their release: every put counts as slow, so releases go by groups.
  everyPutSlow();

  it("sends a commit made while a wave waits in flight beside it, without waiting for the wave to land", async () => {
    // The default window: the bound is the window or a share of the (short) measured put, a few milliseconds.
    const { gated, engine } = await afterSlowPut(2);
    const wave = Array.from({ length: MIN_OBJECT_BATCHES + 10 }, (_, i) => engine.commit(new WriteBatch().put(`k/${i}`, enc("v"))));
    await gated.waitHeld(1);
    let lateDone = false;
    const late = engine.commit(new WriteBatch().put("late", enc("v"))).then(() => void (lateDone = true));
    // Unbounded, the hold kept this object until the wave's put landed, which the store never lets happen here.
    await until("the late commit's object sent while the wave's put is held", () => gated.held.length >= 2);
    const [waveKey, lateKey] = gated.held.map((h) => h.key) as [string, string];
    expect(engine.stats.walPuts).toBe(3);
    // Its own put lands first, yet it is durable only after the wave's, in sequence order.
    gated.release(lateKey);
    await gated.landed(lateKey);
    expect(lateDone).toBe(false);
    gated.release(waveKey);
    await Promise.all([...wave, late]);
    expect(await batchesPerObject(gated.inner as MemoryStore, 1)).toEqual([MIN_OBJECT_BATCHES + 10, 1]);
    await engine.close();
    const reopened = await Engine.open(gated.inner);
    expect(reopened.get("late")).toEqual(enc("v"));
    expect([...reopened.scan({ prefix: "k/" })]).toHaveLength(MIN_OBJECT_BATCHES + 10);
    await reopened.close();
  });

  it("fails a commit sent early with the wave's put when that put fails, though its own object was stored", async () => {
    const { gated, engine } = await afterSlowPut(2);
    const wave = Array.from({ length: MIN_OBJECT_BATCHES + 10 }, (_, i) => engine.commit(new WriteBatch().put(`k/${i}`, enc("v"))));
    await gated.waitHeld(1);
    const late = engine.commit(new WriteBatch().put("late", enc("v")));
    await until("the late commit's object sent while the wave's put is held", () => gated.held.length >= 2);
    const [waveKey, lateKey] = gated.held.map((h) => h.key) as [string, string];
    gated.release(lateKey);
    await gated.landed(lateKey);
    // Something else takes the wave's object name: its put fails and poisons the engine.
    await gated.inner.put(waveKey, enc("not a WAL object"));
    gated.release(waveKey);
    const errorOf = (c: Promise<void>): Promise<unknown> =>
      c.then(
        () => undefined,
        (e: unknown) => e,
      );
    const waveErrors = await Promise.all(wave.map(errorOf));
    const lateError = await errorOf(late);
    expect(waveErrors[0]).toBeInstanceOf(Error);
    for (const e of waveErrors) expect(e).toBe(waveErrors[0]);
    expect(lateError).toBe(waveErrors[0]);
    expect(engine.closed).toBe(true);
  });

  it("takes the last few commits of a release into an object that holds enough, instead of an object of their own", async () => {
    // A long window: only release steps, landings and the object size seal here (the bound is the window).
    const { gated, engine } = await afterSlowPut(10_000);
    const size = MIN_OBJECT_BATCHES + 6;
    const followUps: Promise<void>[] = [];
    const wave = Array.from({ length: size }, (_, i) =>
      engine.commit(new WriteBatch().put(`k/${i}`, enc("v"))).then(() => {
        followUps.push(engine.commit(new WriteBatch().put(`next/${i}`, enc("v"))));
      }),
    );
    await gated.waitHeld(1);
    // A second object behind it keeps enough commits waiting that the follow-ups are held for more.
    const behind = Array.from({ length: MIN_OBJECT_BATCHES + 10 }, (_, i) => engine.commit(new WriteBatch().put(`b/${i}`, enc("v"))));
    const flushed = engine.flush();
    await gated.waitHeld(2);
    gated.release(gated.held[0]!.key);
    await Promise.all(wave);
    // The follow-ups' object goes at the end of the release (groups of 25, 25 and 6), the second object still held.
    await gated.waitHeld(2);
    expect(RELEASE_GROUP * 2).toBe(MIN_OBJECT_BATCHES);
    releaseAll(gated);
    await Promise.all([...followUps, ...behind, flushed]);
    // Sealed as soon as it held two groups, the last six would have gone alone once the object behind landed.
    expect(await batchesPerObject(gated.inner as MemoryStore, 3)).toEqual([size]);
    await engine.close();
    const reopened = await Engine.open(gated.inner);
    expect([...reopened.scan({ prefix: "next/" })]).toHaveLength(size);
    await reopened.close();
  });
});
