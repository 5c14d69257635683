/**
 * @module Paged values read back through cached segment blocks (bytes,
 * positions per entry and a binary search over the keys' UTF-8 bytes, see
 * value-pager.ts) attacked with odd keys over a LocalStore: runs of U+0000,
 * U+00FF and U+FFFF, characters above U+FFFF (which UTF-16 order puts
 * before U+E000..U+FFFF and UTF-8 order after), keys that are prefixes of
 * others or differ only in their last byte, a 1 MB key, values of one byte
 * and of 3 MiB (blocks of one entry), with a cache so small that every read
 * misses, across checkpoints, compactions (which read paged values through
 * their own windows) and a reopen. Every key reads back its own value, and
 * a warm-up of keys some of which are cached settles in one round.
 */
import { describe, expect, it } from "vitest";
import { Engine, LocalStore, WriteBatch, type EngineOptions } from "taquba";
import { useTempDirs } from "../support/temp-dirs.js";

const tempDir = useTempDirs("cache-keys-");

/** The key suffixes: each a case the byte search must order as `compareKeys` does. */
const SUFFIXES = [
  "",
  "\u0000",
  "\u0000\u0000\u0000",
  "\u0000\u0001",
  "\u007f",
  "\u0080",
  "\u00ff",
  "\u00ff\u00ff\u00ff\u00ff",
  "\u00ff\u0000",
  "\ud7ff",
  "\ue000",
  "\uffff",
  "\uffff\uffff",
  "\u{10000}",
  "\u{10000}\u0000",
  "\u{1F600}",
  "\u{10FFFF}",
  "\u{10FFFF}\u{10FFFF}",
  "a",
  "a\u0000",
  "a\u0001",
  "a\u00ff",
  "a\uffff",
  "a\u{10000}",
  "ab",
  "aa",
];

const enc = (s: string) => new TextEncoder().encode(s);

/** A value that names its key and round, `extra` bytes longer (repeated filler). */
function namedValue(key: string, round: number, extra = 0): Uint8Array {
  const head = enc(`${round}:${key.length}:${key.slice(-4)}`);
  const out = new Uint8Array(head.length + extra);
  out.set(head);
  out.fill(round + 1, head.length);
  return out;
}

/** Whether `got` holds `want`'s bytes (compared as buffers: a deep equality of 3 MiB element by element takes minutes). */
function same(got: Uint8Array | undefined, want: Uint8Array): boolean {
  return got !== undefined && Buffer.compare(got, want) === 0;
}

/** Warms `keys` as a transaction does; the rounds it took (at most 20: a warm-up that never settles fails). */
async function warmAll(engine: Engine, keys: string[]): Promise<number> {
  let rounds = 0;
  for (let p = engine.warm(keys); p !== undefined; p = engine.warm(keys)) {
    if (++rounds > 20) throw new Error(`a warm-up of ${keys.length} keys did not settle in 20 rounds`);
    await p;
  }
  return rounds;
}

/** Reads every key one warm-up at a time (each a miss with no cache) and compares with the model. */
async function expectModel(engine: Engine, model: Map<string, Uint8Array>): Promise<void> {
  for (const [key, want] of model) {
    await warmAll(engine, [key]);
    expect(same(engine.get(key), want), `key of ${key.length} chars ending ${JSON.stringify(key.slice(-4))}`).toBe(true);
  }
}

describe("paged values under odd keys, read through a cache that always misses", () => {
  it("every key reads its own value across checkpoints, compactions and a reopen", { timeout: 60_000 }, async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const opts: EngineOptions = {
      pageValues: { keyPrefixes: ["j/"], minBytes: 1, cacheBytes: 0 },
      checkpointWalObjects: 0,
      segmentBlockBytes: 256,
      maxSegmentBytes: 4096,
      maxSegmentRuns: 2,
    };
    const keys = SUFFIXES.map((s) => `j/${s}`);
    const longKey = `j/${"\u00e9".repeat(500_000)}`;
    const longTwin = `${longKey.slice(0, -1)}\u00ea`;
    keys.push(longKey, longTwin);
    const model = new Map<string, Uint8Array>();
    let engine = await Engine.open(store, opts);
    for (let round = 0; round < 4; round++) {
      const b = new WriteBatch();
      for (const [i, k] of keys.entries()) {
        // Each round rewrites a different share of the keys, so runs overlap and compactions merge them.
        if (round > 0 && (i + round) % 3 !== 0) continue;
        const big = i === 7 && round === 1 ? 3 * 1024 * 1024 : (i * 37 + round * 11) % 300;
        const v = namedValue(k, round, big);
        b.put(k, v);
        model.set(k, v);
      }
      await engine.commit(b);
      await engine.checkpoint();
      await expectModel(engine, model);
    }
    const stats = engine.stats;
    expect(stats.compactions).toBeGreaterThan(0);
    await engine.close();
    engine = await Engine.open(store, opts);
    try {
      await expectModel(engine, model);
      // All at once too, after the reads above left some blocks cached: one round, every read in its turn.
      expect(await warmAll(engine, [...model.keys()])).toBe(1);
      for (const [k, v] of model) expect(same(engine.get(k), v)).toBe(true);
    } finally {
      await engine.close();
    }
  });

  it("a warm-up of two keys, one of them cached, settles in one round with no cache: the cached block is pinned too", async () => {
    const dir = await tempDir();
    const engine = await Engine.open(new LocalStore(dir), {
      pageValues: { keyPrefixes: ["j/"], minBytes: 1, cacheBytes: 0 },
      checkpointWalObjects: 0,
      segmentBlockBytes: 256,
    });
    try {
      const a = namedValue("j/a", 0, 300);
      const b = namedValue("j/b", 0, 300);
      await engine.commit(new WriteBatch().put("j/a", a).put("j/b", b));
      await engine.checkpoint();
      // "j/a" cached (unpinned once a turn passes, but a trim has not run yet), "j/b" cold.
      expect(await warmAll(engine, ["j/a"])).toBe(1);
      expect(await warmAll(engine, ["j/a", "j/b"])).toBe(1);
      expect(same(engine.get("j/a"), a)).toBe(true);
      expect(same(engine.get("j/b"), b)).toBe(true);
    } finally {
      await engine.close();
    }
  });
});
