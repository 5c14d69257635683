/**
 * @module The changed-keys map's byte limit (changed-keys.ts
 * `changedKeysLimit`, its offsets are 32-bit), lowered here so a few
 * kilobytes reach it: a batch that would take the engine's delta past half
 * of it makes the engine stop recording changes before the WAL append (the
 * next checkpoint rewrites the state), so no commit fails after its batch
 * went to the WAL, and a reopen whose WAL replay holds more keys than that
 * opens as well, both when the load replays them and when the opening
 * writer replays what the previous writer landed after its load.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { ChangedKeys, changedKeysLimit } from "../../runtime/engine/changed-keys.js";
import { GatedStore } from "../support/gated-store.js";

const LIMIT = 16 * 1024;
const manual = { checkpointWalObjects: 0, checkpointWalBytes: 0, flushIntervalMs: 0 };
const bytes = (n: number) => new Uint8Array([n & 0xff]);

let saved = 0;
beforeEach(() => {
  saved = changedKeysLimit.bytes;
  changedKeysLimit.bytes = LIMIT;
});
afterEach(() => {
  changedKeysLimit.bytes = saved;
});

/** A batch of `n` puts of distinct 100-byte keys from `from`. */
function batchOf(from: number, n: number): WriteBatch {
  const b = new WriteBatch();
  for (let i = from; i < from + n; i++) b.put(`k/${String(i).padStart(97, "0")}`, bytes(i));
  return b;
}

function contents(engine: Engine): [string, number][] {
  return [...engine.scan()].map(([k, v]) => [k, v[0]!]);
}

describe("ChangedKeys at its byte limit", () => {
  it("refuses a key past the limit, and tells the engine in time (half of it, three bytes per UTF-16 unit)", () => {
    const keys = new ChangedKeys();
    const key = "x".repeat(1000);
    for (let i = 0; i < 16; i++) keys.set(`${key}${String(i).padStart(24, "0")}`, null);
    expect(keys.keyBytes).toBe(16 * 1024);
    expect(() => keys.set("one more", null)).toThrow(RangeError);
    expect(keys.size).toBe(16);
    const empty = new ChangedKeys();
    expect(empty.hasRoomFor([{ kind: "delete", key: "é".repeat(LIMIT / 6) }])).toBe(true);
    expect(empty.hasRoomFor([{ kind: "delete", key: "é".repeat(LIMIT / 6 + 1) }])).toBe(false);
  });
});

describe("an engine whose changed keys outgrow the map between checkpoints", () => {
  it("acknowledges every commit, checkpoints and reopens with all of them", async () => {
    const store = new MemoryStore();
    const engine = await Engine.open(store, manual);
    await engine.commit(batchOf(0, 10));
    await engine.checkpoint();
    // 400 keys of 100 bytes since that checkpoint: 40 kB, past the limit, in batches of 20.
    for (let from = 10; from < 410; from += 20) await engine.commit(batchOf(from, 20));
    // One batch larger than half the limit on its own.
    await engine.commit(batchOf(1000, 100));
    const acked = contents(engine);
    expect(acked).toHaveLength(510);
    const before = engine.stats.compactions;
    await engine.checkpoint();
    // The delta was dropped: the checkpoint rewrote the state.
    expect(engine.stats.compactions).toBe(before + 1);
    await engine.close();
    const reopened = await Engine.open(store, manual);
    expect(contents(reopened)).toEqual(acked);
    await reopened.close();
  });

  it("reopens when the WAL since the last checkpoint holds more changed keys than the map takes", async () => {
    const store = new MemoryStore();
    changedKeysLimit.bytes = saved;
    const engine = await Engine.open(store, manual);
    for (let from = 0; from < 400; from += 20) await engine.commit(batchOf(from, 20));
    const acked = contents(engine);
    await engine.close();
    changedKeysLimit.bytes = LIMIT;
    const reopened = await Engine.open(store, manual);
    expect(contents(reopened)).toEqual(acked);
    await reopened.commit(batchOf(500, 1));
    await reopened.checkpoint();
    await reopened.close();
    const again = await Engine.open(store, manual);
    expect(contents(again)).toHaveLength(401);
    await again.close();
  });

  it("opens when the WAL the previous writer lands after the load (replayed by the opening writer) holds more changed keys than the map takes", async () => {
    const store = new MemoryStore();
    const old = await Engine.open(store, manual);
    await old.commit(batchOf(0, 10));
    await old.checkpoint();
    // The opening writer has loaded the state; its claim is held while the old writer commits on.
    const gated = new GatedStore(store, (key) => key.startsWith("manifest/"));
    const opening = Engine.open(gated, manual);
    await gated.waitHeld(1);
    // 400 keys of 100 bytes: 40 kB, past the limit, none of them seen by the load.
    for (let from = 10; from < 410; from += 20) await old.commit(batchOf(from, 20));
    const acked = contents(old);
    gated.hold = () => false;
    gated.release(gated.held[0]!.key);
    const opened = await opening;
    await old.close();
    expect(contents(opened)).toEqual(acked);
    const before = opened.stats.compactions;
    await opened.commit(batchOf(500, 1));
    await opened.checkpoint();
    // The delta was dropped while replaying: the checkpoint rewrote the state.
    expect(opened.stats.compactions).toBe(before + 1);
    await opened.close();
    const again = await Engine.open(store, manual);
    expect(contents(again)).toHaveLength(411);
    await again.close();
  });
});
