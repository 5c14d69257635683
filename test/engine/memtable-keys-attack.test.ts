/**
 * @module Attacks on `EngineOptions.memtableKeys`: absurd values refused
 * before any store request (and the bounds themselves accepted), and the
 * smallest memtable under a heavy, concurrent write load of puts, rewrites
 * and deletes, checkpointed and reopened under other sizes, read against a
 * model each time. Nothing stored depends on the size, so every reopen
 * reads the same.
 */
import { describe, expect, it } from "vitest";
import { openError } from "./fixtures/engine-open-error.js";
import { Engine, MemoryStore, ValidationError, WriteBatch } from "taquba";
import { firstDifference } from "../support/first-difference.js";
import { testRandom } from "../support/seed.js";

const text = new TextDecoder();

/** Every key under `k/` as `key=value`, in order. */
function contents(engine: Engine): string[] {
  return [...engine.scan({ prefix: "k/" })].map(([k, v]) => `${k}=${text.decode(v)}`);
}

function modelContents(model: Map<string, string>): string[] {
  return [...model.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${k}=${v}`);
}

describe("EngineOptions.memtableKeys, attacked", () => {
  it.each([
    ["1e30", 1e30],
    ["-Infinity", Number.NEGATIVE_INFINITY],
    ["2^53", 2 ** 53],
    ["null", null],
    ["true", true],
    ["a bigint", 4096n],
    ["a boxed number", Object(4096) as unknown],
    ["an array", [4096]],
    ["-0 below the minimum", -0],
    ["just below the minimum", 1_023.999],
  ])("refuses %s by name before any store request", async (_, value) => {
    const { err, requests } = await openError({ memtableKeys: value });
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toMatch(/memtableKeys must be a whole number >= 1024 and <= 4194304/);
    expect(requests).toBe(0);
  });

  it.each([1_024, 4_194_304])("accepts the bound %s and reads back what it wrote", async (memtableKeys) => {
    const engine = await Engine.open(new MemoryStore(), { memtableKeys });
    const batch = new WriteBatch();
    for (let i = 0; i < 2_000; i++) batch.put(`k/${i}`, new TextEncoder().encode(`v${i}`));
    await engine.commit(batch);
    expect(text.decode(engine.get("k/1999"))).toBe("v1999");
    expect(engine.stats.memtableFreezes).toBe(memtableKeys === 1_024 ? 1 : 0);
    await engine.close();
  });

  it("the smallest memtable under concurrent puts, rewrites and deletes, checkpointed and reopened under other sizes, reads as a model", async () => {
    const r = testRandom("memtableKeys heavy load");
    const encoder = new TextEncoder();
    const store = new MemoryStore();
    const model = new Map<string, string>();
    const sizes = [1_024, 1_024, 4_096, 1_024, 2_000_000, 1_024];
    let version = 0;
    for (const [round, memtableKeys] of sizes.entries()) {
      const engine = await Engine.open(store, { memtableKeys, checkpointWalObjects: 0, checkpointWalBytes: 0 });
      expect(firstDifference(contents(engine), modelContents(model))).toBeUndefined();
      // 24 committers at once, each batch of up to 64 puts and deletes over 6,000 keys.
      const commits: Promise<void>[] = [];
      for (let c = 0; c < 24; c++) {
        for (let b = 0; b < 10; b++) {
          const batch = new WriteBatch();
          const ops = 1 + r.int(64);
          for (let o = 0; o < ops; o++) {
            const key = `k/${String(r.int(6_000)).padStart(5, "0")}`;
            if (r.int(4) === 0) {
              batch.delete(key);
              model.delete(key);
            } else {
              const value = `${round}.${version++}`;
              batch.put(key, encoder.encode(value));
              model.set(key, value);
            }
          }
          // Batches apply in commit order, so the model's order (the call order) is the engine's.
          commits.push(engine.commit(batch));
        }
        if (c === 12) commits.push(engine.checkpoint());
      }
      await Promise.all(commits);
      expect(firstDifference(contents(engine), modelContents(model))).toBeUndefined();
      const asked = Array.from({ length: 200 }, () => `k/${String(r.int(6_200)).padStart(5, "0")}`);
      const got = asked.map((key) => {
        const value = engine.get(key);
        return [key, value === undefined ? undefined : text.decode(value)];
      });
      expect(
        firstDifference(
          got,
          asked.map((key) => [key, model.get(key)]),
        ),
      ).toBeUndefined();
      if (memtableKeys === 1_024) expect(engine.stats.memtableFreezes).toBeGreaterThan(0);
      // Every other round leaves its writes in the WAL only.
      if (round % 2 === 0) await engine.checkpoint();
      await engine.close();
    }
    const last = await Engine.open(store);
    expect(firstDifference(contents(last), modelContents(model))).toBeUndefined();
    await last.close();
  }, 120_000);
});
