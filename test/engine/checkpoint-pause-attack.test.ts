/**
 * @module Attacks on the pause after a failed automatic checkpoint and the
 * look for a due one at its end: a close during the pause (no timer left,
 * nothing started or reported after it), a clock set back during the pause
 * and then forward, writes during the pause (one look, not one per write),
 * and failures that keep coming (the pause doubles each time; exactly one
 * checkpoint once the store recovers). On a MockClock, with segment puts
 * that fail until told otherwise.
 */
import { describe, expect, it } from "vitest";
import { Engine, type EngineOptions, MemoryStore, MockClock, WriteBatch } from "taquba";
import { InjectedFaultError } from "taquba/testing";
import { failWhen } from "../support/failing-store.js";
import { turns } from "../support/turns.js";

const enc = (s: string) => new TextEncoder().encode(s);
const opts: EngineOptions = {
  checkpointWalObjects: 2,
  checkpointWalBytes: 0,
  checkpointBacklog: 0,
  retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 },
};

async function commitEach(engine: Engine, keys: string[]): Promise<void> {
  for (const k of keys) await engine.commit(new WriteBatch().put(k, enc(k)));
}

async function turnsUntil(cond: () => boolean, limit = 5000): Promise<void> {
  for (let i = 0; i < limit && !cond(); i++) await turns(1);
}

async function failingEngine() {
  const state = { failing: true, segmentPuts: 0 };
  const inner = new MemoryStore();
  const store = failWhen(inner, (call, key) => {
    if (call !== "put" || !key.startsWith("seg/")) return undefined;
    state.segmentPuts++;
    return state.failing ? new InjectedFaultError("put", key, false) : undefined;
  });
  const clock = new MockClock(1_000_000);
  const failures: unknown[] = [];
  const engine = await Engine.open(store, { ...opts, clock, onBackgroundError: (err) => failures.push(err) });
  await commitEach(engine, ["a/1", "a/2"]);
  await turnsUntil(() => failures.length > 0);
  expect(failures.length, "the first checkpoint failed").toBe(1);
  return { state, inner, clock, failures, engine };
}

describe("the pause after a failed automatic checkpoint (attack)", () => {
  it("a close during the pause leaves no timer, and nothing starts or is reported after it", async () => {
    const { state, clock, failures, engine } = await failingEngine();
    await commitEach(engine, ["a/3"]);
    expect(clock.pendingTimers, "the look at the pause's end is armed").toBeGreaterThan(0);
    await engine.close();
    expect(clock.pendingTimers, "close stopped it").toBe(0);
    const puts = state.segmentPuts;
    state.failing = false;
    clock.advance(60_000);
    await turns(20);
    expect(state.segmentPuts).toBe(puts);
    expect(engine.stats.checkpoints).toBe(0);
    expect(failures.length).toBe(1);
  });

  it("a clock set back during the pause, then writes: the pause counts again from the new time, and its end checkpoints once", async () => {
    const { state, inner, clock, failures, engine } = await failingEngine();
    state.failing = false;
    clock.advance(500);
    await turns();
    clock.set(clock.now() - 10_000);
    // Writes while the clock stands before the pause: the first restarts it from now, none arms a second look.
    await commitEach(engine, ["a/3", "a/4", "a/5"]);
    await turns(10);
    expect(engine.stats.checkpoints, "paused").toBe(0);
    expect(clock.pendingTimers, "one look armed").toBe(1);
    clock.advance(999);
    await turns(10);
    expect(engine.stats.checkpoints, "still paused").toBe(0);
    clock.advance(1);
    await turnsUntil(() => engine.stats.checkpoints > 0);
    expect(engine.stats.checkpoints).toBe(1);
    expect(engine.stats.walObjectsSinceCheckpoint).toBe(0);
    expect(failures.length).toBe(1);
    await turns(10);
    expect(clock.pendingTimers).toBe(0);
    await engine.close();
    const reopened = await Engine.open(inner);
    expect([...reopened.scan({ prefix: "a/" })].map(([k]) => k)).toEqual(["a/1", "a/2", "a/3", "a/4", "a/5"]);
    await reopened.close();
  });

  it("a clock set back during the pause with no write after it: the look still ends in a checkpoint when the clock reaches the pause's end", async () => {
    const { state, clock, failures, engine } = await failingEngine();
    state.failing = false;
    clock.set(clock.now() - 5_000);
    await turns(10);
    expect(engine.stats.checkpoints).toBe(0);
    clock.advance(5_999);
    await turns(10);
    expect(engine.stats.checkpoints, "before the pause's end").toBe(0);
    clock.advance(1);
    await turnsUntil(() => engine.stats.checkpoints > 0);
    expect(engine.stats.checkpoints).toBe(1);
    expect(failures.length).toBe(1);
    await engine.close();
  });

  it("failures that keep coming pause 1, 2, 4 and 8 s, each end looking once; the store's recovery ends in one checkpoint", async () => {
    const { state, clock, failures, engine } = await failingEngine();
    let pause = 1000;
    for (let round = 2; round <= 4; round++) {
      clock.advance(pause - 1);
      await turns(10);
      expect(failures.length, `round ${round}: still paused`).toBe(round - 1);
      clock.advance(1);
      await turnsUntil(() => failures.length >= round);
      expect(failures.length, `round ${round}: the end of the pause looked once`).toBe(round);
      pause *= 2;
    }
    state.failing = false;
    clock.advance(pause - 1);
    await turns(10);
    expect(engine.stats.checkpoints).toBe(0);
    clock.advance(1);
    await turnsUntil(() => engine.stats.checkpoints > 0);
    expect(engine.stats.checkpoints).toBe(1);
    expect(failures.length).toBe(4);
    await turns(10);
    expect(clock.pendingTimers).toBe(0);
    await engine.close();
  });

  it("a clock set far forward during the pause ends it at once, and a write after a success starts no look", async () => {
    const { state, clock, failures, engine } = await failingEngine();
    state.failing = false;
    clock.advance(1e12);
    await turnsUntil(() => engine.stats.checkpoints > 0);
    expect(engine.stats.checkpoints).toBe(1);
    await commitEach(engine, ["b/1"]);
    await turns(10);
    expect(clock.pendingTimers).toBe(0);
    expect(failures.length).toBe(1);
    await engine.close();
  });
});
