/**
 * @module Leader/follower group commit: an idle engine writes a commit at the
 * end of the event-loop turn instead of waiting out the flush window, and
 * commits made while a WAL put is in flight share the next object, sent as
 * soon as that put lands. The flush window here is an hour, so waiting it
 * out would time the test out.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch } from "taquba";
import { GatedStore } from "../support/gated-store.js";

const enc = (s: string) => new TextEncoder().encode(s);
const HOUR = 3_600_000;

describe("engine group commit: leader/follower", () => {
  it("an idle engine does not wait for the flush window", async () => {
    const engine = await Engine.open(new MemoryStore(), { flushIntervalMs: HOUR });
    await engine.commit(new WriteBatch().put("a", enc("1")));
    await engine.commit(new WriteBatch().put("b", enc("2")));
    expect(engine.stats.walPuts).toBe(2);
    await engine.close();
  });

  it("commits made in one turn share the leader's object", async () => {
    const engine = await Engine.open(new MemoryStore(), { flushIntervalMs: HOUR });
    await Promise.all(Array.from({ length: 50 }, (_, i) => engine.commit(new WriteBatch().put(`k/${i}`, enc(String(i))))));
    expect(engine.stats.walPuts).toBe(1);
    expect(engine.stats.walBatches).toBe(50);
    await engine.close();
  });

  it("followers gather while the leader's put is in flight and go out when it lands", async () => {
    const gated = new GatedStore(new MemoryStore());
    const engine = await Engine.open(gated, { flushIntervalMs: HOUR });
    gated.hold = (k) => k.startsWith("wal/");
    const leader = engine.commit(new WriteBatch().put("leader", enc("1")));
    await gated.waitHeld(1);
    // In flight: these wait for the leader instead of an hour-long window.
    const followers = Array.from({ length: 10 }, (_, i) => engine.commit(new WriteBatch().put(`f/${i}`, enc(String(i)))));
    await new Promise((r) => setImmediate(r));
    expect(gated.held).toHaveLength(1);
    gated.release(gated.held[0]!.key);
    await leader;
    await gated.waitHeld(1);
    expect(gated.held).toHaveLength(1);
    gated.hold = () => false;
    gated.release(gated.held[0]!.key);
    await Promise.all(followers);
    expect(engine.stats.walPuts).toBe(2);
    expect(engine.stats.walBatches).toBe(11);
    await engine.close();
  });
});
