/**
 * @module An automatic checkpoint that failed pauses the next ones (1 s,
 * doubling); the WAL it left uncovered is checkpointed once the pause ends,
 * whether or not a write lands after that: a writer gone idle, or one
 * whose last commits landed during the pause, would otherwise keep its
 * whole WAL (replayed at every open, held in memory) until its next write.
 * On a MockClock, with segment puts that fail until told otherwise.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, MockClock, WriteBatch, type EngineOptions } from "taquba";
import { InjectedFaultError } from "taquba/testing";
import { failWhen } from "../support/failing-store.js";
import { turns } from "../support/turns.js";

const enc = (s: string) => new TextEncoder().encode(s);
const retry = { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 };
/** A checkpoint every 2 WAL objects, no backlog bound. */
const opts: EngineOptions = { checkpointWalObjects: 2, checkpointWalBytes: 0, checkpointBacklog: 0, retry };
const isSegment = (key: string) => key.startsWith("seg/");

async function commitEach(engine: Engine, keys: string[]): Promise<void> {
  for (const k of keys) await engine.commit(new WriteBatch().put(k, enc(k)));
}

/** Lets the loop turn until `cond` holds, at most `limit` single turns. */
async function turnsUntil(cond: () => boolean, limit = 5000): Promise<void> {
  for (let i = 0; i < limit && !cond(); i++) await turns(1);
}

async function failingEngine() {
  const state = { failing: true };
  const inner = new MemoryStore();
  const store = failWhen(inner, (call, key) => (state.failing && call === "put" && isSegment(key) ? new InjectedFaultError("put", key, false) : undefined));
  const clock = new MockClock(1_000_000);
  const failures: unknown[] = [];
  const engine = await Engine.open(store, { ...opts, clock, onBackgroundError: (err) => failures.push(err) });
  return { state, inner, clock, failures, engine };
}

describe("the pause after a failed automatic checkpoint", () => {
  it("ends in a checkpoint of the WAL left uncovered, with no write after it", async () => {
    const { state, inner, clock, failures, engine } = await failingEngine();
    await commitEach(engine, ["a/1", "a/2"]);
    await turnsUntil(() => failures.length > 0);
    expect(failures.length).toBe(1);
    // A write during the pause starts nothing; then none comes.
    await commitEach(engine, ["a/3"]);
    state.failing = false;
    clock.advance(999);
    await turns();
    expect(engine.stats.checkpoints, "still paused").toBe(0);
    clock.advance(1);
    await turnsUntil(() => engine.stats.checkpoints > 0);
    expect(engine.stats.checkpoints, "the pause's end looked again").toBe(1);
    expect(engine.stats.walObjectsSinceCheckpoint).toBe(0);
    expect(failures.length).toBe(1);
    await engine.close();
    const reopened = await Engine.open(inner);
    expect([...reopened.scan({ prefix: "a/" })].map(([k]) => k)).toEqual(["a/1", "a/2", "a/3"]);
    await reopened.close();
  });

  it("that fails again waits twice as long, and looks once more at its end", async () => {
    const { state, clock, failures, engine } = await failingEngine();
    await commitEach(engine, ["b/1", "b/2"]);
    await turnsUntil(() => failures.length > 0);
    clock.advance(1000);
    // Still failing: the look at the pause's end fails too, and the next pause is 2 s.
    await turnsUntil(() => failures.length > 1);
    expect(failures.length).toBe(2);
    state.failing = false;
    clock.advance(1999);
    await turns();
    expect(engine.stats.checkpoints).toBe(0);
    clock.advance(1);
    await turnsUntil(() => engine.stats.checkpoints > 0);
    expect(engine.stats.checkpoints).toBe(1);
    expect(failures.length).toBe(2);
    await engine.close();
  });
});
