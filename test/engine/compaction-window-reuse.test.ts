/**
 * @module A compaction reading paged values back into windows it reuses:
 * over a store that reads into a caller's buffer, the windows of several
 * runs read by turns go back to a spare list and are read into again while
 * the compaction runs, none is kept from one compaction to the next, and
 * the segments written are the same bytes as a compaction of the values
 * held in memory; also when reads fail part way (having written into the
 * window) and are retried.
 */
import { describe, expect, it } from "vitest";
import { Engine, MemoryStore, WriteBatch, withFaults, type EngineOptions } from "taquba";
import { segmentDigests } from "../support/segment-digests.js";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (v: Uint8Array | undefined) => (v === undefined ? undefined : new TextDecoder().decode(v));
const N = 8000;
const key = (i: number) => `j/${String(i).padStart(5, "0")}`;
/** About 1 KiB per value, different in each round: 8,000 of them make runs of several windows each. */
const value = (i: number, round: number) => `${key(i)}:${round}:${"v".repeat(1000)}`;

/** A memory store that records the buffers segment reads were read into. */
class IntoLog extends MemoryStore {
  reads = 0;
  readonly buffers = new Set<ArrayBufferLike>();
  /** The buffers read into, by the number of checkpoints finished before the read. */
  readonly byCheckpoint = new Map<number, Set<ArrayBufferLike>>();
  checkpointsDone = 0;

  override async getRangeInto(k: string, offset: number, into: Uint8Array) {
    if (k.includes("seg/")) {
      this.reads++;
      this.buffers.add(into.buffer);
      let seen = this.byCheckpoint.get(this.checkpointsDone);
      if (seen === undefined) this.byCheckpoint.set(this.checkpointsDone, (seen = new Set()));
      seen.add(into.buffer);
    }
    return super.getRangeInto(k, offset, into);
  }
}

/** Checkpoints by hand; a compaction once four runs are listed; values under j/ paged. */
const options = (paged: boolean): EngineOptions => ({
  ...(paged ? { pageValues: { keyPrefixes: ["j/"], minBytes: 64, cacheBytes: 0 } } : {}),
  checkpointWalObjects: 0,
  checkpointWalBytes: 0,
  maxSegmentRuns: 4,
  segmentBlockBytes: 4096,
});

/**
 * Every key written, checkpointed, then three quarters of them rewritten a
 * quarter at a time, one checkpoint each: the runs hold every fourth key, so
 * the compaction that follows reads their windows by turns. Twice.
 */
async function fill(engine: Engine, log?: IntoLog): Promise<void> {
  const checkpoint = async () => {
    await engine.checkpoint();
    if (log !== undefined) log.checkpointsDone++;
  };
  for (let round = 0; round < 2; round++) {
    const all = new WriteBatch();
    for (let i = 0; i < N; i++) all.put(key(i), enc(value(i, 10 * round)));
    await engine.commit(all);
    await checkpoint();
    for (let part = 1; part <= 3; part++) {
      const b = new WriteBatch();
      for (let i = part; i < N; i += 4) b.put(key(i), enc(value(i, 10 * round + part)));
      await engine.commit(b);
      await checkpoint();
    }
    await engine.commit(new WriteBatch().put(`x/${round}`, enc("late")));
    await checkpoint();
  }
}

async function inMemoryDigests(): Promise<string[]> {
  const plain = new MemoryStore();
  const engine = await Engine.open(plain, options(false));
  await fill(engine);
  await engine.close();
  return segmentDigests(plain);
}

async function checkValues(engine: Engine): Promise<void> {
  for (const i of [0, 1, 2, 3, 4001, 7998, 7999]) {
    await engine.warm([key(i)]);
    const round = i % 4 === 0 ? 10 : 10 + (i % 4);
    expect(dec(engine.get(key(i)))).toBe(value(i, round));
  }
}

describe("compaction windows reused", () => {
  it("reads the runs' windows by turns into buffers it reuses within a compaction, keeps none for the next, and writes the same segments as with values in memory", async () => {
    const store = new IntoLog();
    const engine = await Engine.open(store, options(true));
    await fill(engine, store);
    expect(engine.stats.compactions).toBeGreaterThanOrEqual(3);
    // Reads went into buffers the reader reuses: far fewer buffers than reads.
    expect(store.reads).toBeGreaterThan(20);
    expect(store.buffers.size).toBeLessThan(store.reads / 2);
    // Each compaction read into buffers of its own: none was kept from an earlier one.
    const compactions = [...store.byCheckpoint.values()];
    expect(compactions.length).toBeGreaterThanOrEqual(2);
    let total = 0;
    for (const buffers of compactions) total += buffers.size;
    expect(store.buffers.size).toBe(total);
    expect(await segmentDigests(store)).toEqual(await inMemoryDigests());
    await checkValues(engine);
    await engine.close();
  }, 120_000);

  it("reads that fail part way, having written into the window, are retried into it: the segments are still the same bytes", async () => {
    const inner = new IntoLog();
    const store = withFaults(inner, { failureRate: 0.25, seed: 7, ops: ["get"] });
    const engine = await Engine.open(store, { ...options(true), retry: { attempts: 30, baseDelayMs: 0, maxDelayMs: 0 } });
    await fill(engine);
    expect(store.injected).toBeGreaterThan(5);
    expect(await segmentDigests(inner)).toEqual(await inMemoryDigests());
    await checkValues(engine);
    await engine.close();
  }, 120_000);
});
